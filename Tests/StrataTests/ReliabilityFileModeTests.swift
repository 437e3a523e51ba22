// Issue 13, finding 15 in the object layer: an in-memory realm's files (in /dev/shm when it
// exists) are private to the user, like any store's (directory 0700, files 0600).

import Foundation
import XCTest
@testable import Strata

final class ReliabilityRealmFileModeTests: XCTestCase {
    func testInMemoryRealmIsPrivate() throws {
        var config = Realm.Configuration(inMemoryIdentifier: "private-\(UUID().uuidString)")
        config.objectTypes = [Node.self]
        let saved = umask(0o022)
        defer { umask(saved) }
        let realm = try Realm(configuration: config)
        try realm.write { try realm.create(Node.self, value: ["name": "a"]) }
        let path = realm.store.directory.path
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(UInt32(info.st_mode) & 0o777, 0o700, path)
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            XCTAssertEqual(stat(path + "/" + name, &info), 0)
            XCTAssertEqual(UInt32(info.st_mode) & 0o777, 0o600, name)
        }
    }
}
