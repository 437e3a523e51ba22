// Issue 13, finding 17 through the tool: `strata dump` and `stats` on a store whose stored
// schema is hostile fail with a one-line error and exit status 1, never a crash.

import Foundation
import XCTest
import StrataStorage

extension ToolTests {
    func testDumpOfAHostileSchemaIsAnErrorNotACrash() throws {
        let store = try Store(path: directory)
        let schema = #"{"objectSchemas":[{"className":"Evil","properties":[{"isIndexed":false,"isList":false,"isOptional":false,"isPrimaryKey":true,"kind":"int","name":"id"}],"tableNumber":4294967295}],"version":0}"#
        try store.write { try $0.put(table: 1, key: Array("schema".utf8), value: Array(schema.utf8)) }
        try store.close()
        for command in ["dump", "stats"] {
            let run = try strata(command, directory)
            XCTAssertEqual(run.status, 1, "\(command): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains("Evil has table number 4294967295"), "\(command): \(run.stderr)")
        }
    }
}
