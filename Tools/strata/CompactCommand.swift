// `strata compact <store> [--dry-run]`: rewrite the live records, report what came back.

import ArgumentParser
import Foundation
import Strata

struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Reclaim the space of overwritten and deleted records.",
        discussion: "Prints disk bytes before and after, the bytes reclaimed and the time taken.")

    @OptionGroup var target: StoreArgument
    @Flag(help: "Only say what compaction would do.")
    var dryRun = false

    func run() throws {
        let store = try target.open(readOnly: dryRun)
        defer { try? store.close() }
        if dryRun {
            let estimate = store.compactionEstimate()
            print("would rewrite \(estimate.segments) segment(s), \(formatBytes(estimate.bytes)): keep \(formatBytes(estimate.liveBytes)) live, reclaim \(formatBytes(estimate.reclaimableBytes))")
            return
        }
        let progress = Progress(label: "compacting")
        progress.status("rewriting live records")
        let report = try store.compact()
        progress.finish()
        print("before:    \(formatBytes(report.diskBytesBefore)) (\(report.diskBytesBefore) bytes)")
        print("after:     \(formatBytes(report.diskBytesAfter)) (\(report.diskBytesAfter) bytes)")
        print("reclaimed: \(formatBytes(report.reclaimedBytes)) (\(report.reclaimedBytes) bytes)")
        print(String(format: "seconds:   %.3f", report.seconds))
        print("segments:  \(report.segmentsCompacted) rewritten into \(report.segmentsWritten); \(report.recordsCopied) records copied, \(report.tombstonesKept) tombstones kept")
    }
}
