// Scale (issue 15): what a user meets when things get big. Lists of a million elements
// (append, commit, first read, indexed reads, memory), a loop over a long list's indices
// (quadratic before the owner kept the converted list), a popular indexed value shared by
// 100k objects (a commit rewrites one bucket, not the posting list), a 10M-key engine store
// (load, open beside reading its hints, memory per key) and the largest value the engine
// takes (256 MiB) read through the map. Sizes are options, so CI can run it small.

import BenchSupport
import Foundation
import Strata

final class ScaleList: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var numbers: List<Int>
    @Persisted var names: List<String>
}

final class ScaleCity: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var city = ""
}

struct ScaleBenchmarks {
    var listElements: Int
    var engineKeys: Int
    var valueSize: Int
    var sharers: Int
    var workDirectory: String

    func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

    private func realm(_ name: String, _ types: [Object.Type]) throws -> Realm {
        try freshRealm(at: workDirectory + "/scale-" + name, types: types)
    }

    func run() throws -> [ResultRow] {
        var rows = try lists()
        rows += try popularValue()
        rows += try engineStore()
        rows += try largestValue()
        return rows
    }

    /// Bytes of the files in `directory`.
    private func directoryBytes(_ directory: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: directory + "/" + $1)[.size] as? Int) ?? 0) }
    }

    // MARK: Lists

    private func lists() throws -> [ResultRow] {
        let n = listElements
        log("lists of \(n) elements")
        let realm = try realm("lists", [ScaleList.self])
        let owner = ScaleList()
        try realm.write { try realm.add(owner) }
        var checksum = 0
        // Appends one at a time, each followed by reading the count and the last element, as a
        // loop that fills a list and checks it does.
        let append = try time {
            try realm.write {
                for i in 0 ..< n {
                    owner.numbers.append(i)
                    owner.names.append("name \(i)")
                    checksum &+= owner.numbers.count &+ (owner.names.last?.utf8.count ?? 0)
                }
            }
        }
        let rowBytes = directoryBytes(workDirectory + "/scale-lists")
        // A fresh object for the row: its first read converts the committed lists.
        let fresh = realm.object(ofType: ScaleList.self, forPrimaryKey: 0)!
        let heapBeforeRead = heapInUse()
        let firstRead = time { checksum &+= fresh.numbers[n / 2] &+ fresh.names[n / 2].utf8.count }
        let heapAfterRead = heapInUse()
        var rng = SplitMix64(seed: 7)
        let reads = 1_000_000
        let indexed = time {
            for _ in 0 ..< reads {
                let position = Int(rng.next() % UInt64(n))
                checksum &+= fresh.numbers[position] &+ fresh.names[position].utf8.count
            }
        }
        let loop = time {
            for position in 0 ..< fresh.numbers.count { checksum &+= fresh.numbers[position] }
        }
        if checksum == 42 { log("") }
        let convertedPerElement = Double(heapAfterRead - heapBeforeRead) / Double(2 * n)
        return [
            ResultRow(benchmark: "append \(n / 1000)k Ints and \(n / 1000)k Strings to two lists one at a time, reading count and last after each (one write)",
                      strata: String(format: "%.2f s (%.2f µs an append + reads)", append, append / Double(2 * n) * 1e6),
                      baseline: "16k appends took 17.1 s before the appends were made O(1) (issue 15)", sqlite: "–",
                      ratios: String(format: "store of %.1f MiB after the commit", Double(rowBytes) / 1048576), target: "amortized O(1)"),
            ResultRow(benchmark: "first indexed read of the committed \(n / 1000)k-element lists (converts both)",
                      strata: String(format: "%.1f ms; +%.1f B an element in memory", firstRead * 1e3, convertedPerElement),
                      baseline: "–", sqlite: "–", ratios: "once per change of the row", target: "–"),
            ResultRow(benchmark: "1M random indexed reads of both lists (`list[i]`)",
                      strata: formatRate(Double(reads) / indexed, unit: "reads"),
                      baseline: "–", sqlite: "–", ratios: "O(1) each", target: "O(log n) or better"),
            ResultRow(benchmark: "loop over the indices of the \(n / 1000)k-element Int list",
                      strata: String(format: "%.1f ms", loop * 1e3), baseline: "quadratic before (a conversion per index)", sqlite: "–",
                      ratios: String(format: "%.0f ns an element", loop / Double(n) * 1e9), target: "linear"),
        ]
    }

    // MARK: A popular indexed value

    /// Commits that move one object off and back onto a value shared by `sharers` objects,
    /// against the same on a value shared by 100: a commit should cost the same.
    private func popularValue() throws -> [ResultRow] {
        func commitTime(sharers: Int) throws -> Double {
            let realm = try realm("popular-\(sharers)", [ScaleCity.self])
            try realm.write {
                for i in 0 ..< sharers {
                    let object = ScaleCity()
                    object.id = i
                    object.city = "Raleigh"
                    try realm.add(object)
                }
            }
            let objects = (0 ..< 100).map { realm.object(ofType: ScaleCity.self, forPrimaryKey: $0 * (sharers / 100))! }
            let commits = 1_000
            return try time {
                for i in 0 ..< commits {
                    let object = objects[i % objects.count]
                    try realm.write { object.city = i % 2 == 0 ? "Durham" : "Raleigh" }
                }
            } / Double(commits)
        }
        log("popular indexed value: 100, 10k and \(sharers) sharers")
        let small = try commitTime(sharers: 100), medium = try commitTime(sharers: 10_000), large = try commitTime(sharers: sharers)
        return [ResultRow(benchmark: "commit moving one object off/onto an indexed value shared by \(sharers / 1000)k objects",
                          strata: String(format: "%.1f µs a commit", large * 1e6),
                          baseline: String(format: "shared by 10k: %.1f µs; by 100 (one flat list, no split): %.1f µs", medium * 1e6, small * 1e6),
                          sqlite: "–",
                          ratios: String(format: "%.2f× the 10k case", large / medium), target: "flat as sharers grow")]
    }

    // MARK: A 10M-key engine store

    private func engineStore() throws -> [ResultRow] {
        let storeDir = workDirectory + "/scale-engine"
        try? FileManager.default.removeItem(atPath: storeDir)
        log("engine store of \(engineKeys) keys × \(valueSize) B")
        var store: Store? = try Store(path: storeDir)
        let batch = 1_000_000
        let load = try time {
            var start = 0
            while start < engineKeys {
                let end = min(start + batch, engineKeys)
                try store!.write { txn in
                    for i in start ..< end { try txn.put(table: 1, key: benchKey(i), value: benchValue(i, size: valueSize)) }
                }
                start = end
            }
            try store!.write { try $0.put(table: 2, key: [1], value: [1]) }   // seals the last bulk segment
        }
        var rng = SplitMix64(seed: 11)
        var checksum = 0
        let reads = 1_000_000
        let readTime = try time {
            for _ in 0 ..< reads {
                let key = benchKey(Int(rng.next() % UInt64(engineKeys)))
                checksum &+= try store!.get(table: 1, key: key)?.count ?? 0
            }
        }
        try store!.close()
        store = nil
        let files = try FileManager.default.contentsOfDirectory(atPath: storeDir).map { storeDir + "/" + $0 }
        let hints = files.filter { $0.hasSuffix(".hint") }
        let dataBytes = try files.reduce(0) { $0 + ((try FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int) ?? 0) }
        files.forEach(evictFromPageCache)
        var hintBytes = 0
        let hintRead = try time { for path in hints { hintBytes += try Data(contentsOf: URL(fileURLWithPath: path)).count } }
        files.forEach(evictFromPageCache)
        let heapBefore = heapInUse()
        let coldOpen = try time { store = try Store(path: storeDir) }
        let perKey = Double(heapInUse() - heapBefore) / Double(engineKeys)
        try store!.close()
        store = nil
        let warmOpen = try time { store = try Store(path: storeDir) }
        try store!.close()
        if checksum == 42 { log("") }
        try? FileManager.default.removeItem(atPath: storeDir)
        let keys = "\(engineKeys / 1_000_000)M"
        return [
            ResultRow(benchmark: "bulk load \(keys) × \(valueSize) B (batches of 1M)",
                      strata: formatRate(Double(engineKeys) / load, unit: "records") + String(format: " (%.1f s, %.1f GiB on disk)", load, Double(dataBytes) / 1073741824),
                      baseline: "–", sqlite: "–", ratios: "–", target: "–"),
            ResultRow(benchmark: "random point reads of the \(keys)-key store, warm",
                      strata: formatRate(Double(reads) / readTime, unit: "reads"), baseline: "–", sqlite: "–", ratios: "–", target: "–"),
            ResultRow(benchmark: "open the \(keys)-key store, cold / warm",
                      strata: String(format: "%.2f s / %.2f s", coldOpen, warmOpen),
                      baseline: String(format: "read its %d MiB of hints, cold: %.2f s", hintBytes >> 20, hintRead), sqlite: "–",
                      ratios: String(format: "%.1f× the hint read", coldOpen / hintRead), target: "≤ 1 s; ≤ 2× hint read"),
            ResultRow(benchmark: "index memory, \(keys) keys (8-byte keys)",
                      strata: String(format: "%.1f B/key (heap measured)", perKey), baseline: "–", sqlite: "–",
                      ratios: String(format: "%.1f B/key beyond the key bytes", perKey - 8), target: "≤ 44 B/key + key bytes"),
        ]
    }

    // MARK: The largest value

    /// One value of the engine's maximum size (256 MiB; larger ones are refused with
    /// `invalidArgument`), read back through the map without a copy.
    private func largestValue() throws -> [ResultRow] {
        let storeDir = workDirectory + "/scale-large"
        try? FileManager.default.removeItem(atPath: storeDir)
        let size = StoreOptions.maxValueSize
        log("one value of \(size >> 20) MiB")
        var store: Store? = try Store(path: storeDir)
        let value = benchValue(1, size: size)
        let write = try time { try store!.write { try $0.put(table: 1, key: [1], value: value) } }
        try store!.close()
        store = try Store(path: storeDir)
        var sum = 0
        let mapped = try time {
            guard let stored = try store!.snapshot().storedValue(table: 1, key: [1]) else { return }
            stored.withUnsafeBytes { bytes in sum &+= Int(bytes[0]) &+ Int(bytes[bytes.count - 1]) &+ bytes.count }
        }
        let copied = try time { sum &+= try store!.get(table: 1, key: [1])?.count ?? 0 }
        try store!.close()
        if sum == 42 { log("") }
        try? FileManager.default.removeItem(atPath: storeDir)
        return [ResultRow(benchmark: "one \(size >> 20) MiB value (the maximum): write + commit, read through the map, read as a copy",
                          strata: String(format: "%.2f s; %.0f ms; %.0f ms", write, mapped * 1e3, copied * 1e3),
                          baseline: "–", sqlite: "–", ratios: String(format: "%.0f MB/s mapped (checksum checked)", Double(size) / mapped / 1e6),
                          target: "values > 1 GiB: refused (limit 256 MiB)")]
    }
}
