// Issue 13, finding 21: the JSON reader's 512-level nesting limit must hold on a small
// (512 KiB) thread stack, for parsing, writing and comparing; and strtod must not be handed
// number literals of any length.

import Foundation
import XCTest
@testable import Strata

final class ReliabilityJSONTests: XCTestCase {
    /// Runs `body` on a new thread with a 512 KiB stack (a secondary thread's size on Apple
    /// platforms) and waits for it.
    private func onSmallStack(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            body()
            done.signal()
        }
        thread.stackSize = 512 << 10
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
    }

    func testFiveHundredTwelveLevelsOnAFiveHundredTwelveKiBStack() throws {
        let arrays = String(repeating: "[", count: 512) + "1" + String(repeating: "]", count: 512)
        let objects = String(repeating: #"{"k":"#, count: 510) + #"{"k":[1.5,"x",null]}"# + String(repeating: "}", count: 510)
        let mixed = String(repeating: #"[{"a":[],"b":"#, count: 255) + "{}" + String(repeating: "}]", count: 255)
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let results = ResultBox()
        onSmallStack {
            // Parsing, writing (compact and pretty) and reading back, and releasing the
            // values, all on the small stack.
            for text in [arrays, objects, mixed] {
                do {
                    let value = try JSONValue(string: text)
                    let compact = try value.data()
                    let pretty = try value.data(prettyPrinted: true)
                    let again = try JSONValue(data: pretty)
                    results.append(String(decoding: compact, as: UTF8.self))
                    results.append(String(decoding: try again.data(), as: UTF8.self))
                } catch {
                    results.append("error: \(error)")
                }
            }
            do {
                _ = try JSONValue(string: tooDeep)
                results.append("parsed")
            } catch {
                results.append("\(error)")
            }
        }
        let values = results.values
        XCTAssertEqual(values.count, 7, "\(values.map { $0.prefix(120) })")
        guard values.count == 7 else { return }
        XCTAssertEqual(values[0], arrays)
        XCTAssertEqual(values[1], arrays)
        XCTAssertEqual(values[2], objects)
        XCTAssertEqual(values[3], objects)
        XCTAssertEqual(values[4], mixed)
        XCTAssertEqual(values[5], mixed)
        XCTAssertEqual(values[6], "nesting deeper than 512 levels at byte 512")
        // The same documents, compared on this thread.
        XCTAssertEqual(try JSONValue(string: objects), try JSONValue(string: values[3]))
        // Pretty output is unchanged by the writer's explicit stack.
        XCTAssertEqual(String(decoding: try JSONValue(string: #"{"b":[1,{"c":[]},{}],"a":{"x":null}}"#).data(prettyPrinted: true), as: UTF8.self),
                       "{\n  \"a\": {\n    \"x\": null\n  },\n  \"b\": [\n    1,\n    {\n      \"c\": []\n    },\n    {}\n  ]\n}")
    }

    /// Containers past ``JSONReader/recursionDepth`` are read with an explicit stack: read
    /// that way from the top, every minefield file gives what the recursive reader gives —
    /// the same value, or the same error at the same offset.
    func testTheExplicitStackReadsEveryMinefieldFileAsRecursionDoes() throws {
        let files = try FileManager.default.contentsOfDirectory(at: JSONReaderTests.minefield, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
        XCTAssertEqual(files.count, 95 + 188 + 35)
        var documents = try files.map { try Data(contentsOf: $0) }
        documents += [#"{"a":[1,{"b":{}},[]],"c":{"d":[{"e":null}]},"a":2}"#, #"[[[[1],[2,[3]]]],{"x":[{"y":[]}]}]"#,
                      #"{"k":[1,2,}"#, #"[{"a" 1}]"#, #"[{"a":1,]"#, #"{"a":[}"#, "[1 2]", "[[[[", #"{"a":{"b":"#]
            .map { Data($0.utf8) }
        for (index, document) in documents.enumerated() {
            func read(_ limit: Int) -> String {
                document.withUnsafeBytes { bytes in
                    do { return "\(try JSONReader.parse(bytes, recursionLimit: limit))" } catch { return "error: \(error)" }
                }
            }
            let recursive = read(JSONReader.maxDepth + 1)
            for limit in [0, 1, 2] {
                XCTAssertEqual(read(limit), recursive, index < files.count ? files[index].lastPathComponent : String(decoding: document, as: UTF8.self))
            }
            // The writer's explicit stack writes what its recursion writes, compact and pretty.
            guard let value = try? JSONValue(data: document) else { continue }
            for pretty in [false, true] {
                var recursiveWriter = JSONWriter(pretty: pretty), deepWriter = JSONWriter(pretty: pretty)
                let wrote = (try? recursiveWriter.write(value, depth: 0)) != nil
                XCTAssertEqual((try? deepWriter.writeDeep(value, depth: 0)) != nil, wrote)
                XCTAssertEqual(deepWriter.bytes, recursiveWriter.bytes, "\(index) pretty: \(pretty)")
            }
        }
    }

    /// strtod gets at most `JSONReader.maxNumberLength` bytes: a longer literal is refused at
    /// its first byte; literals up to the limit (exact decimal expansions of doubles run to
    /// about 770 significant digits) still read correctly rounded.
    func testNumberLiteralsAreBoundedBeforeStrtod() throws {
        let limit = JSONReader.maxNumberLength
        XCTAssertGreaterThanOrEqual(limit, 1100)
        let long = "1." + String(repeating: "0", count: limit) + "1"
        XCTAssertThrowsError(try JSONValue(string: "[" + long + "]")) { error in
            XCTAssertEqual(error as? JSONError, .invalidNumber(offset: 1))
            XCTAssertEqual("\(error)", "invalid number at byte 1")
        }
        XCTAssertThrowsError(try JSONValue(string: #"{"a": -"# + String(repeating: "9", count: limit + 1) + "}")) { error in
            XCTAssertEqual(error as? JSONError, .invalidNumber(offset: 6))
        }
        XCTAssertThrowsError(try JSONValue(string: "0.000" + String(repeating: "0", count: 10 * limit)))
        // At the limit: correctly rounded.
        let atLimit = "1." + String(repeating: "0", count: limit - 3) + "1"
        XCTAssertEqual(atLimit.utf8.count, limit)
        XCTAssertEqual(try JSONValue(string: atLimit), .double(1))
        // The exact value of the smallest subnormal double, 0.000…4940656…, reads as itself.
        let exact = "4.9406564584124654417656879286822137236505980e-324"
        XCTAssertEqual(try JSONValue(string: exact), .double(Double.leastNonzeroMagnitude))
        let halfway = "0." + String(repeating: "0", count: 323) + "2470328229206232720882844" + String(repeating: "0", count: 600) + "1"
        XCTAssertLessThanOrEqual(halfway.utf8.count, limit)
        XCTAssertEqual(try JSONValue(string: halfway), .double(Double.leastNonzeroMagnitude), "above half the smallest subnormal rounds up")
        // Streaming reads use the same rule.
        let streamed = Array(("[" + long + "]").utf8)
        XCTAssertThrowsError(try streamed.withUnsafeBytes { try JSONReader.streamArray($0, envelope: nil, restart: {}) { _, _, _ in } }) { error in
            XCTAssertEqual(error as? JSONError, .invalidNumber(offset: 1))
        }
    }
}

/// Strings collected on another thread.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ value: String) { lock.lock(); stored.append(value); lock.unlock() }
    var values: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
