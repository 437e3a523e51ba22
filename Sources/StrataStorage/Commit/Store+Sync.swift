// Group commit and syncing. With `.full` durability a committer appends under the write
// gate, releases it, and then waits here until some `fdatasync` that started after its
// append has finished. The first waiter to find no sync running becomes the leader and
// syncs for everyone appended so far; the rest wait for it. Synced states are published
// to readers in sequence order.

extension Store {
    /// Returns once `sequence` is on stable storage and published.
    func waitDurable(_ sequence: UInt64) throws {
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
        do {
            try file.sync()
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
        }
        var newest: PublishedState?
        while let first = pendingPublish.first, first.sequence <= sequence {
            newest = first.state
            pendingPublish.removeFirst()
        }
        if let newest {
            publishedLock.withLock { $0 = newest }
        }
    }

    /// Takes the store out of service for writes after an unrecoverable I/O failure.
    func poison(_ error: StoreError) {
        syncMonitor.withLock {
            if failure == nil { failure = error }
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
