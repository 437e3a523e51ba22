// A test case base with a fresh store directory per test and a configuration for it.

import XCTest
import StrataTestSupport
@testable import Strata

class RealmTestCase: XCTestCase {
    /// The store directory of the test (not made yet: opening the realm makes it).
    var directory: URL!
    /// Every directory handed out during the test, removed at tear-down.
    private var temporaryDirectories: [TemporaryDirectory] = []

    override func setUpWithError() throws {
        directory = newDirectory()
    }

    override func tearDownWithError() throws {
        temporaryDirectories.removeAll()
    }

    /// A fresh directory path under the temporary directory, removed at tear-down.
    func newDirectory(_ label: String = "strata-realm-tests") -> URL {
        let temporary = TemporaryDirectory(label, create: false)
        temporaryDirectories.append(temporary)
        return temporary.url
    }

    func configuration(types: [Object.Type] = allModelTypes, version: UInt64 = 0) -> Realm.Configuration {
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = types
        config.schemaVersion = version
        config.storeOptions.durability = .none
        return config
    }

    /// Flips the first byte of the first occurrence of `marker` (a row's own text: not an
    /// index record's) in the test store's segment files, so that record fails its checksum
    /// when read; false when no segment holds it (compressed, or never written).
    func flipFirstByte(of marker: String) throws -> Bool {
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".seg") }.sorted()
        for segment in segments {
            let url = directory.appendingPathComponent(segment)
            var bytes = try Data(contentsOf: url)
            guard let found = bytes.range(of: Data(marker.utf8)) else { continue }
            bytes[found.lowerBound] ^= 0x5A
            try bytes.write(to: url)
            return true
        }
        return false
    }

    func openRealm(types: [Object.Type] = allModelTypes) throws -> Realm {
        try Realm(configuration: configuration(types: types))
    }

    /// Fails for each pair of neighbours in `users` that Foundation's `sort` orders the other
    /// way (`context` names the case in the message).
    func assertNoNeighboursReversed(_ users: some Sequence<User>, by sort: [SortDescriptor<User>], _ context: String,
                                    file: StaticString = #filePath, line: UInt = #line) {
        let users = Array(users)
        for (a, b) in zip(users.dropLast(), users.dropFirst()) {
            for descriptor in sort {
                let order = descriptor.compare(a, b)
                if order == .orderedDescending {
                    XCTFail("\(context): \(a.objId) before \(b.objId), but Foundation orders them the other way", file: file, line: line)
                }
                if order != .orderedSame { break }
            }
        }
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
