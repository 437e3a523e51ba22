// `strata stats <store> [--json]`: where the bytes are.

import ArgumentParser
import Foundation
import Strata

struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show segments, live and dead bytes, objects per type, keys per table, index memory and compression.")

    @OptionGroup var target: StoreArgument
    @Flag(help: "Print JSON instead of text.")
    var json = false

    struct Output: Codable {
        struct Segment: Codable {
            var id: UInt32, diskBytes: Int, liveBytes: Int, deadBytes: Int, sealed: Bool, compacted: Bool
        }
        var segments: Int, liveBytes: Int, deadBytes: Int, diskBytes: Int, keys: Int, indexBytes: Int
        var compressionRatio: Double, lastSequence: UInt64
        var keysPerTable: [String: Int]
        /// What each table holds, by number, when the store holds an object-layer schema.
        var tableNames: [String: String]?
        /// Objects per type, when the store holds an object-layer schema.
        var objectsPerType: [String: Int]?
        var segmentDetails: [Segment]
    }

    func run() throws {
        let store = try target.open(readOnly: true)
        defer { try? store.close() }
        let stats = store.stats
        let tables = store.keysPerTable
        let inspector = try StoreInspector(store: store)
        let objects = inspector.map { inspector in
            Dictionary(uniqueKeysWithValues: inspector.schema.objectSchemas.map { ($0.className, inspector.count(ofType: $0.className)) })
        }
        let names = inspector.map { inspector in tables.keys.reduce(into: [UInt32: String]()) { $0[$1] = inspector.tableName($1) } }
        if json {
            let output = Output(
                segments: stats.segments, liveBytes: stats.liveBytes, deadBytes: stats.deadBytes, diskBytes: stats.diskBytes,
                keys: stats.keys, indexBytes: stats.indexBytes, compressionRatio: stats.compressionRatio,
                lastSequence: stats.lastSequence,
                keysPerTable: Dictionary(uniqueKeysWithValues: tables.map { (String($0.key), $0.value) }),
                tableNames: names.map { Dictionary(uniqueKeysWithValues: $0.map { (String($0.key), $0.value) }) },
                objectsPerType: objects,
                segmentDetails: stats.segmentDetails.map {
                    .init(id: $0.id, diskBytes: $0.diskBytes, liveBytes: $0.liveBytes, deadBytes: $0.deadBytes,
                          sealed: $0.sealed, compacted: $0.compacted)
                })
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(output), as: UTF8.self))
            return
        }
        let total = max(1, stats.liveBytes + stats.deadBytes)
        print("segments:     \(stats.segments)")
        print("live bytes:   \(formatBytes(stats.liveBytes)) (\(stats.liveBytes * 100 / total)%)")
        print("dead bytes:   \(formatBytes(stats.deadBytes)) (\(stats.deadBytes * 100 / total)%; `strata compact` reclaims them)")
        print("disk bytes:   \(formatBytes(stats.diskBytes)) (all files)")
        print("keys:         \(stats.keys)")
        print("index memory: \(formatBytes(stats.indexBytes))")
        print(String(format: "compression:  %.2f× over live values", stats.compressionRatio))
        print("last commit:  sequence \(stats.lastSequence)")
        if let objects {
            print("schema:       version \(inspector!.schema.version), \(objects.count) types")
            for name in objects.keys.sorted() {
                print("  \(name): \(objects[name]!) objects")
            }
        }
        for table in tables.keys.sorted() {
            print("table \(table)" + (names?[table].map { " (\($0))" } ?? "") + ": \(tables[table]!) keys")
        }
        for segment in stats.segmentDetails {
            let state = segment.sealed ? (segment.compacted ? "compacted" : "sealed") : "active"
            print("  \(segment.id) \(state): \(formatBytes(segment.diskBytes)), \(formatBytes(segment.liveBytes)) live")
        }
    }
}
