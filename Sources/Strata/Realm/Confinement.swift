// Confinement: where a realm may be used. A realm belongs to the thread that opened it, to
// a serial queue, to the task that opened it (valid across awaits, whichever thread the
// task resumes on), or to an actor. Frozen realms belong to no one: they never change, and
// `Frozen` serializes access to them.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import CStrataSupport

/// The thread, queue, task or actor a realm belongs to.
enum Confinement {
    case thread(pthread_t)
    case queue(DispatchQueue, QueueIdentity)
    case task(TaskIdentity)
    case actor(ActorIdentity)
    /// A frozen realm: readable anywhere, one reader at a time (see `FrozenBox`).
    case frozen

    /// Identifies a queue through `DispatchQueue.setSpecific`.
    final class QueueIdentity: Sendable {}
    static let queueKey = DispatchSpecificKey<QueueIdentity>()

    /// A task, held so that its address cannot be reused by another task while a realm
    /// confined to it exists. (`UnsafeCurrentTask` holds a strong reference to the task;
    /// it is only compared, never used to act on the task.)
    final class TaskIdentity {
        let task: UnsafeCurrentTask
        /// The task's address, compared with the runtime's current task (nothing retained).
        private let address: UnsafeRawPointer
        init(_ task: UnsafeCurrentTask) {
            self.task = task
            address = unsafeBitCast(task, to: UnsafeRawPointer.self)
        }

        /// Whether the caller runs in the task.
        var isCurrent: Bool {
            if strata_can_read_current_task() != 0 { return strata_current_task() == address }
            return withUnsafeCurrentTask { $0 == task }
        }
    }

    /// An actor, held weakly (an actor usually keeps its realm: a strong reference would be
    /// a cycle), with its executor for the isolation check.
    final class ActorIdentity {
        weak var actor: (any Actor)?
        let executor: UnownedSerialExecutor
        init(_ actor: any Actor) {
            self.actor = actor
            executor = actor.unownedExecutor
        }

        /// Whether the caller is isolated to the actor.
        var isCurrent: Bool {
            let parts = unsafeBitCast(executor, to: (UnsafeRawPointer?, UInt).self)
            switch strata_is_current_executor(parts.0, parts.1) {
            case 1: return actor != nil
            case 0: return false
            default:
                // A runtime older than Swift 6.2 cannot answer without trapping: trap here
                // with the actor's own message rather than answer wrongly.
                guard let actor else { return false }
                actor.preconditionIsolated("Realm accessed from incorrect actor")
                return true
            }
        }
    }

    /// The confinement of a realm opened now by code isolated to `isolation`: the actor;
    /// the main thread for the main actor; else the current task; else the current thread.
    static func current(isolation: (any Actor)?) -> Confinement {
        if let isolation {
            // The main actor runs on the main thread, which is what we are on now.
            if isolation === MainActor.shared as AnyObject { return .thread(pthread_self()) }
            return .actor(ActorIdentity(isolation))
        }
        if let task = withUnsafeCurrentTask(body: { $0 }) { return .task(TaskIdentity(task)) }
        return .thread(pthread_self())
    }

    /// Confinement to `queue`; the caller must be running on it.
    static func queue(_ queue: DispatchQueue) -> Confinement? {
        if let identity = queue.getSpecific(key: queueKey) {
            return DispatchQueue.getSpecific(key: queueKey) === identity ? .queue(queue, identity) : nil
        }
        let identity = QueueIdentity()
        queue.setSpecific(key: queueKey, value: identity)
        guard DispatchQueue.getSpecific(key: queueKey) === identity else { return nil }
        return .queue(queue, identity)
    }

    /// Whether the caller runs where the realm belongs.
    var isCurrent: Bool {
        switch self {
        case .thread(let owner): return pthread_equal(owner, pthread_self()) != 0
        case .queue(_, let identity): return DispatchQueue.getSpecific(key: Confinement.queueKey) === identity
        case .task(let identity): return identity.isCurrent
        case .actor(let identity): return identity.isCurrent
        case .frozen: return true
        }
    }

    var dispatchQueue: DispatchQueue? {
        if case .queue(let queue, _) = self { return queue }
        return nil
    }

    /// What a realm is confined to, in words (for errors and docs).
    var description: String {
        switch self {
        case .thread: return "thread"
        case .queue: return "queue"
        case .task: return "task"
        case .actor: return "actor"
        case .frozen: return "frozen"
        }
    }
}
