// docs/API.md §2 and §5 as a user writes them: only `import Strata` (no @testable, no
// Foundation import), so this file fails to compile if the public API drifts.

import Strata
import XCTest
import Dispatch

enum Kind: Int, PersistableEnum, Codable, Sendable { case free, pro }

struct Location: ColumnJSONCodable { var lat: Double; var lng: Double }

final class Car: Object {
    @Persisted(primaryKey: true) var vin: String = ""
}

final class Phone: Object {
    @Persisted var number: String = ""
}

final class User: Object {
    @Persisted(primaryKey: true) var objId: String = ""
    @Persisted var username: String = ""
    @Persisted var firstName: String = ""
    @Persisted var lastName: String = ""
    @Persisted var rank: Int = -1
    @Persisted var score: Double = 0
    @Persisted var active: Bool = false
    @Persisted var joined: Date? = nil
    @Persisted var avatar: Data? = nil
    @Persisted var id: UUID = UUID()
    @Persisted(indexed: true) var city: String = ""
    @Persisted var tags: List<String>            // list of primitives
    @Persisted var car: Car?                     // to-one link (nil = no link)
    @Persisted var phones: List<Phone>           // to-many link, ordered
    @Persisted var kind: Kind = .free            // enum Kind: Int, PersistableEnum
    @Persisted var location: Location? = nil     // a ColumnCodable / ColumnJSONCodable type
}

/// The same class before a rename (`name` → `username`), for the migration lines.
enum Old {
    final class User: Object {
        @Persisted(primaryKey: true) var objId: String = ""
        @Persisted var name: String = ""
        @Persisted var rank: Int = -1
    }
}
enum New {
    final class User: Object {
        @Persisted(primaryKey: true) var objId: String = ""
        @Persisted var username: String = ""
        @Persisted var rank: Int = -1
    }
}

final class RealmAPIContractTests: XCTestCase {
    var url: URL!

