// Realm Swift's asynchronous write API (`writeAsync`, `beginAsyncWrite`, `commitAsyncWrite`,
// `cancelAsyncWrite`). A block is queued on what the realm belongs to — its serial queue,
// the main queue for a main-thread realm, its actor — and runs there in a write; swift code
// that can `await` should prefer `asyncWrite`, which suspends instead of queueing. A realm
// with nothing to queue on (another thread, a task) runs the block at once: the same
// writes, in the same order, without the deferral.

import Foundation

/// Identifies an asynchronous write or commit (Realm Swift's `AsyncTransactionId`).
public typealias AsyncTransactionId = UInt32

/// The asynchronous writes of one realm not yet begun (only touched where the realm belongs).
final class AsyncWriteQueue {
    private var nextID: AsyncTransactionId = 1
    private(set) var pending: Set<AsyncTransactionId> = []
    /// Completion callbacks of commits that may still be cancelled.
    private(set) var completions: Set<AsyncTransactionId> = []

    func enqueue() -> AsyncTransactionId {
        defer { nextID &+= 1 }
        pending.insert(nextID)
        return nextID
    }

    func enqueueCompletion() -> AsyncTransactionId {
        defer { nextID &+= 1 }
        completions.insert(nextID)
        return nextID
    }

    /// Whether `id` is still queued (and takes it off the queue).
    func take(_ id: AsyncTransactionId) -> Bool { pending.remove(id) != nil }
    func takeCompletion(_ id: AsyncTransactionId) -> Bool { completions.remove(id) != nil }

    /// Cancels `id`, a queued write or a completion not yet called; false if it is neither.
    func cancel(_ id: AsyncTransactionId) -> Bool { pending.remove(id) != nil || completions.remove(id) != nil }
}

extension Realm {
    /// Runs `block` in a write transaction later, where the realm belongs, commits it and
    /// calls `onComplete` there with nil or the commit's error (Realm Swift's `writeAsync`).
    ///
    /// ```swift
    /// realm.writeAsync {
    ///     realm.create(Dog.self, value: ["name": "Rex"])
    /// } onComplete: { error in
    ///     if let error { print("not saved:", error) }
    /// }
    /// ```
    ///
    /// Queued writes run in order. If a write is open when one is due, it waits for the next
    /// turn (a realm that runs blocks at once adds it to the open write instead).
    @discardableResult
    public func writeAsync(_ block: @escaping () -> Void, onComplete: ((Swift.Error?) -> Void)? = nil) -> AsyncTransactionId {
        enqueueWrite(failure: { error in onComplete?(error) }) { [unowned self] joined in
            block()
            if joined {
                onComplete?(nil)  // (the open write it joined commits it)
            } else if isInWriteTransaction {  // (else the block committed or cancelled it)
                commitAsyncWrite(onComplete)
            }
        }
    }

    /// Begins a write transaction later, where the realm belongs, and calls `asyncWriteBlock`
    /// inside it; the block ends it with ``commitAsyncWrite(allowGrouping:_:)``,
    /// `commitWrite()` or `cancelWrite()` (Realm Swift's `beginAsyncWrite`). Traps for a
    /// frozen or read-only realm, as Realm raises.
    @discardableResult
    public func beginAsyncWrite(_ asyncWriteBlock: @escaping () -> Void) -> AsyncTransactionId {
        enqueueWrite(failure: { error in preconditionFailure("beginAsyncWrite: \(error)") }) { _ in asyncWriteBlock() }
    }

    /// Commits the open write now and calls `onComplete` later, where the realm belongs,
    /// with nil or the commit's error (Realm Swift's `commitAsyncWrite`; grouping is what
    /// Strata's group commit does anyway). Traps outside a write, as Realm raises.
    @discardableResult
    public func commitAsyncWrite(allowGrouping: Bool = false, _ onComplete: ((Swift.Error?) -> Void)? = nil) -> AsyncTransactionId {
        verifyThread()
        precondition(isInWriteTransaction, "commitAsyncWrite: not in a write transaction")
        let id = asyncWrites.enqueueCompletion()
        var failure: (any Swift.Error)?
        do { try commitWrite() } catch { failure = error }
        let error = failure
        let complete = { [weak self] in
            guard let self, asyncWrites.takeCompletion(id) else { return }
            onComplete?(error)
        }
        if !scheduleHere(complete) { complete() }
        return id
    }

    /// Cancels a queued write (it never runs) or a commit's completion (the commit stands;
    /// its callback is not called). An identifier that is neither is an error.
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` naming the identifier.
    public func cancelAsyncWrite(_ asyncTransactionId: AsyncTransactionId) throws {
        try checkThread()
        guard asyncWrites.cancel(asyncTransactionId) else {
            throw RealmError.invalidValue("cancelAsyncWrite: \(asyncTransactionId) is not a queued asynchronous write or commit")
        }
    }

    /// Whether asynchronous writes or commit callbacks are queued.
    public var isPerformingAsynchronousWriteOperations: Bool {
        !asyncWrites.pending.isEmpty || !asyncWrites.completions.isEmpty
    }

    /// Queues `body` to run in a write where the realm belongs; `failure` gets an error
    /// beginning it. `body` is told whether it joined a write already open.
    private func enqueueWrite(failure: @escaping (any Swift.Error) -> Void, _ body: @escaping (_ joined: Bool) -> Void) -> AsyncTransactionId {
        verifyThread()
        let id = asyncWrites.enqueue()
        if !scheduleHere({ self.runQueued(id, failure: failure, body) }) { runQueued(id, failure: failure, body) }
        return id
    }

    private func runQueued(_ id: AsyncTransactionId, failure: @escaping (any Swift.Error) -> Void, _ body: @escaping (_ joined: Bool) -> Void) {
        guard !isClosed, asyncWrites.pending.contains(id) else { return }
        if isInWriteTransaction {
            // Another write is open: wait for the next turn, or, with nothing to queue on,
            // join it.
            if scheduleHere({ self.runQueued(id, failure: failure, body) }) { return }
            _ = asyncWrites.take(id)
            return body(true)
        }
        _ = asyncWrites.take(id)
        do {
            try beginWrite()
        } catch {
            return failure(error)
        }
        body(false)
    }

    /// Queues `work` on what this realm belongs to; false when there is nothing to queue on
    /// (a thread other than the main one, a task), and nothing was queued. Called where the
    /// realm belongs.
    @discardableResult
    func scheduleHere(_ work: @escaping () -> Void) -> Bool {
        let scheduled = ScheduledWork(work)
        switch confinement {
        case .queue(let queue, _):
            queue.async { scheduled.work() }
        case .thread where Thread.isMainThread:
            DispatchQueue.main.async { scheduled.work() }
        case .actor(let identity):
            guard let actor = identity.actor else { return false }
            Task { await scheduled.run(on: actor) }
        default:
            return false
        }
        return true
    }
}

/// Work queued where a realm belongs; only ever run there.
private final class ScheduledWork: @unchecked Sendable {
    let work: () -> Void
    init(_ work: @escaping () -> Void) { self.work = work }
    func run(on actor: isolated any Actor) { work() }
}
