// `strata verify <store>`: check every record; exit 1 on damage, naming segment and offset.

import ArgumentParser
import Foundation
import Strata

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every record of a store.",
        discussion: "Exit 1 if anything is damaged, with one line per problem naming the segment file and byte offset.")

    @OptionGroup var target: StoreArgument

    func run() throws {
        // Opening already checks headers, hint files and the newest segment's tail; a
        // store too damaged to open fails here, with the segment and offset in the message.
        let store = try target.open(readOnly: true)
        defer { try? store.close() }
        let progress = Progress(label: "verifying")
        let report = try store.verify(progress: progress.update)
        progress.finish()
        for problem in report.problems {
            print("damaged: \(problem)")
        }
        let summary = "\(report.segmentsChecked) segment(s), \(report.recordsChecked) records, \(report.keysChecked) keys, \(formatBytes(report.bytesChecked)) checked"
        if report.isClean {
            print("ok: \(summary)")
        } else {
            print("DAMAGED: \(report.problems.count) problem(s); \(summary)")
            throw ExitCode(1)
        }
    }
}
