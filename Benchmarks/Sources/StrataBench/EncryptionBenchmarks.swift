// Encryption at rest against the same store without it, in the same run: bulk load,
// durable single commits, warm random point reads, a full scan, open (hints opened and
// checked) and compaction. Plain and encrypted alternate in every round; medians. The
// goal is Realm's statement for its own encryption: at most ~10% slower.

import BenchSupport
import Foundation
import StrataStorage

struct EncryptionBenchmarks {
    var records: Int
    var valueSize: Int
    var commits: Int
    var reads: Int
    var workDirectory: String

    private static let key = Data((0 ..< 64).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 31) })

    func log(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    private func options(encrypted: Bool) -> StoreOptions {
        var options = StoreOptions()
        options.durability = .full
        options.autoCompaction = .disabled
        options.encryptionKey = encrypted ? Self.key : nil
        return options
    }

    /// One measurement of each kind for plain and encrypted stores, alternating.
    private struct Round {
        var bulk = 0.0, commits = 0.0, reads = 0.0, scan = 0.0, open = 0.0, compaction = 0.0
    }

    func run(rounds: Int) throws -> [ResultRow] {
        log("generating \(records) values of \(valueSize) bytes")
        let keys = (0 ..< records).map(benchKey)
        let values = (0 ..< records).map { benchValue($0, size: valueSize) }
        var rng = SplitMix64(seed: 43)
        let order = (0 ..< reads).map { _ in Int(rng.next() % UInt64(records)) }
        var results: [Bool: [Round]] = [false: [], true: []]
        var checksum = 0
        for round in 0 ..< rounds {
            for encrypted in round % 2 == 0 ? [false, true] : [true, false] {
                log("encryption round \(round + 1)/\(rounds): \(encrypted ? "encrypted" : "plain")")
                let dir = workDirectory + "/encryption-\(encrypted)"
                try? FileManager.default.removeItem(atPath: dir)
                var measured = Round()
                var store = try Store(path: dir, options: options(encrypted: encrypted))
                measured.bulk = try time {
                    try store.write { txn in
                        for i in 0 ..< records { try txn.put(table: 1, key: keys[i], value: values[i]) }
                    }
                }
                measured.commits = try time {
                    for i in 0 ..< commits { try store.write { try $0.put(table: 2, key: keys[i], value: values[i]) } }
                }
                measured.reads = try time {
                    for i in order {
                        checksum &+= try withUnsafeBytes(of: UInt64(i).bigEndian) { try store.get(table: 1, key: $0)!.count }
                    }
                }
                let snapshot = store.snapshot()
                measured.scan = try time {
                    try snapshot.scanStored(table: 1) { _, value in checksum &+= value.count }
                }
                // Overwrite a third so compaction has dead records to drop.
                try store.write { txn in
                    for i in stride(from: 0, to: records, by: 3) { try txn.put(table: 1, key: keys[i], value: values[(i + 1) % records]) }
                }
                try store.close()
                measured.open = try time { store = try Store(path: dir, options: options(encrypted: encrypted)) }
                measured.compaction = try time { _ = try store.compact() }
                try store.close()
                try? FileManager.default.removeItem(atPath: dir)
                results[encrypted]!.append(measured)
            }
        }
        func median(_ encrypted: Bool, _ value: (Round) -> Double) -> Double {
            let sorted = results[encrypted]!.map(value).sorted()
            return sorted[sorted.count / 2]
        }
        func spread(_ value: (Round) -> Double) -> String {
            // Per round, the encrypted time over the plain one: the range across rounds.
            let ratios = zip(results[false]!, results[true]!).map { value($1) / value($0) }
            return String(format: "%.2f–%.2f×", ratios.min()!, ratios.max()!)
        }
        var rows: [ResultRow] = []
        func row(_ name: String, _ value: @escaping (Round) -> Double, format: (Double) -> String) {
            let plain = median(false, value), encrypted = median(true, value)
            rows.append(ResultRow(
                benchmark: name, strata: format(encrypted), baseline: format(plain), sqlite: "–",
                ratios: String(format: "encrypted takes %.2f× the time (%+.0f%%); rounds %@", encrypted / plain,
                               100 * (encrypted / plain - 1), spread(value)),
                target: "≤ 1.10× (Realm's figure)"))
        }
        let bytes = Double(records * (valueSize + 8))
        row("bulk load, \(records / 1000)k × \(valueSize) B, one transaction", { $0.bulk }) { formatBytesRate(bytes / $0) + String(format: " (%.2f s)", $0) }
        row("durable single-record commits (\(commits))", { $0.commits }) { formatRate(Double(commits) / $0, unit: "commits") }
        row("random point reads, warm (\(reads / 1000)k)", { $0.reads }) { formatRate(Double(reads) / $0, unit: "reads") }
        row("full scan of \(records / 1000)k values (scanStored)", { $0.scan }) { formatRate(Double(records) / $0, unit: "values") }
        row("open the \(records / 1000)k-key store (hints)", { $0.open }) { String(format: "%.3f s", $0) }
        row("compact it (a third of the records dead)", { $0.compaction }) { String(format: "%.2f s", $0) }
        if checksum == 42 { log("") }   // keeps the reads from being optimised away
        return rows
    }
}
