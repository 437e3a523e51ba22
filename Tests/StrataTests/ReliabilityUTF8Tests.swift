// Issue 13, finding 18: invalid UTF-8 in a stored string is damage (docs/FORMAT.md), never
// silently repaired.

import XCTest
@testable import Strata

final class ReliabilityUTF8Tests: XCTestCase {
    /// Finding 18: FORMAT.md says a string that is not UTF-8 makes the row damaged; decoding
    /// used to repair it silently (U+FFFD). Now decoding fails, as documented.
    func testInvalidUTF8InAStoredStringIsDamage() throws {
        let good = RowFormat.encode([.int(7), .string("héllo")])
        XCTAssertEqual(try RowFormat.field(1, of: good), .string("héllo"))
        // Tag 6, length 5, then bytes: 'h', 0xC3 0xA9 (é), 'l' → 'h', 0xFF, 0xA9, 'l', 'o'.
        var bad = good
        let start = bad.count - 5
        XCTAssertEqual(bad[start], 0xC3)
        bad[start] = 0xFF
        XCTAssertThrowsError(try RowFormat.field(1, of: bad)) { error in
            XCTAssertTrue("\(error)".contains("not valid UTF-8"), "\(error)")
        }
        XCTAssertThrowsError(try RowFormat.fields(of: bad))
        XCTAssertEqual(try RowFormat.field(0, of: bad), .int(7), "other fields still read")
        // Truncated sequences, surrogates and overlong forms too, inside lists as well.
        for invalid: [UInt8] in [[0xE2, 0x82], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80]] {
            var row: [UInt8] = [1, 0, 1, 0]
            let body: [UInt8] = [12] + le32(4 + 1 + 4 + invalid.count) + le32(1) + [6] + le32(invalid.count) + invalid
            row += le32(body.count) + body
            XCTAssertThrowsError(try RowFormat.fields(of: row), "\(invalid)")
        }
        // Empty strings and every valid scalar width still read.
        let text = "a\u{7FF}\u{FFFF}\u{10FFFF}😀"
        XCTAssertEqual(try RowFormat.fields(of: RowFormat.encode([.string(""), .string(text)])), [.string(""), .string(text)])
    }

    private func le32(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(value).littleEndian) { Array($0) } }
}
