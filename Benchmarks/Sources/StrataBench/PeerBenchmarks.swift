// The engine beside its real peers in one run (issue 15): LMDB, RocksDB and LevelDB through
// their C APIs (Debian's liblmdb-dev, librocksdb-dev, libleveldb-dev, installed by
// `make bench`), on the same keys (8-byte big-endian integers) and values (random bytes).
//
// Durability, as comparable as each allows:
// - Strata: `.full` (one fdatasync per commit, shared by concurrent committers).
// - LMDB: default environment flags (a commit fsyncs the data file: MDB_NOSYNC off).
// - RocksDB and LevelDB: `sync = true` write options (the WAL / log is synced per write).
// Reads copy the value out in every engine (LMDB's `mdb_get` gives a pointer into its map;
// it is copied into a Swift array, as Strata's `get` returns one).

import BenchSupport
import CLMDB
import CLevelDB
import CRocksDB
import Foundation
import StrataStorage

struct PeerBenchmarks {
    var records: Int
    var valueSize: Int
    var commits: Int
    var reads: Int
    var workDirectory: String
    /// The realistic variant: 16-byte text keys and JSON-like text values that LZ4 halves,
    /// as cached REST rows are (the default: 8-byte integer keys, random bytes).
    var compressible = false

    func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

    /// One engine under test.
    protocol Engine {
        var name: String { get }
        mutating func open(_ path: String) throws
        mutating func bulkLoad(_ keys: [[UInt8]], _ value: (Int) -> [UInt8]) throws
        mutating func durablePut(_ key: [UInt8], _ value: [UInt8]) throws
        func get(_ key: [UInt8]) throws -> [UInt8]?
        mutating func close()
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    func run(rounds: Int) throws -> [ResultRow] {
        var keys = (0 ..< records).map { i in Self.key(i, text: compressible) }
        var rng = SplitMix64(seed: 42)
        let values = (0 ..< 1024).map { i in
            compressible ? Self.textValue(i, size: valueSize, rng: &rng) : (0 ..< valueSize).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        }
        func value(_ i: Int) -> [UInt8] { values[i & 1023] }
        keys.shuffle(using: &rng)
        let readOrder = (0 ..< reads).map { _ in keys[Int(rng.next() % UInt64(records))] }
        var engines: [any Engine] = [StrataEngine(), LMDBEngine(mapSize: max(1 << 30, records * (valueSize + 64) * 3)), RocksDBEngine(), LevelDBEngine()]
        var results: [String: [String: [Double]]] = [:]
        for round in 0 ..< rounds {
            for index in engines.indices {
                let name = engines[index].name
                let path = workDirectory + "/peer-\(name)-\(round)"
                try? FileManager.default.removeItem(atPath: path)
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: path) }
                log("peers round \(round + 1)/\(rounds): \(name)")
                try engines[index].open(path)
                let load = try time { try engines[index].bulkLoad(keys, value) }
                var commitKeys = (0 ..< commits).map { i in Self.key(records + i, text: compressible) }
                commitKeys.shuffle(using: &rng)
                let durable = try time { for (i, key) in commitKeys.enumerated() { try engines[index].durablePut(key, value(i)) } }
                // Warm the cache once, then time the reads.
                for key in readOrder.prefix(min(reads, 100_000)) { _ = try engines[index].get(key) }
                var found = 0
                let read = try time {
                    for key in readOrder where try engines[index].get(key) != nil { found += 1 }
                }
                guard found == reads else { throw Failure(description: "\(name) found \(found) of \(reads) keys") }
                engines[index].close()
                let open = try time { try engines[index].open(path) }
                guard try engines[index].get(keys[0]) == value(0) else { throw Failure(description: "\(name) lost a key after reopening") }
                engines[index].close()
                results[name, default: [:]]["load", default: []].append(load)
                results[name, default: [:]]["durable", default: []].append(durable)
                results[name, default: [:]]["read", default: []].append(read)
                results[name, default: [:]]["open", default: []].append(open)
            }
        }
        func median(_ name: String, _ what: String) -> Double {
            let xs = (results[name]?[what] ?? []).sorted()
            return xs.isEmpty ? .nan : xs[xs.count / 2]
        }
        let names = engines.map(\.name)
        let strata = names[0]
        var rows: [ResultRow] = []
        func row(_ title: String, _ what: String, unit: String, count: Int, target: String) {
            let rates = names.map { Double(count) / median($0, what) }
            let others = zip(names, rates).dropFirst().map { "\($0.0) " + formatRate($0.1, unit: unit) }.joined(separator: "; ")
            let ratios = zip(names, rates).dropFirst().map { String(format: "%.2f× %@", rates[0] / $0.1, $0.0) }.joined(separator: ", ")
            rows.append(ResultRow(benchmark: title, strata: formatRate(rates[0], unit: unit), baseline: others, sqlite: "",
                                  ratios: ratios, target: target))
        }
        let shape = compressible ? "\(valueSize) B JSON-like text (16 B text keys)" : "\(valueSize) B"
        row("bulk load, \(records / 1000)k × \(shape), one transaction / batch", "load", unit: "records", count: records,
            target: "≥ 1.5× LMDB")
        row("durable single-record commits (\(commits))", "durable", unit: "commits", count: commits, target: "")
        row("warm random point reads (value copied)", "read", unit: "reads", count: reads, target: "≥ 1.5× LMDB")
        rows.append(ResultRow(benchmark: "open the \(records / 1000)k-key store",
                              strata: String(format: "%.3f s", median(strata, "open")),
                              baseline: names.dropFirst().map { String(format: "%@ %.3f s", $0, median($0, "open")) }.joined(separator: "; "),
                              sqlite: "", ratios: "", target: ""))
        return rows
    }

    /// Key `i`: 8 bytes big-endian, or 16 characters of text (`user-00000000042`).
    static func key(_ i: Int, text: Bool) -> [UInt8] {
        guard text else { return withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } }
        let digits = String(i)
        return Array(("user-" + String(repeating: "0", count: max(0, 11 - digits.count)) + digits).utf8)
    }

    /// A JSON-like row of exactly `size` bytes: field names, a city, words of a short bio
    /// (about 2:1 under LZ4, as such rows compress).
    static func textValue(_ i: Int, size: Int, rng: inout SplitMix64) -> [UInt8] {
        let words = ["swift", "server", "cache", "offline", "rest", "json", "query", "realm", "linux", "async",
                     "actor", "index", "column", "snapshot", "commit", "object", "schema", "event", "user", "city"]
        var text = "{\"id\":\(i),\"name\":\"user \(i)\",\"city\":\"city\(rng.next() % 100)\",\"rank\":\(rng.next() % 1000),\"bio\":\""
        while text.utf8.count < size { text += words[Int(rng.next() % UInt64(words.count))] + " " }
        var bytes = Array(text.utf8.prefix(size - 2))
        bytes += Array("\"}".utf8)
        return bytes
    }

    // MARK: Engines

    struct StrataEngine: Engine {
        let name = "Strata"
        var store: Store?
        mutating func open(_ path: String) throws {
            var options = StoreOptions()
            options.durability = .full
            options.autoCompaction = .disabled
            store = try Store(path: path, options: options)
        }
        mutating func bulkLoad(_ keys: [[UInt8]], _ value: (Int) -> [UInt8]) throws {
            try store!.write { txn in for (i, key) in keys.enumerated() { try txn.put(table: 1, key: key, value: value(i)) } }
        }
        mutating func durablePut(_ key: [UInt8], _ value: [UInt8]) throws {
            try store!.write { try $0.put(table: 1, key: key, value: value) }
        }
        func get(_ key: [UInt8]) throws -> [UInt8]? { try store!.get(table: 1, key: key) }
        mutating func close() { try? store?.close(); store = nil }
    }

    struct LMDBEngine: Engine {
        let name = "LMDB"
        let mapSize: Int
        var env: OpaquePointer?
        var dbi = MDB_dbi()
        var reader: OpaquePointer?

        init(mapSize: Int) { self.mapSize = mapSize }

        private static func check(_ code: Int32, _ what: String) throws {
            guard code == 0 else { throw Failure(description: "LMDB \(what): \(String(cString: mdb_strerror(code)))") }
        }

        mutating func open(_ path: String) throws {
            try Self.check(mdb_env_create(&env), "env_create")
            try Self.check(mdb_env_set_mapsize(env, mapSize), "set_mapsize")
            try Self.check(mdb_env_open(env, path, 0, 0o644), "env_open")
            var txn: OpaquePointer?
            try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
            try Self.check(mdb_dbi_open(txn, nil, 0, &dbi), "dbi_open")
            try Self.check(mdb_txn_commit(txn), "commit")
        }

        private func write(_ body: (OpaquePointer?) throws -> Void) throws {
            var txn: OpaquePointer?
            try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
            do { try body(txn) } catch { mdb_txn_abort(txn); throw error }
            try Self.check(mdb_txn_commit(txn), "commit")
        }

        private func put(_ txn: OpaquePointer?, _ key: [UInt8], _ value: [UInt8]) throws {
            var key = key, value = value
            try key.withUnsafeMutableBytes { k in
                try value.withUnsafeMutableBytes { v in
                    var mk = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
                    var mv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
                    try Self.check(mdb_put(txn, dbi, &mk, &mv, 0), "put")
                }
            }
        }

        mutating func bulkLoad(_ keys: [[UInt8]], _ value: (Int) -> [UInt8]) throws {
            try write { txn in for (i, key) in keys.enumerated() { try put(txn, key, value(i)) } }
        }
        mutating func durablePut(_ key: [UInt8], _ value: [UInt8]) throws { try write { try put($0, key, value) } }

        func get(_ key: [UInt8]) throws -> [UInt8]? {
            // One read transaction per read (readers never block writers).
            var txn: OpaquePointer?
            try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "txn_begin")
            defer { mdb_txn_abort(txn) }
            var key = key
            return try key.withUnsafeMutableBytes { k -> [UInt8]? in
                var mk = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
                var data = MDB_val()
                let code = mdb_get(txn, dbi, &mk, &data)
                if code == MDB_NOTFOUND { return nil }
                try Self.check(code, "get")
                return Array(UnsafeRawBufferPointer(start: data.mv_data, count: data.mv_size))
            }
        }
        mutating func close() { if env != nil { mdb_env_close(env); env = nil } }
    }

    struct RocksDBEngine: Engine {
        let name = "RocksDB"
        var db: OpaquePointer?
        let syncWrites: OpaquePointer? = {
            let options = rocksdb_writeoptions_create()
            rocksdb_writeoptions_set_sync(options, 1)
            return options
        }()
        let readOptions: OpaquePointer? = rocksdb_readoptions_create()

        private static func check(_ error: UnsafeMutablePointer<CChar>?, _ what: String) throws {
            guard let error else { return }
            defer { free(error) }
            throw Failure(description: "RocksDB \(what): \(String(cString: error))")
        }

        mutating func open(_ path: String) throws {
            let options = rocksdb_options_create()
            defer { rocksdb_options_destroy(options) }
            rocksdb_options_set_create_if_missing(options, 1)
            var error: UnsafeMutablePointer<CChar>?
            db = rocksdb_open(options, path, &error)
            try Self.check(error, "open")
        }
        mutating func bulkLoad(_ keys: [[UInt8]], _ value: (Int) -> [UInt8]) throws {
            let batch = rocksdb_writebatch_create()
            defer { rocksdb_writebatch_destroy(batch) }
            for (i, key) in keys.enumerated() {
                let v = value(i)
                key.withUnsafeBytes { k in v.withUnsafeBytes { v in
                    rocksdb_writebatch_put(batch, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count,
                                           v.baseAddress!.assumingMemoryBound(to: CChar.self), v.count)
                } }
            }
            var error: UnsafeMutablePointer<CChar>?
            rocksdb_write(db, syncWrites, batch, &error)
            try Self.check(error, "write")
        }
        mutating func durablePut(_ key: [UInt8], _ value: [UInt8]) throws {
            var error: UnsafeMutablePointer<CChar>?
            key.withUnsafeBytes { k in value.withUnsafeBytes { v in
                rocksdb_put(db, syncWrites, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count,
                            v.baseAddress!.assumingMemoryBound(to: CChar.self), v.count, &error)
            } }
            try Self.check(error, "put")
        }
        func get(_ key: [UInt8]) throws -> [UInt8]? {
            var error: UnsafeMutablePointer<CChar>?
            var length = 0
            let found = key.withUnsafeBytes { k in
                rocksdb_get(db, readOptions, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count, &length, &error)
            }
            try Self.check(error, "get")
            guard let found else { return nil }
            defer { free(found) }
            return Array(UnsafeRawBufferPointer(start: found, count: length))
        }
        mutating func close() { if db != nil { rocksdb_close(db); db = nil } }
    }

    struct LevelDBEngine: Engine {
        let name = "LevelDB"
        var db: OpaquePointer?
        let syncWrites: OpaquePointer? = {
            let options = leveldb_writeoptions_create()
            leveldb_writeoptions_set_sync(options, 1)
            return options
        }()
        let readOptions: OpaquePointer? = leveldb_readoptions_create()

        private static func check(_ error: UnsafeMutablePointer<CChar>?, _ what: String) throws {
            guard let error else { return }
            defer { leveldb_free(error) }
            throw Failure(description: "LevelDB \(what): \(String(cString: error))")
        }

        mutating func open(_ path: String) throws {
            let options = leveldb_options_create()
            defer { leveldb_options_destroy(options) }
            leveldb_options_set_create_if_missing(options, 1)
            var error: UnsafeMutablePointer<CChar>?
            db = leveldb_open(options, path, &error)
            try Self.check(error, "open")
        }
        mutating func bulkLoad(_ keys: [[UInt8]], _ value: (Int) -> [UInt8]) throws {
            let batch = leveldb_writebatch_create()
            defer { leveldb_writebatch_destroy(batch) }
            for (i, key) in keys.enumerated() {
                let v = value(i)
                key.withUnsafeBytes { k in v.withUnsafeBytes { v in
                    leveldb_writebatch_put(batch, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count,
                                           v.baseAddress!.assumingMemoryBound(to: CChar.self), v.count)
                } }
            }
            var error: UnsafeMutablePointer<CChar>?
            leveldb_write(db, syncWrites, batch, &error)
            try Self.check(error, "write")
        }
        mutating func durablePut(_ key: [UInt8], _ value: [UInt8]) throws {
            var error: UnsafeMutablePointer<CChar>?
            key.withUnsafeBytes { k in value.withUnsafeBytes { v in
                leveldb_put(db, syncWrites, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count,
                            v.baseAddress!.assumingMemoryBound(to: CChar.self), v.count, &error)
            } }
            try Self.check(error, "put")
        }
        func get(_ key: [UInt8]) throws -> [UInt8]? {
            var error: UnsafeMutablePointer<CChar>?
            var length = 0
            let found = key.withUnsafeBytes { k in
                leveldb_get(db, readOptions, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count, &length, &error)
            }
            try Self.check(error, "get")
            guard let found else { return nil }
            defer { leveldb_free(found) }
            return Array(UnsafeRawBufferPointer(start: found, count: length))
        }
        mutating func close() { if db != nil { leveldb_close(db); db = nil } }
    }
}
