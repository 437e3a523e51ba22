// Writing in turns (StoreOptions.multiProcessWriting): several processes write one store,
// one write transaction at a time.
//
// Between transactions such a store is a follower (Store+Follow.swift): it holds no writer
// lock and reads what others commit. A write transaction takes the writer lock (`LOCK`)
// by opening the store as its writer — the same open a single writer does, so a tail torn
// by a writer killed mid-transaction is repaired exactly as at any open — appends through
// that writer, and closes it: sync, clean-shutdown marker, lock released. The follower
// then reads its own commit like anyone else's (its change set went to the commit
// observer already, at commit, so it is not reported twice).
//
// Why a whole open and close per turn rather than a writer that stays open and catches up:
// the open and close are the code paths every crash sweep and every kill test exercises;
// a writer that caught up in place would have to re-derive, from another process's log,
// every piece of writer state (the active segment's hint, space accounting, file numbers,
// the manifest, pending seals and compactions) that the open already derives. The cost is
// an open and a close per transaction (docs/benchmarks.md); a store that one process
// writes keeps the default, a writer from open to close.

import Foundation

extension Store {
    /// The options of the writer a turn opens: nothing runs in the background past the
    /// turn (no syncer, no automatic compaction), and only the open that creates the shared
    /// store may compact (``StoreOptions/shouldCompactOnOpen``). `.full`, though nobody
    /// waits for a commit's sync (the close syncs): `.full` is what keeps `HEAD` from
    /// publishing a commit to other processes before it is synced.
    static func turnOptions(_ options: StoreOptions, atOpen: Bool) -> StoreOptions {
        var writer = options
        writer.readOnly = false
        writer.multiProcessWriting = false
        writer.durability = .full
        writer.autoCompaction = .disabled
        writer.checksImageInBackground = false
        if !atOpen { writer.shouldCompactOnOpen = nil }
        return writer
    }

    /// The writer of one turn, its open holding the writer lock: brings this follower to the
    /// state that writer starts from (reporting what other processes committed since) and
    /// gives it the commit observer. Outer gate held.
    private func openTurn(_ writer: Store) throws -> Store {
        writer.commitObserver = commitObserver
        do {
            _ = try followHoldingGate(to: Beacon.State(segment: writer.activeID, end: writer.activeSize,
                                                       sequence: writer.lastAppendedSequence))
            return writer
        } catch {
            try? writer.close()
            throw error
        }
    }

    /// A write transaction in turns (``StoreOptions/multiProcessWriting``); outer gate held,
    /// released on failure.
    func transactionInTurn() throws -> Transaction {
        let writer: Store
        do {
            writer = try waitForTurn()
        } catch {
            releaseGate()
            throw error
        }
        return try startTurn(writer)
    }

    /// Waits (blocking the thread) for the writer lock, fairly, up to
    /// ``StoreOptions/lockWaitTimeout``; returns the turn's writer. Outer gate held.
    private func waitForTurn() throws -> Store {
        var turn = TurnRequest(store: self)
        while let pause = try turn.attempt() { usleep(pause) }
        return try openTurn(turn.writer!)
    }

    /// As ``transactionInTurn()``, waiting for the writer lock as a suspended task — without
    /// the gate: a task must never hold it across a suspension (threads blocked in a
    /// synchronous `write` would wait for a task that cannot be scheduled).
    func transactionInTurnAsync() async throws -> Transaction {
        var turn = TurnRequest(store: self)
        while true {
            let pause: UInt32?
            do {
                pause = try turn.attempt()
            } catch {
                releaseGate()
                throw error
            }
            guard let pause else { break }
            releaseGate()
            try await Task.sleep(nanoseconds: UInt64(pause) * 1_000)
            try await acquireGateAsync()
        }
        let writer: Store
        do {
            writer = try openTurn(turn.writer!)
        } catch {
            releaseGate()
            throw error
        }
        return try startTurn(writer)
    }

    private func startTurn(_ writer: Store) throws -> Transaction {
        do {
            let transaction = try writer.beginTransaction()
            transaction.endOfTurn = { [self] in try endTurn(writer) }
            return transaction
        } catch {
            try? writer.close()
            releaseGate()
            throw error
        }
    }

