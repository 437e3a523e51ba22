// Every public declaration of Strata and StrataStorage carries a documentation comment
// (DocC builds without warnings, `make docs`, but does not flag a symbol with none).
// Underscored members (`_slot()`, ...) are implementation hooks DocC hides; overrides
// inherit their documentation.

import Foundation
import XCTest

final class DocumentationCoverageTests: XCTestCase {
    func testEveryPublicDeclarationIsDocumented() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
        let declaration = try NSRegularExpression(pattern: #"^\s*(@[\w.]+(\([^)]*\))?\s+)*(public|open)\s"#)
        var undocumented: [String] = []
        var files = 0
        for module in ["Strata", "StrataStorage"] {
            let root = sources.appendingPathComponent(module)
            let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
            while let file = enumerator?.nextObject() as? URL {
                guard file.pathExtension == "swift" else { continue }
                files += 1
                let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
                for (number, line) in lines.enumerated() {
                    let range = NSRange(line.startIndex..., in: line)
                    guard declaration.firstMatch(in: line, range: range) != nil else { continue }
                    let words = line.split(whereSeparator: { " \t(:{<".contains($0) })
                    if words.contains("override") || words.contains("extension") || words.contains(where: { $0.hasPrefix("_") }) { continue }
                    // The comment may sit above attribute lines.
                    var previous = number - 1
                    while previous >= 0, lines[previous].trimmingCharacters(in: .whitespaces).hasPrefix("@") { previous -= 1 }
                    let above = previous >= 0 ? lines[previous].trimmingCharacters(in: .whitespaces) : ""
                    if !above.hasPrefix("///") && !above.hasSuffix("*/") {
                        undocumented.append("\(module)/\(file.lastPathComponent):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        XCTAssertGreaterThan(files, 40, "the sources were found")
        XCTAssertEqual(undocumented, [], "public declarations without a /// comment")
    }
}
