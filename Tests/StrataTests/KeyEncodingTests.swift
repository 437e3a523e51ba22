// Engine keys of primary keys and indexed values: order, round trips, canonical strings.

import XCTest
@testable import Strata

final class KeyEncodingTests: XCTestCase {
    func testIntegerKeysSortNumericallyAndRoundTrip() {
        let values: [Int64] = [.min, -1_000_000, -1, 0, 1, 255, 256, 1 << 40, .max]
        let keys = values.map { PrimaryKeyValue.int($0).keyBytes }
        XCTAssertEqual(keys, keys.sorted { $0.lexicographicallyPrecedes($1) })
        for (value, key) in zip(values, keys) {
            XCTAssertEqual(PrimaryKeyValue(keyBytes: key), .int(value))
            XCTAssertEqual(PrimaryKeyValue.int(value).withKeyBytes { Array($0) }, key, "no-allocation path for \(value)")
        }
    }

    func testStringAndUUIDKeysRoundTripAndStringsAreCanonical() {
        let uuid = UUID()
        XCTAssertEqual(PrimaryKeyValue(keyBytes: PrimaryKeyValue.uuid(uuid).keyBytes), .uuid(uuid))
        XCTAssertEqual(PrimaryKeyValue(keyBytes: PrimaryKeyValue.string("héllo").keyBytes), .string("héllo"))
        XCTAssertEqual(PrimaryKeyValue.string("\u{E9}").keyBytes, PrimaryKeyValue.string("e\u{301}").keyBytes,
                       "canonically equivalent strings are one key")
        XCTAssertEqual(PrimaryKeyValue.string("x").withKeyBytes { Array($0) }, PrimaryKeyValue.string("x").keyBytes)
        XCTAssertNil(PrimaryKeyValue(keyBytes: []))
        XCTAssertNil(PrimaryKeyValue(keyBytes: [0x69, 1, 2]))
    }

    func testIndexValueKeysTreatEqualValuesAlike() {
        XCTAssertEqual(IndexValueKey.bytes(for: .double(0)), IndexValueKey.bytes(for: .double(-0.0)))
        XCTAssertNotEqual(IndexValueKey.bytes(for: .bool(true)), IndexValueKey.bytes(for: .data(Data([1]))))
        XCTAssertNotEqual(IndexValueKey.bytes(for: .int(1)), IndexValueKey.bytes(for: .string("1")))
    }
}