    /// After the turn's transaction committed or rolled back: closes the writer (sync,
    /// clean state, lock released) and reads the commit as a follower — to the state that
    /// writer closed at, whatever another process's writer is doing by then — without
    /// reporting it again. A close that fails (its sync) takes this store out of service for
    /// writes, as a failed sync does any writer. Releases the outer gate.
    private func endTurn(_ writer: Store) throws {
        defer { releaseGate() }
        let closedAt = Beacon.State(segment: writer.activeID, end: writer.activeSize, sequence: writer.lastAppendedSequence)
        do {
            try writer.close()
        } catch {
            if let failed = error as? StoreError { poison(failed) }
            _ = try? followHoldingGate()
            throw error
        }
        reportedThrough = max(reportedThrough, closedAt.sequence)
        _ = try followHoldingGate(to: closedAt)
    }

    /// ``compact()`` of a store written in turns: the turn's writer compacts, holding the
    /// writer lock throughout; then this follower reads the compacted store.
    func compactInTurn() throws -> CompactionReport {
        try acquireGate()
        defer { releaseGate() }
        let writer = try waitForTurn()
        let report: CompactionReport
        do {
            report = try writer.compact()
        } catch {
            try? writer.close()
            throw error
        }
        let closedAt = Beacon.State(segment: writer.activeID, end: writer.activeSize, sequence: writer.lastAppendedSequence)
        try writer.close()
        _ = try followHoldingGate(to: closedAt)
        return report
    }
}

/// One process's wait for the writer lock of a store written in turns, made fair: a process
/// that ends a turn and begins the next at once would otherwise take the lock again before
/// a waiting process, polling, ever saw it free. A waiter holds `WAITERS` shared while it
/// waits; a process about to take a turn first lets such waiters go (up to
/// ``maxYield`` seconds), and waits itself by polling every few hundred microseconds.
struct TurnRequest {
    /// Other processes' waiting files (`WAITERS`, flock shared while waiting).
    static let waitersFileName = "WAITERS"
    /// The longest a process defers to waiters before it takes its turn.
    static let maxYield = 0.02

    let store: Store
    let deadline: Double
    private let yieldUntil: Double
    private var waiting: (any FileLock)?
    private var pause: UInt32 = 100
    /// The turn's writer, once its open took the lock.
    private(set) var writer: Store?

    init(store: Store) {
        self.store = store
        let now = monotonicSeconds()
        deadline = now + max(0, store.options.lockWaitTimeout)
        yieldUntil = now + TurnRequest.maxYield
    }

    /// Tries once: nil when ``writer`` holds the lock, else how many microseconds to wait
    /// before trying again.
    ///
    /// - Throws: ``StoreError/locked(_:)`` past ``StoreOptions/lockWaitTimeout``; what the
    ///   writer's open throws.
    mutating func attempt() throws -> UInt32? {
        if let refused = store.syncMonitor.withLock({ store.closed ? StoreError.closed : store.failure }) { throw refused }
        let fs = store.fileSystem
        let waitersPath = store.path + "/" + TurnRequest.waitersFileName
        if waiting == nil, monotonicSeconds() < yieldUntil, othersWait(waitersPath, fs) {
            return 200   // another process waits for its turn: let it go first
        }
        var options = Store.turnOptions(store.options, atOpen: false)
        options.lockWaitTimeout = 0
        do {
            writer = try Store(directory: store.directory, options: options)
            waiting?.unlock()
            waiting = nil
            return nil
        } catch StoreError.locked(let lockPath) {
            guard monotonicSeconds() < deadline else {
                waiting?.unlock()
                waiting = nil
                throw StoreError.locked(lockPath)
            }
            if waiting == nil { waiting = try? fs.lock(waitersPath, shared: true) }
            defer { pause = min(pause * 2, 2_000) }
            return pause
        } catch {
            waiting?.unlock()
            waiting = nil
            throw error
        }
    }

    /// Whether anyone holds `WAITERS` (shared): a probe for the exclusive lock fails then.
    private func othersWait(_ path: String, _ fs: any FileSystem) -> Bool {
        do {
            try fs.lock(path, shared: false).unlock()
            return false
        } catch StoreError.locked {
            return true
        } catch {
            return false
        }
    }
}

