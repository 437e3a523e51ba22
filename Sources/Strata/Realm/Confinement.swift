// Confinement: a realm belongs to the thread that opened it, or to a serial queue.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// The thread or queue a realm belongs to.
enum Confinement {
    case thread(pthread_t)
    case queue(DispatchQueue, QueueIdentity)

    /// Identifies a queue through `DispatchQueue.setSpecific`.
    final class QueueIdentity: Sendable {}
    static let queueKey = DispatchSpecificKey<QueueIdentity>()

    static func current() -> Confinement { .thread(pthread_self()) }

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
        }
    }

    var dispatchQueue: DispatchQueue? {
        if case .queue(let queue, _) = self { return queue }
        return nil
    }
}
