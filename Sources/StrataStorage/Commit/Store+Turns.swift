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
    /// turn (no syncer — the close syncs — no automatic compaction), and only the open that
    /// creates the shared store may compact (``StoreOptions/shouldCompactOnOpen``).
    static func turnOptions(_ options: StoreOptions, atOpen: Bool) -> StoreOptions {
        var writer = options
        writer.readOnly = false
        writer.multiProcessWriting = false
        writer.durability = .none
        writer.autoCompaction = .disabled
        if !atOpen { writer.shouldCompactOnOpen = nil }
        return writer
    }

    /// The writer for one turn; outer gate held. Waits for the writer lock like a writer's
    /// open (``StoreOptions/lockWaitTimeout``), then brings this follower to the state the
    /// writer starts from, reporting what other processes committed since.
    private func openTurn(_ writer: Store) throws -> Store {
        writer.commitObserver = commitObserver
        do {
            _ = try followHoldingGate(quietThrough: 0)
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
            if syncMonitor.withLock({ closed }) { throw StoreError.closed }
            writer = try openTurn(Store(directory: directory, options: Store.turnOptions(options, atOpen: false)))
        } catch {
            releaseGate()
            throw error
        }
        return try startTurn(writer)
    }

    /// As ``transactionInTurn()``, waiting for the writer lock as a suspended task.
    func transactionInTurnAsync() async throws -> Transaction {
        let writer: Store
        do {
            if syncMonitor.withLock({ closed }) { throw StoreError.closed }
            var turn = Store.turnOptions(options, atOpen: false)
            turn.lockWaitTimeout = 0
            let deadline = monotonicSeconds() + max(0, options.lockWaitTimeout)
            var pause: UInt64 = 1_000_000
            while true {
                do {
                    writer = try openTurn(Store(directory: directory, options: turn))
                    break
                } catch StoreError.locked(let lockPath) {
                    guard monotonicSeconds() < deadline else { throw StoreError.locked(lockPath) }
                    try await Task.sleep(nanoseconds: pause)
                    pause = min(pause * 2, 50_000_000)
                }
            }
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
    /// clean state, lock released) and reads the commit as a follower, without reporting it
    /// again. Releases the outer gate.
    private func endTurn(_ writer: Store) throws {
        defer { releaseGate() }
        let own = writer.lastAppendedSequence
        var failure: (any Error)?
        do { try writer.close() } catch { failure = error }
        do { _ = try followHoldingGate(quietThrough: own) } catch { failure = failure ?? error }
        if let failure { throw failure }
    }

    /// ``compact()`` of a store written in turns: the turn's writer compacts, holding the
    /// writer lock throughout; then this follower reads the compacted store.
    func compactInTurn() throws -> CompactionReport {
        try acquireGate()
        defer { releaseGate() }
        if syncMonitor.withLock({ closed }) { throw StoreError.closed }
        let writer = try openTurn(Store(directory: directory, options: Store.turnOptions(options, atOpen: false)))
        let report: CompactionReport
        do {
            report = try writer.compact()
        } catch {
            try? writer.close()
            throw error
        }
        try writer.close()
        _ = try followHoldingGate(quietThrough: 0)
        return report
    }
}
