// The row writer's byte operations (RowFormat+Patch) against the plain encoder and decoder
// as the oracle: a row patched field by field is byte for byte the row encoded from the
// values, and `validate` accepts exactly the rows the decoder reads.

import XCTest
import Foundation
@testable import Strata
import StrataTestSupport

final class RowPatchTests: XCTestCase {
    /// A random value of any kind, nested a little (lists, maps, embedded rows).
    private func value(_ random: inout SplitMix64, depth: Int = 0) -> FieldValue {
        let kinds = depth < 2 ? 15 : 12
        switch Int.random(in: 0 ..< kinds, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(Int64.random(in: .min ... .max, using: &random))
        case 3: return .double(Double.random(in: -1e9 ... 1e9, using: &random))
        case 4: return .float(Float.random(in: -1e6 ... 1e6, using: &random))
        case 5:
            let alphabet: [Character] = ["a", "b", "z", "0", " ", "é", "😀", "\u{7FF}"]
            return .string(String((0 ..< Int.random(in: 0 ..< 40, using: &random)).map { _ in alphabet.randomElement(using: &random)! }))
        case 6: return .data(Data((0 ..< Int.random(in: 0 ..< 20, using: &random)).map { _ in UInt8.random(in: 0 ... 255, using: &random) }))
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000 ... 1_000_000, using: &random))))
        case 8: return .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, UInt8.random(in: 0 ... 255, using: &random))))
        case 9: return .objectId(ObjectId(bytes: (0 ..< 12).map { _ in UInt8.random(in: 0 ... 255, using: &random) })!)
        case 10: return .link(Array("key\(Int.random(in: 0 ..< 1000, using: &random))".utf8))
        case 11: return .decimal(Decimal(Int.random(in: -10_000 ... 10_000, using: &random)) / 100)
        case 12: return .list((0 ..< Int.random(in: 0 ..< 4, using: &random)).map { _ in value(&random, depth: depth + 1) })
        case 13: return .map(Dictionary(uniqueKeysWithValues: (0 ..< Int.random(in: 0 ..< 3, using: &random)).map { i in ("k\(i)", value(&random, depth: depth + 1)) }))
        default: return .embedded((0 ..< 3).map { _ in value(&random, depth: depth + 1) })
        }
    }

    /// 2,000 rows, each changed 20 times at random places with random values (same-size
    /// numbers over numbers, and every change of size): after each change the row is the
    /// values' own encoding, byte for byte, and decodes to them.
    func testAPatchedRowIsTheEncodingOfItsValues() throws {
        let seed = TestEnvironment.seed(default: 0x5EED_0025)
        var random = SplitMix64(seed: seed)
        for round in 0 ..< 2_000 {
            var values = (0 ..< Int.random(in: 1 ... 8, using: &random)).map { _ in value(&random) }
            var row = RowFormat.encode(values)
            XCTAssertNoThrow(try RowFormat.validate(row))
            for step in 0 ..< 20 {
                let index = Int.random(in: 0 ..< values.count + 1, using: &random)
                let new = value(&random)
                RowFormat.replaceField(index, in: &row, with: new)
                if index == values.count { values.append(new) } else { values[index] = new }
                guard row == RowFormat.encode(values) else {
                    return XCTFail("seed \(seed), row \(round), step \(step): setting field \(index) to \(new) gave other bytes than encoding the values")
                }
            }
            XCTAssertEqual(try RowFormat.fields(of: row), values, "seed \(seed), row \(round)")
        }
    }

    /// A row written before a property was appended is widened with nulls when a later
    /// property is set.
    func testSettingAFieldPastTheRowsEndWidensItWithNulls() throws {
        var row = RowFormat.encode([.int(1), .string("a")])
        RowFormat.replaceField(4, in: &row, with: .double(2.5))
        XCTAssertEqual(row, RowFormat.encode([.int(1), .string("a"), .null, .null, .double(2.5)]))
    }

    /// `validate` (which skips building the common values) accepts exactly the rows that
    /// the decoder reads: 20,000 random rows with one to three bytes changed, and rows cut
    /// short.
    func testValidateAgreesWithTheDecoderOnDamagedRows() throws {
        let seed = TestEnvironment.seed(default: 0xDA4A_6E25)
        var random = SplitMix64(seed: seed)
        var damaged = 0
        for round in 0 ..< 20_000 {
            var row = RowFormat.encode((0 ..< Int.random(in: 1 ... 6, using: &random)).map { _ in value(&random) })
            if Bool.random(using: &random) {
                for _ in 0 ..< Int.random(in: 1 ... 3, using: &random) {
                    row[Int.random(in: 0 ..< row.count, using: &random)] = UInt8.random(in: 0 ... 255, using: &random)
                }
            } else {
                row.removeLast(Int.random(in: 1 ... row.count, using: &random))
            }
            let decodes = (try? RowFormat.fields(of: row)) != nil
            let valid = (try? RowFormat.validate(row)) != nil
            if !decodes { damaged += 1 }
            guard decodes == valid else {
                return XCTFail("seed \(seed), row \(round): the decoder \(decodes ? "reads" : "refuses") \(row), validate \(valid ? "accepts" : "refuses") it")
            }
        }
        XCTAssertGreaterThan(damaged, 5_000, "the damage must reach the decoder's checks")
    }
}
