// Group commit and syncing. With `.full` durability a committer appends under the write
// gate, releases it, and then waits here until some `fdatasync` that started after its
// append has finished. The first waiter to find no sync running becomes the leader and
// syncs for everyone appended so far; the rest wait for it. Synced states are published
// to readers in sequence order.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Store {
    /// Returns once `sequence` is on stable storage and published.
    package func waitDurable(_ sequence: UInt64) throws {
        syncMonitor.lock()
        defer { syncMonitor.unlock() }
        while true {
            if let failure { throw failure }
            if syncedSequence >= sequence { return }
            if closed { throw StoreError.closed }
            if syncInProgress {
                syncMonitor.wait()
            } else {
                try leadSync()
            }
        }
    }

    /// Returns once `sequence` is on stable storage and published, waiting as a suspended
    /// task: no thread of the cooperative pool blocks. The sync that covers it is led by a
    /// synchronous committer or by the store's async syncer thread, started on demand.
    package func waitDurableAsync(_ sequence: UInt64) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            syncMonitor.lock()
            if let failure {
                syncMonitor.unlock()
                continuation.resume(throwing: failure)
            } else if syncedSequence >= sequence {
                syncMonitor.unlock()
                continuation.resume()
            } else if closed {
                syncMonitor.unlock()
                continuation.resume(throwing: StoreError.closed)
            } else {
                durableWaiters.append((sequence, continuation))
                let start = !asyncSyncerRunning
                asyncSyncerRunning = true
                syncMonitor.broadcast()
                syncMonitor.unlock()
                if start { startAsyncSyncer() }
            }
        }
    }

    /// The thread that leads syncs for tasks waiting in `waitDurableAsync`: while any
    /// wait, it syncs everything appended so far (committers appending meanwhile share the
    /// next sync). It exits after a second with no waiter.
    private func startAsyncSyncer() {
        let started = startThread { [weak self] in
            while let store = self {
                let target: UInt64? = store.syncMonitor.withLock {
                    if store.durableWaiters.isEmpty, store.failure == nil, !store.closed {
                        store.syncMonitor.wait(seconds: 1)
                    }
                    guard let newest = store.durableWaiters.map(\.sequence).max() else {
                        store.asyncSyncerRunning = false
                        return nil
                    }
                    return newest
                }
                guard let target else { return }
                do {
                    try store.waitDurable(target)
                } catch {
                    store.syncMonitor.withLock {
                        store.resumeDurableWaitersLocked(failure: error)
                        store.asyncSyncerRunning = false
                    }
                    return
                }
            }
        }
        if !started {
            syncMonitor.withLock {
                asyncSyncerRunning = false
                resumeDurableWaitersLocked(failure: StoreError.io(op: "pthread_create", path: path, errno: EAGAIN))
            }
        }
    }

    /// Resumes the async waiters whose commits are now durable — or, after a failure,
    /// every waiter with the error. Called with `syncMonitor` held.
    func resumeDurableWaitersLocked(failure error: (any Error)? = nil) {
        guard !durableWaiters.isEmpty else { return }
        if let error = error ?? failure ?? (closed ? StoreError.closed : nil) {
            let waiters = durableWaiters
            durableWaiters = []
            for waiter in waiters {
                // A commit already covered by a finished sync did succeed.
                if waiter.sequence <= syncedSequence { waiter.continuation.resume() } else { waiter.continuation.resume(throwing: error) }
            }
            return
        }
        durableWaiters.removeAll { waiter in
            guard waiter.sequence <= syncedSequence else { return false }
            waiter.continuation.resume()
            return true
        }
    }

    /// Performs one sync for everything appended so far. Called with `syncMonitor` held;
    /// releases it during the sync itself.
    private func leadSync() throws {
        syncInProgress = true
        let target = appendedSequence, end = appendedEnd
        guard let file = appendedFile else {
            syncInProgress = false
            return
        }
        syncMonitor.unlock()
        var syncError: StoreError?
        let started = monotonicSeconds()
        do {
            try file.syncData()
            let seconds = monotonicSeconds() - started
            if seconds > options.slowSyncThreshold, let logger = options.logger {
                logger.warning("a sync took \(String(format: "%.3f", seconds)) s (commits up to sequence \(target) waited for it)", metadata: ["store": "\(path)"])
            }
        } catch let error as StoreError {
            syncError = error
        } catch {
            syncError = .io(op: "fdatasync", path: file.path, errno: 5)
        }
        syncMonitor.lock()
        syncInProgress = false
        if let syncError {
            // After a failed fdatasync the kernel may have dropped the dirty pages: the only
            // safe course is to stop (as PostgreSQL does) and let recovery decide on reopen.
            if failure == nil { failure = syncError }
            resumeDurableWaitersLocked()
            syncMonitor.broadcast()
            throw syncError
        }
        markDurableLocked(sequence: target, end: end)
        syncMonitor.broadcast()
    }

    /// Records that everything up to `sequence` is durable and publishes it.
    func markDurable(sequence: UInt64, end: (segment: UInt32, end: Int)) {
        syncMonitor.withLock {
            markDurableLocked(sequence: sequence, end: end)
            syncMonitor.broadcast()
        }
    }

    private func markDurableLocked(sequence: UInt64, end: (segment: UInt32, end: Int)) {
        if sequence >= syncedSequence {
            syncedSequence = sequence
            syncedEnd = end
            beacon?.publish(Beacon.State(segment: end.segment, end: end.end, sequence: sequence))
        }
        var newest: PublishedState?
        while let first = pendingPublish.first, first.sequence <= sequence {
            newest = first.state
            pendingPublish.removeFirst()
        }
        if let newest {
            publishedLock.withLock { $0 = newest }
        }
        resumeDurableWaitersLocked()
    }

    /// Takes the store out of service for writes after an unrecoverable I/O failure.
    func poison(_ error: StoreError) {
        syncMonitor.withLock {
            if failure == nil { failure = error }
            resumeDurableWaitersLocked()
            syncMonitor.broadcast()
        }
    }

    /// `.normal` durability: a background thread syncs every `syncInterval`.
    func startBackgroundSyncer() {
        let interval = options.syncInterval
        startThread { [weak self] in
            while let store = self {
                let keepGoing: Bool = store.syncMonitor.withLock {
                    if store.closed || store.failure != nil { return false }
                    store.syncMonitor.wait(seconds: interval)
                    return !store.closed
                }
                guard keepGoing else { return }
                let target = store.syncMonitor.withLock { store.appendedSequence }
                try? store.waitDurable(target)
            }
        }
    }
}