    override func setUp() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: url)
    }

    func testConfigurationWritesQueriesHandoffCopiesAndObservers() throws {
        let serialQueue = DispatchQueue(label: "contract")
        var config = Realm.Configuration(directory: url)      // a Store directory
        config.objectTypes = [User.self, Car.self, Phone.self] // the schema
        config.schemaVersion = 2
        config.migrationBlock = { migration, oldSchemaVersion in
            migration.enumerateObjects(ofType: "User") { old, new in new?["rank"] = 0 }
            migration.renameProperty(onType: "User", from: "name", to: "username")
        }
        config.deleteRealmIfMigrationNeeded = false
        config.shouldCompactOnLaunch = { totalBytes, usedBytes in totalBytes > 50 << 20 && usedBytes * 2 < totalBytes }
        config.readOnly = false
        config.storeOptions = StoreOptions()                  // passes through to the engine
        config.inMemoryIdentifier = nil                       // non-nil: no files

        let realm = try Realm(configuration: config)          // confined to the calling thread
        let queueConfig = config
        let opened = serialQueue.sync { (try? Realm(configuration: queueConfig, queue: serialQueue)) != nil }
        XCTAssertTrue(opened)

        let user = User(), u1 = User(), u2 = User()
        user.objId = "1"; u1.objId = "u1"; u2.objId = "u2"
        user.rank = -3
        try realm.write {                         // returns what the closure returns; rolls back everything if it throws
            try realm.add(user)                   // throws .primaryKeyExists if the key is taken
            try realm.add(user, update: .modified)      // upsert; .modified writes only changed properties
            try realm.add([u1, u2], update: .all)
            let u = try realm.create(User.self, value: ["objId": "3", "rank": 5], update: .modified)
            XCTAssertEqual(u.rank, 5)
            user.rank = 7                         // managed objects are mutable inside a write only
            try realm.delete(u1)
            try realm.delete(realm.objects(User.self).filter(#Predicate { $0.rank < 0 }))
        }
        XCTAssertEqual(realm.objects(User.self).map(\.objId), ["1", "3"])
        try realm.beginWrite(); try realm.commitWrite(); realm.cancelWrite(); _ = realm.isInWriteTransaction

        let u: User? = realm.object(ofType: User.self, forPrimaryKey: "3")
        XCTAssertEqual(u?.rank, 5)
        let all: Results<User> = realm.objects(User.self)
        let top = all.filter(#Predicate<User> { $0.rank > 3 && $0.city == "" })
                     .sorted(by: [SortDescriptor(\User.lastName), SortDescriptor(\User.rank, order: .reverse)])
        _ = top.count; _ = top.first; _ = top.last; _ = top[0]; _ = top.isEmpty; _ = Array(top); _ = top.toArray()
        _ = top.map(\.username); _ = top.min(of: \.rank); _ = top.max(of: \.rank); _ = top.sum(of: \.score)
        XCTAssertEqual(top.map(\.objId), ["1", "3"])

        let key: PrimaryKeyValue = user.primaryKeyValue           // Sendable, Hashable, Codable
        let ref = ThreadSafeReference(to: user)                  // Sendable; also for Results
        let handed = expectation(description: "handoff")
        let sharedConfig = config                                // Swift 6: a `let` crosses threads
        DispatchQueue.global().async {
            let realm = try! Realm(configuration: sharedConfig)
            let a = realm.object(ofType: User.self, forPrimaryKeyValue: key)
            let b = realm.resolve(ref)                            // nil if deleted meanwhile
            XCTAssertEqual(a?.rank, 7)
            XCTAssertEqual(b?.objId, "1")
            handed.fulfill()
        }
        wait(for: [handed], timeout: 10)

        let copy = user.shallowCopy()     // unmanaged; every non-link property EXCEPT the primary key
        XCTAssertEqual(copy.objId, "")
        let deep = user.deepCopy()        // unmanaged; links and lists copied recursively, cycle-safe
        XCTAssertNil(deep.realm)
        copy.firstName = "Bruce"          // free to edit off any transaction
        try realm.write { user.mergeProperties(from: copy) }   // copies non-link, non-key properties
        XCTAssertEqual(user.firstName, "Bruce")

        var realmChanges = 0
        let t1 = realm.observe { notification, realm in realmChanges += 1 }                 // .didChange after each commit seen
        let observed = expectation(description: "queue observer")
        observed.assertForOverFulfill = false
        let t2 = all.observe(on: serialQueue) { (change: RealmCollectionChange<Results<User>>) in
            switch change {
            case .initial(let results): _ = results
            case .update(let results, let deletions, let insertions, let modifications):
                _ = (results, deletions, insertions, modifications)
                observed.fulfill()
            case .error(let error): XCTFail("\(error)")
            }
        }
        var objectChanges = 0
        let t3 = user.observe { (change: ObjectChange<User>) in objectChanges += 1 }        // .change(object, [PropertyChange]), .deleted, .error
        serialQueue.sync {}                       // let the queue observer register
        try realm.write { user.rank = 8 }
        wait(for: [observed], timeout: 10)
        XCTAssertEqual(realmChanges, 1)
        XCTAssertEqual(objectChanges, 1)
        t1.invalidate()
        t2.invalidate()
        t3.invalidate()
        XCTAssertFalse(user.isInvalidated)
        try realm.write { try realm.delete(user) }
        XCTAssertTrue(user.isInvalidated)         // `object.isInvalidated` is true after it was deleted
        try realm.write { try realm.deleteAll() }
    }

    func testChangesSequence() async throws {
        var config = Realm.Configuration(directory: url)
        config.objectTypes = [User.self, Car.self, Phone.self]
        let stream = try Self.changes(config)
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()         // for await change in results.changes { }
        XCTAssertEqual(first?.isInitial, true)
    }

    private static func changes(_ config: Realm.Configuration) throws -> AsyncStream<CollectionChangeSet> {
        try Realm(configuration: config).objects(User.self).changes
    }

    func testMigrationLinesAndSchemaMismatch() throws {
        var old = Realm.Configuration(directory: url)
        old.objectTypes = [Old.User.self]
        old.schemaVersion = 1
        do {
            let realm = try Realm(configuration: old)
            try realm.write { try realm.create(Old.User.self, value: ["objId": "a", "name": "Ann", "rank": 9]) }
        }
        var new = Realm.Configuration(directory: url)
        new.objectTypes = [New.User.self]
        new.schemaVersion = 1
        XCTAssertThrowsError(try Realm(configuration: new)) { error in
            guard case RealmError.schemaMismatch(let lines) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(lines, ["Property 'User.username' has been added.", "Property 'User.name' has been removed."])
        }
        new.schemaVersion = 2
        new.migrationBlock = { migration, oldSchemaVersion in
            migration.enumerateObjects(ofType: "User") { old, new in new?["rank"] = 0 }
            migration.renameProperty(onType: "User", from: "name", to: "username")
        }
        let realm = try Realm(configuration: new)
        let user = try XCTUnwrap(realm.object(ofType: New.User.self, forPrimaryKey: "a"))
        XCTAssertEqual(user.username, "Ann")
        XCTAssertEqual(user.rank, 0)
    }

    func testColumnCodableValuesAndColumnTypes() throws {
        struct Point: ColumnCodable {
            var x: Int
            static var columnType: ColumnType { .integer64 }
            func archivedValue() -> Value { Value(Int64(x)) }
            init(x: Int) { self.x = x }
            init?(with value: Value) {
                guard value.type == .integer64 else { return nil }
                x = Int(value.int64Value)
            }
        }
        let value = Point(x: 4).archivedValue()
        XCTAssertEqual(value.type, .integer64)
        XCTAssertEqual(value.int64Value, 4)
        XCTAssertNil(Point(with: Value("text")))
        let location = Location(lat: 1, lng: 2)
        XCTAssertEqual(Location.columnType, .BLOB)
        XCTAssertEqual(Location(with: location.archivedValue())?.lat, 1)
        _ = [ColumnType.integer32, .integer64, .float, .text, .BLOB, .null]
        _ = (value.doubleValue, value.stringValue, value.dataValue)
    }
}
