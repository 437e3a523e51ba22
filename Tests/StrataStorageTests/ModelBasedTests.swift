// Model-based random testing: seeded random sequences of puts, deletes, multi-key and
// rolled-back transactions, snapshot reads and close-and-reopen, checked after every step
// against an in-memory dictionary. A failure prints the seed and step to replay it
// (STRATA_SEED=<seed> swift test --filter ModelBasedTests).

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class ModelBasedTests: XCTestCase {
    private struct Run {
        var store: Store
        var model: Model = [:]
        var snapshots: [(Snapshot, Model)] = []
    }

    func testRandomOperationsMatchTheModel() throws {
        let runs = 4
        let stepsPerRun = 5_000 * TestEnvironment.fuzzScale
        for r in 0 ..< runs {
            try runRandom(seed: baseSeed &+ UInt64(r), steps: stepsPerRun, segmentSize: [4096, 16384, 1 << 20, 64 << 20][r])
        }
    }

    private func runRandom(seed: UInt64, steps: Int, segmentSize: Int) throws {
        var rng = SplitMix64(seed: seed)
        let dir = TemporaryDirectory("model")
        var opts = options(segmentSize: segmentSize, durability: .none)
        opts.compressionThreshold = 64
        // Compaction runs at chosen steps (and, for one run, automatically as well).
        var policy = CompactionPolicy()
        policy.minimumDeadBytes = 0
        opts.autoCompaction = segmentSize == 16384 ? .custom(policy) : .disabled
        var run = Run(store: try Store(directory: dir.url, options: opts))
        var compactions = 0
        let context = "seed \(seed), segmentSize \(segmentSize)"

        func randomKey() -> (UInt32, [UInt8]) {
            let table = UInt32(rng.next() % 3)
            let n = Int(rng.next() % 150)
            // Mix inline (short) and heap (long) keys.
            let k = n % 3 == 0 ? Array("a-much-longer-key-that-spills-to-the-heap-\(n)".utf8) : key(n)
            return (table, k)
        }
        func randomValue() -> [UInt8] {
            let length = Int(rng.next() % 700)
            return value(rng.next(), length: length, compressible: rng.next() % 2 == 0)
        }

        for step in 0 ..< steps {
            let dice = rng.next() % 100
            var touched: [(UInt32, [UInt8])] = []
            switch dice {
            case 0 ..< 45: // single put
                let (t, k) = randomKey()
                let v = randomValue()
                try run.store.write { try $0.put(table: t, key: k, value: v) }
                run.model[t, default: [:]][k] = v
                touched.append((t, k))
            case 45 ..< 60: // single delete
                let (t, k) = randomKey()
                try run.store.write { try $0.delete(table: t, key: k) }
                run.model[t]?[k] = nil
                touched.append((t, k))
            case 60 ..< 80: // multi-key transaction
                var pending = run.model
                let count = Int(rng.next() % 20) + 1
                let txn = try run.store.beginTransaction()
                for _ in 0 ..< count {
                    let (t, k) = randomKey()
                    if rng.next() % 4 == 0 {
                        try txn.delete(table: t, key: k)
                        pending[t]?[k] = nil
                    } else {
                        let v = randomValue()
                        try txn.put(table: t, key: k, value: v)
                        pending[t, default: [:]][k] = v
                    }
                    XCTAssertEqual(try txn.get(table: t, key: k), pending[t]?[k], "read-your-writes, \(context), step \(step)")
                    touched.append((t, k))
                }
                try txn.commit()
                run.model = pending
            case 80 ..< 88: // transaction that is rolled back
                let txn = try run.store.beginTransaction()
                for _ in 0 ..< Int(rng.next() % 10) + 1 {
                    let (t, k) = randomKey()
                    try txn.put(table: t, key: k, value: randomValue())
                    touched.append((t, k))
                }
                txn.rollback()
            case 88 ..< 94: // take a snapshot
                run.snapshots.append((run.store.snapshot(), run.model))
                if run.snapshots.count > 4 { run.snapshots.removeFirst() }
            case 94 ..< 98: // check an old snapshot completely
                if let (snap, expected) = run.snapshots.randomElement(using: &rng) {
                    assertSame(try contents(of: snap), expected, "snapshot, \(context), step \(step)")
                }
            case 98 where segmentSize < 1 << 20:
                // Compact: all wasteful segments, or the policy's partial choice (which keeps
                // tombstones that still hide older records outside the compaction).
                if rng.next() % 2 == 0 {
                    try run.store.compact()
                } else {
                    _ = try run.store.runCompaction(manual: false)
                }
                assertSame(try contents(of: run.store.snapshot()), run.model, "after compaction, \(context), step \(step)")
                if let problem = run.store.checkInvariants() { return XCTFail("after compaction, \(context), step \(step): \(problem)") }
                compactions += 1
            default: // close and reopen (sometimes without close: deinit is not relied on)
                try run.store.close()
                run.store = try Store(directory: dir.url, options: opts)
                assertSame(try contents(of: run.store.snapshot()), run.model,
                               "after reopen, \(context), step \(step)")
                if let problem = run.store.checkInvariants() { return XCTFail("after reopen, \(context), step \(step): \(problem)") }
            }
            for (t, k) in touched {
                let got = try run.store.get(table: t, key: k)
                if got != run.model[t]?[k] {
                    XCTFail("table \(t) key \(String(decoding: k, as: UTF8.self)): store \(got?.count ?? -1) bytes, model \(run.model[t]?[k]?.count ?? -1) bytes, \(context), step \(step)")
                    return
                }
            }
            let snap = run.store.snapshot()
            for t in UInt32(0) ..< 3 where snap.count(table: t) != (run.model[t]?.count ?? 0) {
                XCTFail("count of table \(t): \(snap.count(table: t)) vs \(run.model[t]?.count ?? 0), \(context), step \(step)")
                return
            }
            if step % 100 == 0, let problem = run.store.checkInvariants() {
                return XCTFail("space accounting, \(context), step \(step): \(problem)")
            }
            if step % 500 == 0 {
                assertSame(try contents(of: snap), run.model, "full compare, \(context), step \(step)")
                let stats = run.store.stats
                XCTAssertEqual(stats.liveBytes + stats.deadBytes, stats.segmentDetails.reduce(0) { $0 + $1.diskBytes })
            }
        }
        if segmentSize < 1 << 20 { XCTAssertGreaterThan(compactions, 0, context) }
        try run.store.close()
        let final = try Store(directory: dir.url, options: opts)
        assertSame(try contents(of: final.snapshot()), run.model, "final reopen, \(context)")
    }
}
