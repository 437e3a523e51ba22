// A test case base with a fresh store directory per test and a configuration for it.

import XCTest
@testable import Strata

class RealmTestCase: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-realm-tests-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func configuration(types: [Object.Type] = allModelTypes, version: UInt64 = 0) -> Realm.Configuration {
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = types
        config.schemaVersion = version
        config.storeOptions.durability = .none
        return config
    }

    func openRealm(types: [Object.Type] = allModelTypes) throws -> Realm {
        try Realm(configuration: configuration(types: types))
    }

    func makeUser(_ id: String, rank: Int = 0, city: String = "Raleigh", lastName: String = "") -> User {
        newUser(id, rank: rank, city: city, lastName: lastName)
    }
}

/// An unmanaged user with a username derived from its id.
func newUser(_ id: String, rank: Int = 0, city: String = "Raleigh", lastName: String = "") -> User {
    let user = User()
    user.objId = id
    user.username = "user\(id)"
    user.rank = rank
    user.city = city
    user.lastName = lastName
    return user
}
