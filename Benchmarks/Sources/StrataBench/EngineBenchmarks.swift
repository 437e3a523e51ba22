// The storage-engine benchmarks (docs/benchmarks.md, "Storage engine"): bulk load, durable single-record
// commits, warm random point reads, open time of a large store, index memory per key.
// Each runs Strata, the raw-disk baseline and SQLite (through GRDB: WAL, synchronous=FULL,
// one transaction, prepared statements, INTEGER PRIMARY KEY, its fastest layout) on the
// same data in the same process.

import BenchSupport
import Foundation
import GRDB
import StrataStorage
#if canImport(Glibc)
import Glibc
#endif

struct EngineBenchmarks {
    var records: Int
    var valueSize: Int
    var commits: Int
    var reads: Int
    var workDirectory: String

    func log(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    /// Strata alone, for `perf record`: the bulk load and the point reads, with timings.
    func profileStrata() throws {
        let storeDir = workDirectory + "/strata"
        try? FileManager.default.removeItem(atPath: storeDir)
        let keys = (0 ..< records).map(benchKey)
        let values = (0 ..< records).map { benchValue($0, size: valueSize) }
        let store = try Store(path: storeDir)
        let load = try time {
            try store.write { txn in
                for i in 0 ..< records { try txn.put(table: 1, key: keys[i], value: values[i]) }
            }
        }
        var rng = SplitMix64(seed: 42)
        let order = (0 ..< reads).map { _ in Int(rng.next() % UInt64(records)) }
        var checksum = 0
        let read = try time {
            for i in order {
                checksum &+= try withUnsafeBytes(of: UInt64(i).bigEndian) { try store.get(table: 1, key: $0)!.count }
            }
        }
        try store.close()
        log(String(format: "bulk load %.3f s (%.0f ns/record); reads %.0f ns/read (%d)", load, load / Double(records) * 1e9,
                   read / Double(reads) * 1e9, checksum))
        try? FileManager.default.removeItem(atPath: storeDir)
    }

    /// Opening alone, for `perf record`: builds a store of `records` keys once (sealed, with
    /// hints), then opens it five times with a warm cache (`STRATA_OPEN_ROUNDS` more, for a
    /// profile of the opens alone).
    func profileOpen() throws {
        let storeDir = workDirectory + "/strata-open"
        try? FileManager.default.removeItem(atPath: storeDir)
        let store = try Store(path: storeDir)
        try store.write { txn in
            for i in 0 ..< records { try txn.put(table: 1, key: benchKey(i), value: benchValue(i, size: valueSize)) }
        }
        try store.write { try $0.put(table: 2, key: [1], value: [1]) }
        try store.close()
        let opens = ProcessInfo.processInfo.environment["STRATA_OPEN_ROUNDS"].flatMap { Int($0) } ?? 5
        for _ in 0 ..< opens {
            var opened: Store?
            let seconds = try time { opened = try Store(path: storeDir) }
            log(String(format: "open %.2f ms (%.1f ns/key), index %.1f B/key", seconds * 1e3, seconds / Double(records) * 1e9,
                       Double(opened!.stats.indexBytes) / Double(records)))
            try opened!.close()
        }
        try? FileManager.default.removeItem(atPath: storeDir)
    }

    /// The commit that seals a full active segment, alone: bulk-loads `records` records in
    /// one transaction, then times the first durable single commit (which finds the segment
    /// full and seals it) against the median of the next 100.
    func profileSeal(rounds: Int) throws {
        for round in 0 ..< rounds {
            let storeDir = workDirectory + "/strata-seal"
            try? FileManager.default.removeItem(atPath: storeDir)
            let store = try Store(path: storeDir)
            try store.write { txn in
                for i in 0 ..< records { try txn.put(table: 1, key: benchKey(i), value: benchValue(i, size: valueSize)) }
            }
            var times: [Double] = []
            for i in 0 ..< 101 {
                times.append(try time { try store.write { try $0.put(table: 1, key: benchKey(records + i), value: benchValue(i, size: valueSize)) } })
            }
            let rest = times.dropFirst().sorted()
            log(String(format: "round %d: sealing commit %.2f ms; other commits median %.2f ms", round + 1, times[0] * 1e3, rest[rest.count / 2] * 1e3))
            try store.close()
            try? FileManager.default.removeItem(atPath: storeDir)
        }
    }

    /// Runs `body` `rounds` times and returns the median of what it returns.
    func median(_ rounds: Int, _ body: (Int) throws -> Double) rethrows -> Double {
        var results: [Double] = []
        for round in 0 ..< rounds { results.append(try body(round)) }
        return results.sorted()[results.count / 2]
    }

    func run(rounds: Int) throws -> [ResultRow] {
        var rows: [ResultRow] = []
        let storeDir = workDirectory + "/strata"
        let sqlitePath = workDirectory + "/sqlite.db"
        try? FileManager.default.removeItem(atPath: storeDir)
        try? FileManager.default.removeItem(atPath: sqlitePath)
        let recordBytes = (32 + 8 + valueSize + 7) & ~7
        let totalBytes = records * recordBytes

        // Values are generated up front so that no benchmark times their creation.
        log("generating \(records) values of \(valueSize) bytes")
        let keys = (0 ..< records).map(benchKey)
        let values = (0 ..< records).map { benchValue($0, size: valueSize) }
        var options = StoreOptions()
        options.durability = .full

        // 1. Bulk load, one transaction: raw and Strata interleaved, medians.
        var rawBulkTimes: [Double] = [], strataBulkTimes: [Double] = []
        for round in 0 ..< rounds {
            log("bulk load round \(round + 1)/\(rounds): raw, then Strata")
            rawBulkTimes.append(try RawDisk.sequentialWrite(bytes: totalBytes, in: workDirectory))
            try? FileManager.default.removeItem(atPath: storeDir)
            let store = try Store(path: storeDir, options: options)
            strataBulkTimes.append(try time {
                try store.write { txn in
                    for i in 0 ..< records { try txn.put(table: 1, key: keys[i], value: values[i]) }
                }
            })
            // One more commit seals the bulk segment, so it gets its hint file (as any store
            // past its first segment has).
            try store.write { try $0.put(table: 2, key: [1], value: [1]) }
            try store.close()
        }
        let rawBulk = rawBulkTimes.sorted()[rounds / 2], strataBulk = strataBulkTimes.sorted()[rounds / 2]
        log("SQLite bulk load")
        let pool = try DatabasePool(path: sqlitePath)
        // GRDB opens WAL databases with synchronous = NORMAL (commits are not synced);
        // Strata's `.full` syncs every commit, so SQLite gets the same promise.
        try pool.writeWithoutTransaction { db in
            try requireFullSynchronous(db, baseline: "engine benchmarks (SQLite)")
            try db.execute(sql: "CREATE TABLE kv (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        }
        let sqliteBulk = try time {
            try pool.write { db in
                let statement = try db.cachedStatement(sql: "INSERT INTO kv (k, v) VALUES (?, ?)")
                for i in 0 ..< records {
                    try statement.execute(arguments: [Int64(i), Data(values[i])])
                }
            }
        }
        rows.append(ResultRow(
            benchmark: "bulk load, \(records / 1000)k × \(valueSize) B, one transaction",
            strata: formatBytesRate(Double(totalBytes) / strataBulk) + String(format: " (%.2f s)", strataBulk),
            baseline: formatBytesRate(Double(totalBytes) / rawBulk) + String(format: " (%.2f s)", rawBulk),
            sqlite: String(format: "%.2f s", sqliteBulk),
            ratios: String(format: "%.0f%% of raw; %.1f× SQLite", 100 * rawBulk / strataBulk, sqliteBulk / strataBulk),
            target: "≥ 50% of raw; ≥ 5× SQLite"))

        // 2. Durable single-record commits: the three interleaved, medians.
        var store: Store? = try Store(path: storeDir, options: options)
        var rawSyncs: [Double] = [], strataSyncs: [Double] = [], sqliteSyncs: [Double] = []
        for round in 0 ..< rounds {
            log("durable commits round \(round + 1)/\(rounds)")
            rawSyncs.append(try RawDisk.syncLoop(count: commits, recordBytes: recordBytes + 48, in: workDirectory))
            strataSyncs.append(try time {
                for i in 0 ..< commits {
                    try store!.write { try $0.put(table: 3, key: keys[i], value: values[i]) }
                }
            })
            sqliteSyncs.append(try time {
                for i in 0 ..< commits {
                    try pool.write { db in
                        try db.cachedStatement(sql: "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)")
                            .execute(arguments: [Int64(records + i), Data(values[i])])
                    }
                }
            })
        }
        let rawSync = rawSyncs.sorted()[rounds / 2], strataCommits = strataSyncs.sorted()[rounds / 2]
        let sqliteCommits = sqliteSyncs.sorted()[rounds / 2]
        rows.append(ResultRow(
            benchmark: "durable single-record commits (\(commits) × \(rounds) rounds)",
            strata: formatRate(Double(commits) / strataCommits, unit: "commits"),
            baseline: formatRate(Double(commits) / rawSync, unit: "write+fdatasync"),
            sqlite: formatRate(Double(commits) / sqliteCommits, unit: "commits"),
            ratios: String(format: "%.0f%% of raw; %.1f× SQLite", 100 * rawSync / strataCommits, sqliteCommits / strataCommits),
            target: "≥ 80% of raw fdatasync rate"))

        // 3. Warm random point reads of present keys.
        var rng = SplitMix64(seed: 42)
        let order = (0 ..< reads).map { _ in Int(rng.next() % UInt64(records)) }
        var checksum = 0
        let sqliteReadCount = min(reads, 300_000)
        var strataReadRates: [Double] = [], sqliteReadRates: [Double] = []
        for round in 0 ..< rounds {
            log("random point reads round \(round + 1)/\(rounds)")
            let strataReads = try time {
                for i in order {
                    // The key is built on the stack, as the SQLite side binds an integer.
                    checksum &+= try withUnsafeBytes(of: UInt64(i).bigEndian) { try store!.get(table: 1, key: $0)!.count }
                }
            }
            let sqliteReads = try time {
                try pool.read { db in
                    let statement = try db.cachedStatement(sql: "SELECT v FROM kv WHERE k = ?")
                    for i in order.prefix(sqliteReadCount) {
                        checksum &+= try Data.fetchOne(statement, arguments: [Int64(i)])!.count
                    }
                }
            }
            strataReadRates.append(Double(reads) / strataReads)
            sqliteReadRates.append(Double(sqliteReadCount) / sqliteReads)
        }
        let strataReadRate = strataReadRates.sorted()[rounds / 2], sqliteReadRate = sqliteReadRates.sorted()[rounds / 2]
        rows.append(ResultRow(
            benchmark: "random point reads, warm (present keys)",
            strata: formatRate(strataReadRate, unit: "reads"),
            baseline: "–",
            sqlite: formatRate(sqliteReadRate, unit: "reads"),
            ratios: String(format: "%.1f× SQLite", strataReadRate / sqliteReadRate),
            target: "≥ 10× SQLite"))

        // 4. Open time and index memory of the store just built.
        try store!.close()
        store = nil
        let imagePath = storeDir + "/INDEX"
        let storeFiles = try FileManager.default.contentsOfDirectory(atPath: storeDir).map { storeDir + "/" + $0 }
        let hintFiles = storeFiles.filter { $0.hasSuffix(".hint") }
        var hintBytes = 0
        var coldHintReads: [Double] = [], coldOpens: [Double] = [], warmOpens: [Double] = [], rebuilds: [Double] = []
        var imageCloses: [Double] = []
        var perKey = 0.0
        var stats: StoreStats?
        for round in 0 ..< rounds {
            log("open round \(round + 1)/\(rounds)")
            storeFiles.forEach(evictFromPageCache)
            coldHintReads.append(try time {
                hintBytes = 0
                for path in hintFiles { hintBytes += try Data(contentsOf: URL(fileURLWithPath: path)).count }
            })
            // From the index image close wrote (INDEX), cold and warm.
            storeFiles.forEach(evictFromPageCache)
            var reopened: Store?
            coldOpens.append(try time { reopened = try Store(path: storeDir, options: options) })
            try reopened!.close()
            reopened = nil
            warmOpens.append(try time { reopened = try Store(path: storeDir, options: options) })
            guard FileManager.default.fileExists(atPath: imagePath) else { throw PeerBenchmarks.Failure(description: "close wrote no index image") }
            // A commit, then close: the close writes a new image.
            try reopened!.write { try $0.put(table: 2, key: [2], value: [UInt8(round)]) }
            imageCloses.append(try time { try reopened!.close() })
            reopened = nil
            // Without it: the index rebuilt from the hints, warm; its heap is the index's memory.
            try FileManager.default.removeItem(atPath: imagePath)
            let heapBefore = heapInUse()
            rebuilds.append(try time { reopened = try Store(path: storeDir, options: options) })
            let heapAfter = heapInUse()
            stats = reopened!.stats
            perKey = Double(heapAfter - heapBefore) / Double(stats!.keys)
            try reopened!.close()   // writes the image again
            reopened = nil
        }
        let coldOpen = coldOpens.sorted()[rounds / 2], warmOpen = warmOpens.sorted()[rounds / 2]
        let coldHints = coldHintReads.sorted()[rounds / 2], rebuild = rebuilds.sorted()[rounds / 2]
        let imageClose = imageCloses.sorted()[rounds / 2]
        rows.append(ResultRow(
            benchmark: "open a \(stats!.keys / 1000)k-key store (index image), cold cache / warm cache",
            strata: String(format: "%.2f ms / %.2f ms", coldOpen * 1e3, warmOpen * 1e3),
            baseline: String(format: "read its %d MiB of hint files, cold: %.1f ms", hintBytes >> 20, coldHints * 1e3),
            sqlite: "–",
            ratios: String(format: "%.2f× cold hint read", coldOpen / coldHints),
            target: warmOpen <= 0.005 ? "≤ 5 ms warm: met" : "≤ 5 ms warm: not met"))
        rows.append(ResultRow(
            benchmark: "close after a commit (the image on disk still fits: not rewritten)",
            strata: String(format: "%.1f ms", imageClose * 1e3),
            baseline: "–", sqlite: "–", ratios: "–", target: "–"))
        rows.append(ResultRow(
            benchmark: "open without the image (index rebuilt from the hints), warm",
            strata: String(format: "%.1f ms", rebuild * 1e3),
            baseline: "–", sqlite: "–",
            ratios: String(format: "%.0f× the open from the image", rebuild / warmOpen),
            target: "–"))
        rows.append(ResultRow(
            benchmark: "index memory per key (8-byte keys)",
            strata: String(format: "%.1f B/key (heap measured, index rebuilt); %.1f B/key reported by stats", perKey,
                           Double(stats!.indexBytes) / Double(stats!.keys)),
            baseline: "–", sqlite: "–",
            ratios: String(format: "%.1f B/key beyond the key bytes", perKey - 8),
            target: "≤ 64 B/key + key bytes"))
        if checksum == 42 { log("") }   // keeps the reads from being optimised away
        try? FileManager.default.removeItem(atPath: storeDir)
        try? FileManager.default.removeItem(atPath: sqlitePath)
        return rows
    }
}
