// Issue 13, finding 16: a row's offsets and lengths are 32 bits; a row past 4 GiB must give
// an error, not trap on UInt32(...).

import XCTest
@testable import Strata

final class ReliabilityRowSizeTests: XCTestCase {
    /// Finding 16: a row's offsets and lengths are 32 bits. The check that replaces the trap
    /// of `UInt32(...)` is tested on sizes alone (a real 4 GiB row is not allocated).
    func testRowsBeyondFourGiBAreRefusedWithAnErrorNotATrap() throws {
        XCTAssertEqual(try RowFormat.checkedLength(Int(UInt32.max), of: "field 2"), UInt32.max)
        XCTAssertEqual(try RowFormat.checkedLength(0, of: "field 0"), 0)
        XCTAssertThrowsError(try RowFormat.checkedLength(Int(UInt32.max) + 1, of: "field 2")) { error in
            guard case .invalidValue(let message) = error as? RealmError else { return XCTFail("\(error)") }
            XCTAssertEqual(message, "field 2 needs 4294967296 bytes; a row's offsets and lengths are 32 bits (at most 4294967295)")
        }
        XCTAssertThrowsError(try RowFormat.checkedLength(1 << 40, of: "a string"))
        // The checked encoder gives the same bytes as the plain one for ordinary rows.
        let fields: [FieldValue] = [.int(1), .string("ab"), .list([.data(Data([1, 2]))]), .null]
        XCTAssertEqual(try RowFormat.encodeChecked(fields), RowFormat.encode(fields))
        XCTAssertEqual(try RowFormat.checked([1, 0, 1, 0, 1, 0, 0, 0, 0], count: 1, of: "a row"), [1, 0, 1, 0, 1, 0, 0, 0, 0])
    }
}
