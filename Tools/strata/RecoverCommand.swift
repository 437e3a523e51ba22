// `strata recover <damaged-store> <new-store> [--json]`: salvage every intact committed record
// of a store that may no longer open into a new store, and report what was lost.

import ArgumentParser
import Foundation
import Strata

struct RecoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Copy every intact committed record of a damaged store into a new store.",
        discussion: """
            Each segment file is read on its own (the manifest, hints and other files are not \
            trusted): log segments give their complete transactions, compacted segments their \
            intact records; for each key the newest version wins. The damaged store is only \
            read. An encrypted store (--key-file) is recovered into one encrypted with the same key. Exit 0 when the new store was written (what was lost is listed), 1 when it \
            could not be.
            """)

    @Argument(help: "The damaged store's directory (only read).")
    var damaged: String
    @Argument(help: "A new directory for the recovered store (must not exist or be empty).")
    var destination: String
    @Flag(help: "The report as JSON.")
    var json = false
    @OptionGroup var key: KeyFileOption

    func run() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: damaged, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure(message: "no store at \(damaged) (not a directory)")
        }
        let progress = Progress(label: "recovering")
        progress.status("reading segments")
        // An encrypted store is recovered into a store encrypted with the same key.
        let report = try Store.salvage(from: URL(fileURLWithPath: damaged), into: URL(fileURLWithPath: destination),
                                       options: try key.options())
        progress.finish()
        if json {
            let object: [String: Any] = [
                "segments": report.segments, "transactions": report.transactions, "compactedRecords": report.compactedRecords,
                "keys": report.keys, "lastSequence": Int(report.lastSequence),
                "incompleteTransactions": report.incompleteTransactions, "unreadableFiles": report.unreadableFiles,
                "damage": report.damage.map { ["file": $0.file, "offset": $0.offset, "length": $0.length, "reason": $0.reason] },
                "missingSequences": report.missingSequences.map { [Int($0.lowerBound), Int($0.upperBound)] },
                "lostSomething": report.lostSomething,
            ]
            print(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted]), as: UTF8.self))
            return
        }
        print("recovered \(report.keys) keys into \(destination): \(report.transactions) transactions, \(report.compactedRecords) compacted records, from \(report.segments) segments (newest sequence \(report.lastSequence))")
        if !report.lostSomething && report.missingSequences.isEmpty {
            print("nothing was lost")
            return
        }
        for file in report.unreadableFiles { print("lost: unreadable file \(file)") }
        for damage in report.damage { print("lost: damaged \(damage)") }
        if report.incompleteTransactions > 0 {
            print("lost: \(report.incompleteTransactions) transaction\(report.incompleteTransactions == 1 ? "" : "s") without an intact commit record")
        }
        if !report.missingSequences.isEmpty {
            let ranges = report.missingSequences.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)–\($0.upperBound)" }
            print("lost: transactions \(ranges.joined(separator: ", ")) were not found")
        }
    }
}
