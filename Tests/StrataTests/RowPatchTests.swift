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

    /// A write's pending rows (`PendingRows`: entries in one array, rows in one arena, an
    /// open-addressing table that grows) against a dictionary of decoded values as the
    /// oracle: 3,000 keys of two tables and of every length, 30,000 random puts, property
    /// sets (patched in place or rewritten), whole-row sets, deletions, undone inserts and
    /// restores; every key reads back its values, the counts agree, and the rows come back
    /// in the order they were first touched.
    func testPendingRowsAgreeWithADictionaryOfValues() throws {
        let seed = TestEnvironment.seed(default: 0x5EED_0026)
        var random = SplitMix64(seed: seed)
        let keys: [RowKey] = (0 ..< 3_000).map { i in
            let length = i % 40          // 0 to 39 bytes: inline lengths and longer
            return RowKey(table: UInt32(256 + 256 * (i % 2)), key: (0 ..< length).map { j in UInt8(truncatingIfNeeded: i &* 31 &+ j &* 7) } + [UInt8(i & 0xFF), UInt8(i >> 8)])
        }
        let rows = PendingRows()
        var oracle: [RowKey: [FieldValue]?] = [:]     // nil inside: deleted
        var firstTouched: [RowKey] = []
        for step in 0 ..< 30_000 {
            let key = keys[Int.random(in: 0 ..< keys.count, using: &random)]
            let values = (0 ..< Int.random(in: 1 ... 6, using: &random)).map { _ in value(&random) }
            if let pending = rows[key] {
                XCTAssertTrue(oracle[key] != nil, "seed \(seed), step \(step): a key the oracle does not hold is pending")
                switch Int.random(in: 0 ..< 6, using: &random) {
                case 0, 1:
                    guard case let current?? = oracle[key] else { continue }
                    let index = Int.random(in: 0 ..< current.count + 1, using: &random)
                    let new = value(&random)
                    pending.setField(index, new, isCollection: false)
                    var changed = current
                    if index == changed.count { changed.append(new) } else { changed[index] = new }
                    oracle[key] = .some(changed)
                case 2:
                    pending.setRow(RowFormat.encode(values))
                    oracle[key] = .some(values)
                case 3:
                    pending.fields = nil
                    oracle[key] = .some(nil)
                case 4:
                    rows.remove(key)
                    oracle[key] = nil
                default:
                    pending.restore(.fields(values))
                    oracle[key] = .some(values)
                }
            } else {
                XCTAssertNil(oracle[key] ?? nil, "seed \(seed), step \(step): a key the oracle holds is not pending")
                if !firstTouched.contains(key) { firstTouched.append(key) }
                if Bool.random(using: &random) {
                    rows.put(key, row: RowFormat.encode(values), original: nil, atomicMark: 0)
                } else {
                    rows.put(key, fields: values, original: nil)
                }
                oracle[key] = .some(values)
            }
            guard step % 3_000 == 2_999 || step == 29_999 else { continue }
            for key in keys {
                let expected = oracle[key]
                let found = rows[key]
                XCTAssertEqual(found == nil, expected == nil, "seed \(seed), step \(step): pending or not")
                guard let found, let expected else { continue }
                XCTAssertEqual(found.fields, expected, "seed \(seed), step \(step): the values of a pending row")
                XCTAssertEqual(found.isDeleted, expected == nil)
                let encoded = found.withEncodedRow { Array($0) }
                XCTAssertEqual(encoded, expected.map(RowFormat.encode), "seed \(seed), step \(step): the row written at commit")
            }
            XCTAssertEqual(rows.count, oracle.count, "seed \(seed), step \(step)")
            for table: UInt32 in [256, 512] {
                XCTAssertEqual(rows.hasRows(inTable: table), oracle.keys.contains { $0.table == table })
                XCTAssertEqual(Set(rows.rows(inTable: table).keys), Set(oracle.keys.filter { $0.table == table }))
            }
            var order: [RowKey] = []
            rows.forEach { key, _ in order.append(key) }
            XCTAssertEqual(order, firstTouched.filter { oracle[$0] != nil }, "seed \(seed), step \(step): rows in the order first touched")
        }
    }

    /// Rows whose size changes are written again at the arena's end; the bytes left behind
    /// are packed away, so two rows growing a string in turn 3,000 times hold a few times
    /// their size, not every version (about 9 MB here without packing).
    func testPendingRowsDoNotKeepEveryVersionOfAGrowingRow() throws {
        let rows = PendingRows()
        let keys = [RowKey(table: 256, key: [1]), RowKey(table: 256, key: [2])]
        for key in keys { rows.put(key, row: RowFormat.encode([.int(1), .string("")]), original: nil, atomicMark: 0) }
        // Beside them: a row in decoded values, a deleted one, an undone one (none in the arena).
        let others = [RowKey(table: 256, key: [3]), RowKey(table: 256, key: [4]), RowKey(table: 256, key: [5])]
        for key in others { rows.put(key, row: RowFormat.encode([.int(7), .string("kept")]), original: nil, atomicMark: 0) }
        rows[others[0]]!.modifyField(1) { $0 = .string("decoded") }
        rows[others[1]]!.fields = nil
        rows.remove(others[2])
        var text = ""
        for step in 0 ..< 3_000 {
            text += "x"
            for key in keys { rows[key]!.setField(1, .string(text), isCollection: false) }
            if step % 500 == 0 {
                for key in keys { XCTAssertEqual(rows[key]!.fields, [.int(1), .string(text)], "step \(step)") }
            }
        }
        for key in keys { XCTAssertEqual(rows[key]!.fields, [.int(1), .string(text)]) }
        XCTAssertEqual(rows[others[0]]?.fields, [.int(7), .string("decoded")])
        XCTAssertEqual(rows[others[1]]?.isDeleted, true)
        XCTAssertNil(rows[others[2]])
        XCTAssertEqual(rows.count, 4)
        let live = keys.reduce(0) { total, key in total + rows[key]!.withEncodedRow { $0.count }! }
        XCTAssertLessThan(rows.arenaBytes, 2 * live + (2 << 20), "the arena holds \(rows.arenaBytes) bytes for \(live) live")
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
