// Engine keys of primary keys and indexed values: order, round trips, canonical strings.

import XCTest
import StrataTestSupport
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

final class RowFormatTests: XCTestCase {
    func testTheRowLayoutIsTheDocumentedOne() throws {
        // docs/FORMAT.md: header, end offsets, tagged fields.
        let row = RowFormat.encode([.int(1), .string("ab"), .null])
        XCTAssertEqual(row, [1, 0, 3, 0, 9, 0, 0, 0, 16, 0, 0, 0, 17, 0, 0, 0,
                             3, 1, 0, 0, 0, 0, 0, 0, 0,
                             6, 2, 0, 0, 0, 0x61, 0x62,
                             0])
        XCTAssertEqual(try RowFormat.fields(of: row), [.int(1), .string("ab"), .null])
        XCTAssertEqual(try RowFormat.field(1, of: row), .string("ab"))
        XCTAssertEqual(try RowFormat.field(7, of: row), .null, "a field past the row's count reads as null")
        XCTAssertEqual(try RowFormat.changedFields(from: row, to: RowFormat.encode([.int(1), .string("ac"), .null])).indices, [1])
        XCTAssertThrowsError(try RowFormat.fields(of: [1, 0, 9, 0]))
        let nested = RowFormat.encode([.list([.int(2), .list([.string("x")])]), .date(Date(timeIntervalSinceReferenceDate: 5)), .uuid(UUID()), .decimal(Decimal(string: "1.25")!)])
        XCTAssertEqual(try RowFormat.encode(RowFormat.fields(of: nested)), nested)
    }

    /// Splicing (how imports update rows without decoding them) gives exactly the row that
    /// decoding, replacing and re-encoding gives, including rows widened by new properties;
    /// a damaged offset table is refused.
    func testSplicingEqualsDecodeReplaceEncode() throws {
        var generator = SplitMix64(seed: 3)
        func randomField() -> FieldValue {
            switch Int.random(in: 0 ..< 7, using: &generator) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &generator))
            case 2: return .int(Int64.random(in: .min ... .max, using: &generator))
            case 3: return .double(Double.random(in: -1e9 ... 1e9, using: &generator))
            case 4: return .string(String(repeating: "é", count: Int.random(in: 0 ... 40, using: &generator)))
            case 5: return .list((0 ..< Int.random(in: 0 ... 3, using: &generator)).map { .int(Int64($0)) })
            default: return .link(PrimaryKeyValue.int(Int64.random(in: 0 ... 99, using: &generator)).keyBytes)
            }
        }
        for _ in 0 ..< 500 {
            let oldCount = Int.random(in: 0 ... 6, using: &generator)
            let count = oldCount + Int.random(in: 0 ... 2, using: &generator)
            let old = (0 ..< oldCount).map { _ in randomField() }
            let replacements: [FieldValue?] = (0 ..< count).map { _ in Bool.random(using: &generator) ? randomField() : nil }
            let spliced = try RowFormat.splice(RowFormat.encode(old), count: count) { replacements[$0] }
            let expected = (0 ..< count).map { replacements[$0] ?? ($0 < oldCount ? old[$0] : .null) }
            XCTAssertEqual(spliced, RowFormat.encode(expected))
        }
        var damaged = RowFormat.encode([.int(1), .string("abc")])
        damaged[8] = 0xFF                      // the second field's end offset points past the row
        XCTAssertThrowsError(try RowFormat.splice(damaged, count: 2) { _ in nil })
    }
}
