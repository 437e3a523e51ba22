// Compaction benchmarks: throughput against the raw sequential bandwidth measured in the
// same run; space after compaction against live bytes; and, with a steady write load and a
// reader running beside a compaction, the longest commit and the slowest read, against the
// same load without compaction.

import BenchSupport
import Foundation
import StrataStorage
import Synchronization

struct CompactionBenchmarks {
    var records: Int
    var valueSize: Int
    var workDirectory: String

    func log(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    /// Builds a store of `records` keys, then overwrites half of them: half the bytes dead.
    func buildFragmentedStore(at path: String) throws -> Store {
        try? FileManager.default.removeItem(atPath: path)
        var options = StoreOptions()
        options.autoCompaction = .disabled
        options.durability = .normal
        let store = try Store(path: path, options: options)
        // Every key once, then every even key again: about half the bytes end up dead.
        for pass in 0 ..< 2 {
            let step = pass + 1
            for batch in stride(from: 0, to: records, by: 20_000) {
                try store.write { txn in
                    for k in stride(from: batch, to: min(records, batch + 20_000), by: step) {
                        try txn.put(table: 1, key: benchKey(k), value: benchValue(k &+ pass, size: valueSize))
                    }
                }
            }
        }
        try store.sync()
        return store
    }

    func run() throws -> [ResultRow] {
        var rows: [ResultRow] = []
        let path = workDirectory + "/compaction"
        log("compaction: building a \(records / 1000)k-key store with half its bytes dead")
        let store = try buildFragmentedStore(at: path)
        let before = store.stats
        let report = try store.compact()
        let after = store.stats
        let raw = try RawDisk.sequentialWrite(bytes: report.bytesRead, in: workDirectory)
        let inputRate = Double(report.bytesRead) / report.seconds, rawRate = Double(report.bytesRead) / raw
        rows.append(ResultRow(
            benchmark: "compaction throughput (\(formatMiB(report.bytesRead)) in, \(formatMiB(report.bytesWritten)) out)",
            strata: formatBytesRate(inputRate) + String(format: " of input (%.2f s)", report.seconds),
            baseline: formatBytesRate(rawRate) + " sequential write+fdatasync",
            sqlite: "–",
            ratios: String(format: "%.0f%% of raw", 100 * inputRate / rawRate),
            target: "≥ 50% of raw sequential bandwidth"))
        let segmentBytesAfter = after.liveBytes + after.deadBytes
        rows.append(ResultRow(
            benchmark: "space after compaction",
            strata: "\(formatMiB(segmentBytesAfter)) on disk (was \(formatMiB(before.liveBytes + before.deadBytes)))",
            baseline: "\(formatMiB(after.liveBytes)) live records",
            sqlite: "–",
            ratios: String(format: "%.3f× live", Double(segmentBytesAfter) / Double(after.liveBytes)),
            target: "≤ live bytes (+ segment headers)"))
        try store.close()

        // Steady load beside a compaction: one writer committing single records as fast as
        // it can, one reader doing point reads; compare with the same load alone.
        log("compaction: latency under load, without and with a compaction running")
        let quiet = try measureLoad(path: path, compacting: false)
        let busy = try measureLoad(path: path, compacting: true)
        rows.append(ResultRow(
            benchmark: "longest commit while compacting (writer stall)",
            strata: String(format: "%.2f ms max, %.3f ms p99", busy.maxCommit * 1e3, busy.p99Commit * 1e3),
            baseline: String(format: "%.2f ms max, %.3f ms p99 without compaction", quiet.maxCommit * 1e3, quiet.p99Commit * 1e3),
            sqlite: "–",
            ratios: String(format: "longest writer pause inside compaction: %.2f ms", busy.longestPause * 1e3),
            target: "a few ms"))
        rows.append(ResultRow(
            benchmark: "slowest point read while compacting",
            strata: String(format: "%.3f ms max, %.1f µs p99", busy.maxRead * 1e3, busy.p99Read * 1e6),
            baseline: String(format: "%.3f ms max, %.1f µs p99 without compaction", quiet.maxRead * 1e3, quiet.p99Read * 1e6),
            sqlite: "–",
            ratios: "readers never wait for compaction",
            target: "readers never blocked"))
        try? FileManager.default.removeItem(atPath: path)
        return rows
    }

    struct Load {
        var maxCommit = 0.0, p99Commit = 0.0, maxRead = 0.0, p99Read = 0.0, longestPause = 0.0
    }

    func measureLoad(path: String, compacting: Bool) throws -> Load {
        let store = try buildFragmentedStore(at: path)
        let stop = Atomic<Bool>(false)
        let commitTimes = Mutex<[Double]>([]), readTimes = Mutex<[Double]>([])
        let pause = Mutex(0.0)
        let records = self.records, valueSize = self.valueSize
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            var times: [Double] = []
            var n = 0
            while !stop.load(ordering: .acquiring) {
                let start = now()
                _ = try? store.write { try $0.put(table: 2, key: benchKey(n), value: benchValue(n, size: valueSize)) }
                times.append(now() - start)
                n += 1
            }
            commitTimes.withLock { $0 = times }
        }
        DispatchQueue.global().async(group: group) {
            var times: [Double] = []
            var rng = SplitMix64(seed: 9)
            while !stop.load(ordering: .acquiring) {
                let k = Int(rng.next() % UInt64(records))
                let start = now()
                _ = try? withUnsafeBytes(of: UInt64(k).bigEndian) { try store.get(table: 1, key: $0) }
                times.append(now() - start)
            }
            readTimes.withLock { $0 = times }
        }
        if compacting {
            let report = try store.compact()
            pause.withLock { $0 = report.longestWriterPause }
        } else {
            Thread.sleep(forTimeInterval: 1.0)
        }
        stop.store(true, ordering: .releasing)
        group.wait()
        try store.close()
        func percentile(_ values: [Double], _ p: Double) -> Double {
            guard !values.isEmpty else { return 0 }
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let commits = commitTimes.withLock { $0 }, reads = readTimes.withLock { $0 }
        return Load(maxCommit: commits.max() ?? 0, p99Commit: percentile(commits, 0.99),
                    maxRead: reads.max() ?? 0, p99Read: percentile(reads, 0.99), longestPause: pause.withLock { $0 })
    }
}

func formatMiB(_ bytes: Int) -> String {
    String(format: "%.0f MiB", Double(bytes) / 1_048_576)
}
