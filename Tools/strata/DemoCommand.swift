// `strata demo [<dir>]`: a guided tour, on a store in a temporary directory (or the one
// given): the engine (transactions, snapshots, a rolled-back write, reopening from hint
// files, compaction), then objects over it (ObjectTour.swift).

import ArgumentParser
import Foundation
import Strata

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "A guided tour of Strata on a store of its own.")

    @Argument(help: "Directory for the demo store (default: a new temporary directory, removed afterwards).")
    var directory: String?

    func run() throws {
        let path = directory ?? (NSTemporaryDirectory() + "strata-demo-\(UUID().uuidString.prefix(8))")
        defer { if directory == nil { try? FileManager.default.removeItem(atPath: path) } }
        do {
            try DemoTour(path: path).run()
        } catch let error as StoreError {
            throw CommandFailure(message: error.description)
        } catch let error as RealmError {
            throw CommandFailure(message: error.description)
        }
    }
}


struct DemoTour {
    let path: String
    let users: UInt32 = 1

    func say(_ line: String = "") { print(line) }

    func userJSON(_ id: Int, name: String, city: String, phone: String?) -> [UInt8] {
        var fields = [#""id":\#(id)"#, #""name":"\#(name)""#, #""city":"\#(city)""#]
        if let phone { fields.append(#""phone":"\#(phone)""#) }
        return Array(("{" + fields.joined(separator: ",") + "}").utf8)
    }

    func key(_ id: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(id).bigEndian) { Array($0) } }

    func run() throws {
        say("Strata demo — store at \(path)")
        say()
        var options = StoreOptions()
        options.segmentSize = 256 << 10   // small segments, so the tour shows sealing and hint files
        options.autoCompaction = .disabled   // the tour compacts by hand, in step 5
        var store = try Store(path: path, options: options)

        say("1. One atomic, durable transaction caches 5,000 users fetched from a REST API.")
        let cities = ["Raleigh", "Lisbon", "Osaka", "Nairobi", "Quito"]
        let start = Date()
        let seq = try store.write { txn in
            for id in 1 ... 5_000 {
                try txn.put(table: users, key: key(id),
                            value: userJSON(id, name: "user\(id)", city: cities[id % 5], phone: id % 3 == 0 ? "+1-555-\(id)" : nil))
            }
        }
        say("   committed as sequence \(seq) in \(Int(Date().timeIntervalSince(start) * 1000)) ms (fdatasync included)")
        say("   user 42 → \(String(decoding: try store.get(table: users, key: key(42)) ?? [], as: UTF8.self))")
        say()

        say("2. A snapshot keeps answering from its commit while writes go on.")
        let before = store.snapshot()
        try store.write { txn in
            try txn.put(table: users, key: key(42), value: userJSON(42, name: "user42", city: "Lagos", phone: "+234-1-42"))
            try txn.delete(table: users, key: key(43))
        }
        say("   snapshot \(before.sequence): user 42 lives in \(city(try before.get(table: users, key: key(42)))), user 43 \(try before.get(table: users, key: key(43)) == nil ? "is gone" : "exists")")
        say("   latest   \(store.lastSequence): user 42 lives in \(city(try store.get(table: users, key: key(42)))), user 43 \(try store.get(table: users, key: key(43)) == nil ? "is gone" : "exists")")
        say()

        say("3. A transaction that fails leaves no trace.")
        struct NetworkDropped: Error {}
        do {
            try store.write { txn in
                for id in 1 ... 5_000 { try txn.put(table: users, key: key(id), value: Array("half-written".utf8)) }
                throw NetworkDropped()
            }
        } catch is NetworkDropped {
            say("   the write threw half-way; user 1 is still \(city(try store.get(table: users, key: key(1))))-based, sequence still \(store.lastSequence)")
        }
        say()

        say("4. Many small commits fill segments; sealed segments get hint files for a fast start.")
        for round in 0 ..< 40 {
            try store.write { txn in
                for id in stride(from: round * 100 + 1, through: round * 100 + 100, by: 1) {
                    try txn.put(table: users, key: key(id), value: userJSON(id, name: "user\(id)", city: cities[(id + round) % 5], phone: nil))
                }
            }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        say("   files: \(names.filter { $0.hasSuffix(".seg") }.count) segments, \(names.filter { $0.hasSuffix(".hint") }.count) hint files")
        try store.close()
        let reopenStart = Date()
        store = try Store(path: path, options: options)
        say("   closed and reopened in \(Int(Date().timeIntervalSince(reopenStart) * 1000)) ms: \(store.snapshot().count(table: users)) users, sequence \(store.lastSequence)")
        say()

        say("5. Where the bytes are, and compaction giving the dead ones back:")
        let stats = store.stats
        say("   \(stats.segments) segments, \(stats.keys) keys, \(stats.liveBytes / 1024) KiB live, \(stats.deadBytes / 1024) KiB dead")
        say("   index \(stats.indexBytes / 1024) KiB in memory, compression ratio \(String(format: "%.2f", stats.compressionRatio))")
        let report = try store.compact()
        say("   compacted \(report.segmentsCompacted) segments in \(Int(report.seconds * 1000)) ms: \(report.diskBytesBefore / 1024) KiB → \(report.diskBytesAfter / 1024) KiB, readers and writers never stopped")
        let verified = try store.verify()
        say("   verify: \(verified.isClean ? "ok" : "DAMAGED"), \(verified.recordsChecked) records, \(verified.keysChecked) keys checked")
        try store.close()
        say()
        try ObjectTour(path: path + "/objects", say: say).run()
        say()
        say("Done. Every commit above was durable when it returned; a crash at any moment keeps exactly the committed transactions.")
    }

    func city(_ json: [UInt8]?) -> String {
        guard let json, let text = String(bytes: json, encoding: .utf8),
              let range = text.range(of: #""city":""#) else { return "?" }
        return String(text[range.upperBound...].prefix { $0 != "\"" })
    }
}
