// What the JSON contract and seed-example tests share: a fresh store directory per test,
// removed afterwards, and a realm over it for the given types. (`import Strata` only, like
// the tests it serves.)

import Foundation
import Strata
import XCTest

class ContractTestCase: XCTestCase {
    /// This test's store directory (made by the realm, removed at tear-down).
    private(set) var directory = ""

    override func setUp() {
        super.setUp()
        directory = NSTemporaryDirectory() + "json-contract-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    /// A realm in this test's directory holding `types`.
    func realm(_ types: [Object.Type]) throws -> Realm {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
        config.objectTypes = types
        return try Realm(configuration: config)
    }
}
