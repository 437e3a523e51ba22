// Our JSON reader and writer on the JSONTestSuite "minefield" (Nicolas Seriot, MIT; copied
// into Fixtures/): every y_ file parses, every n_ file fails with an error (never a trap),
// i_ files either way — the choices are pinned here and documented in docs/json.md.

import XCTest
import StrataTestSupport
@testable import Strata

final class JSONReaderTests: XCTestCase {
    static let minefield = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/minefield")
    /// Real payloads (some trimmed); their source is in Fixtures/payloads/README.md.
    static let payloads = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/payloads")

    private func files(_ prefix: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: Self.minefield, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasPrefix(prefix) && $0.pathExtension == "json" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    func testEveryAcceptFileParsesAndRoundTrips() throws {
        let accept = try files("y_")
        XCTAssertEqual(accept.count, 95)
        for file in accept {
            do {
                let value = try JSONValue(data: Data(contentsOf: file))
                // What we write, we read back to the same value.
                XCTAssertEqual(try JSONValue(data: value.data()), value, file.lastPathComponent)
                XCTAssertEqual(try JSONValue(data: value.data(prettyPrinted: true)), value, file.lastPathComponent)
            } catch {
                XCTFail("\(file.lastPathComponent): \(error)")
            }
        }
    }

    func testEveryRejectFileFailsWithAnOffset() throws {
        let reject = try files("n_")
        XCTAssertEqual(reject.count, 188)
        for file in reject {
            do {
                let value = try JSONValue(data: Data(contentsOf: file))
                XCTFail("\(file.lastPathComponent) parsed as \(value)")
            } catch let error as JSONError {
                XCTAssertNotNil(error.offset, "\(file.lastPathComponent): \(error)")
            }
        }
    }

    func testImplementationDefinedFilesAreDecidedAsDocumented() throws {
        // Accepted: numbers that round (huge or tiny exponents within Double's range, long
        // integers become Doubles), and valid-but-unusual text; refused: numbers beyond
        // Double's range, invalid UTF-8, unpaired surrogates, and non-UTF-8 encodings.
        var accepted: [String] = [], refused: [String] = []
        for file in try files("i_") {
            if (try? JSONValue(data: Data(contentsOf: file))) != nil {
                accepted.append(file.lastPathComponent)
            } else {
                refused.append(file.lastPathComponent)
            }
        }
        XCTAssertEqual(accepted.count + refused.count, 35)
        XCTAssertTrue(accepted.contains("i_number_double_huge_neg_exp.json"))
        XCTAssertTrue(accepted.contains("i_structure_500_nested_arrays.json"))
        XCTAssertTrue(refused.contains("i_number_huge_exp.json"))
        XCTAssertTrue(refused.contains("i_string_UTF-16LE_with_BOM.json"))
        print("minefield i_: \(accepted.count) accepted, \(refused.count) refused")
        print("accepted: \(accepted.joined(separator: " "))")
    }

    func testValuesOffsetsAndLimits() throws {
        XCTAssertEqual(try JSONValue(string: #"{"id": 1234567890123456789, "x": -9223372036854775808, "d": 0.1, "e": 1e2}"#),
                       .object(["id": .int(1_234_567_890_123_456_789), "x": .int(.min), "d": .double(0.1), "e": .double(100)]))
        XCTAssertEqual(try JSONValue(string: "18446744073709551616"), .double(18_446_744_073_709_551_616))
        XCTAssertEqual(try JSONValue(string: #""\u00e9\ud83d\ude00 \"q\" \\ \/""#), .string("é😀 \"q\" \\ /"))
        XCTAssertThrowsError(try JSONValue(string: #"{"a": [1, 2,]}"#)) { error in
            XCTAssertEqual(error as? JSONError, .unexpectedCharacter(UInt8(ascii: "]"), offset: 12))
            XCTAssertEqual("\(error)", "unexpected ']' at byte 12")
        }
        XCTAssertThrowsError(try JSONValue(bytes: [0x22, 0xFF, 0x22])) { XCTAssertEqual($0 as? JSONError, .invalidUnicode(offset: 1)) }
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        XCTAssertThrowsError(try JSONValue(string: deep)) { XCTAssertEqual($0 as? JSONError, .tooDeep(limit: 512, offset: 512)) }
        // A raw control character or a bad UTF-8 byte at any position in a long string (the
        // reader scans eight bytes at a time) is refused, at its own offset.
        for position in 0 ..< 24 {
            for (bad, expected) in [(UInt8(0x01), JSONError.controlCharacterInString(offset: position + 2)),
                                    (UInt8(0x1F), .controlCharacterInString(offset: position + 2)),
                                    (UInt8(0xFF), .invalidUnicode(offset: position + 2))] {
                var bytes = Array(#"[""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: position) + [bad]
                bytes += Array(repeating: UInt8(ascii: "b"), count: 20) + Array(#""]"#.utf8)
                XCTAssertThrowsError(try JSONValue(bytes: bytes)) { XCTAssertEqual($0 as? JSONError, expected, "at \(position)") }
                XCTAssertThrowsError(try JSONValue(bytes: Array("{\"".utf8) + bytes.dropFirst(2).dropLast(2) + Array("\":1}".utf8))) {
                    XCTAssertEqual($0 as? JSONError, expected, "key, at \(position)")
                }
            }
        }
        XCTAssertThrowsError(try JSONValue.double(.nan).data())
        // Writer: escapes, exact doubles, 64-bit integers, sorted keys.
        let value = JSONValue.object(["b": .array([.int(.max), .double(0.1), .double(-0.0), .null, .bool(true)]), "a": .string("\u{1}\n\"")])
        XCTAssertEqual(String(decoding: try value.data(), as: UTF8.self), #"{"a":"\u0001\n\"","b":[9223372036854775807,0.1,-0.0,null,true]}"#)
        XCTAssertEqual(value[keyPath: "b.0"], .int(.max))
        XCTAssertEqual(try JSONValue(any: value.anyValue), value.replacingNegativeZero())
    }

    /// Random documents with strings that put quotes, escapes, control characters and
    /// multi-byte UTF-8 at every position around the reader's eight-byte scan, and many long
    /// keys (shared by the reader through a small table, where two keys can collide):
    /// written by our writer and by JSONSerialization, read back equal.
    func testRandomDocumentsRoundTrip() throws {
        var generator = SplitMix64(seed: TestEnvironment.seed(default: 11))
        let scale = TestEnvironment.fuzzScale
        let pieces = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{1}", "\u{1F}", "\u{7F}", "é", "中", "😀", "\u{FFFF}", "~"]
        func randomString(_ maxLength: Int) -> String {
            String((0 ..< Int.random(in: 0 ... maxLength, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined())
        }
        // Long keys drawn from a pool larger than the reader's table, so slots are reused.
        let keyPool = (0 ..< 600).map { "key_number_\($0)_" + String(repeating: "x", count: $0 % 7) }
        func randomValue(depth: Int) -> JSONValue {
            switch Int.random(in: 0 ..< (depth > 3 ? 5 : 7), using: &generator) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &generator))
            case 2: return .int(Int64.random(in: .min ... .max, using: &generator))
            case 3: return .double(Double.random(in: -1e6 ... 1e6, using: &generator))
            case 4: return .string(randomString(40))
            case 5: return .array((0 ..< Int.random(in: 0 ... 6, using: &generator)).map { _ in randomValue(depth: depth + 1) })
            default:
                var members: [String: JSONValue] = [:]
                for _ in 0 ..< Int.random(in: 0 ... 8, using: &generator) {
                    let key = Bool.random(using: &generator) ? keyPool.randomElement(using: &generator)! : randomString(20)
                    members[key] = randomValue(depth: depth + 1)
                }
                return .object(members)
            }
        }
        for round in 0 ..< 300 * scale {
            let document = JSONValue.array((0 ..< 20).map { _ in randomValue(depth: 0) })
            let ours = try document.data()
            XCTAssertEqual(try JSONValue(data: ours), document, "round \(round)")
            let foundation = try JSONSerialization.data(withJSONObject: document.anyValue, options: [.fragmentsAllowed])
            XCTAssertEqual(try JSONValue(data: foundation).replacingNegativeZero(), document.replacingNegativeZero(), "round \(round)")
        }
    }

    func testRealPayloadsRoundTrip() throws {
        let names = ["twitter.json", "github_events.json", "citm_catalog.json", "apache_builds.json", "update-center.json"]
        for name in names {
            let data = try Data(contentsOf: Self.payloads.appendingPathComponent(name))
            let ours = try JSONValue(data: data)
            let foundation = try JSONValue(any: JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]))
            XCTAssertEqual(ours.replacingNegativeZero(), foundation.replacingNegativeZero(), name)
            XCTAssertEqual(try JSONValue(data: ours.data()), ours, name)
        }
    }
}

extension JSONValue {
    /// Foundation reads -0.0 as 0; compare modulo that.
    func replacingNegativeZero() -> JSONValue {
        switch self {
        case .double(let d) where d == 0: return .double(0)
        case .array(let a): return .array(a.map { $0.replacingNegativeZero() })
        case .object(let o): return .object(o.mapValues { $0.replacingNegativeZero() })
        default: return self
        }
    }
}
