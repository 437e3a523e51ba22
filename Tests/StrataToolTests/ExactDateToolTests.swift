// Dates through `strata export` and `strata import`: the text export writes reads back to
// the very same `Date` (every bit of its Double), so an export imported into the store it
// came from changes nothing.

import Foundation
import XCTest
import Strata

extension ToolTests {
    func testExportedDatesImportBackExactly() throws {
        let dates: [String: Date] = [
            "now": Date(),
            "micro": Date(timeIntervalSinceReferenceDate: 721_692_800.123_456_7),
            "tiny": Date(timeIntervalSinceReferenceDate: 1e-9),
            "before1970": Date(timeIntervalSince1970: -1_234_567.891_011),
            "whole": Date(timeIntervalSince1970: 86_400),
            "lastBit": Date(timeIntervalSinceReferenceDate: 721_692_800.999_999_999_9.nextDown),
        ]
        var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                for (name, born) in dates { try realm.create(ToolPet.self, value: ["name": name, "born": born]) }
            }
        }
        let exported = try strata("query", directory, "Pet", "--json")
        XCTAssertEqual(exported.status, 0, exported.stderr)
        XCTAssertTrue(exported.stdout.contains(#""born" : "1970-01-02T00:00:00.000Z""#), "whole milliseconds keep three digits: \(exported.stdout)")
        let file = try write(exported.stdout, to: "pets-dates.json")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let run = try strata("import", directory, "--type", "Pet", file)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stdout, "Pet: 0 inserted, 0 updated, \(dates.count) unchanged\n", "an export imported into its own store changes nothing")

        // Imported into a fresh store, the app reads the same Dates, to the last bit.
        let copy = directory + "-dates-copy"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        var copyConfig = config
        copyConfig.directory = URL(fileURLWithPath: copy)
        _ = try Realm(configuration: copyConfig)
        let copied = try strata("import", copy, "--type", "Pet", file)
        XCTAssertEqual(copied.status, 0, copied.stderr)
        let realm = try Realm(configuration: copyConfig)
        for (name, born) in dates {
            let read = try XCTUnwrap(realm.object(ofType: ToolPet.self, forPrimaryKey: name)).born
            XCTAssertEqual(read.timeIntervalSinceReferenceDate.bitPattern, born.timeIntervalSinceReferenceDate.bitPattern,
                           "\(name): \(read.timeIntervalSinceReferenceDate) for \(born.timeIntervalSinceReferenceDate)")
        }
    }
}
