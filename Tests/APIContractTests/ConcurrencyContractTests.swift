// docs/API.md §7 as a user writes it in Swift 6 strict mode: only `import Strata`, no
// `@unchecked` anywhere in this file. It fails to compile if the public API drifts or if a
// value §7 calls Sendable is not. (`Task` alone names §4's view model in
// this target, hence `_Concurrency.Task`.)

import Strata
import XCTest

final class Item: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
}

/// The configuration every example uses (a Sendable value, so any task or actor may use it).
struct Settings {
    let config: Realm.Configuration
    init(_ url: URL) {
        var config = Realm.Configuration(directory: url)
        config.objectTypes = [User.self, Car.self, Phone.self, Item.self]
        self.config = config
    }
}

// A realm opened inside a task and outside any actor is confined to that task.
func handle(_ id: Int, config: Realm.Configuration) async throws -> Int {
    let realm = try Realm(configuration: config)
    let item = Item()
    item.id = id
    try realm.write { try realm.add(item, update: .modified) }
    try await _Concurrency.Task.sleep(for: .milliseconds(1))       // resumes anywhere
    return realm.objects(Item.self).count             // fine: same task
}

@MainActor func showUI(config: Realm.Configuration) async throws -> Int {
    let realm = try await Realm(configuration: config, actor: MainActor.shared)
    let item = Item()
    item.id = 1000
    try await realm.asyncWrite { try realm.add(item, update: .modified) }
    return realm.objects(Item.self).count
}

actor Importer {
    let config: Realm.Configuration
    init(config: Realm.Configuration) { self.config = config }

    func run(_ data: Data) async throws -> Int {
        let realm = try await Realm(configuration: config, actor: self)
        let users = try RealmCoder(realm: realm).decodeArray(User.self, from: data)
        return users.count
    }
}

final class ConcurrencyContractTests: XCTestCase {
    var url: URL!

    override func setUp() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-7-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: url)
    }

    func testHandlersInTasksAnImporterActorFrozenValuesAndAsyncChanges() async throws {
        let config = Settings(url).config
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<16 { group.addTask { try await handle(i, config: config) } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(counts.count, 16)
        let shown = try await showUI(config: config)
        XCTAssertEqual(shown, 17)
        let imported = try await Importer(config: config).run(Data(#"[{"objId": "1", "username": "ada"}, {"objId": "2", "username": "grace"}]"#.utf8))
        XCTAssertEqual(imported, 2)

        let realm = try Realm(configuration: config)
        let item = Item()
        item.id = 5000
        try await realm.asyncWrite { try realm.add(item, update: .modified) }
        let user = try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "1"))

        // Values that cross isolation domains.
        let frozen: Frozen<User> = user.frozen()
        let page: FrozenResults<User> = realm.objects(User.self).frozen()
        let printed = await _Concurrency.Task.detached { "\(frozen.username) \(page.count)" }.value
        XCTAssertEqual(printed, "ada 2")
        let live: User? = realm.thaw(frozen)
        XCTAssertEqual(live?.username, "ada")
        _ = user.freeze(); _ = realm.objects(User.self).freeze()
        XCTAssertFalse(user.isFrozen)
        XCTAssertTrue(user.freeze().isFrozen)

        // Observation in async code.
        var collection = realm.objects(User.self).changes.makeAsyncIterator()
        let initial = await collection.next()
        XCTAssertEqual(initial?.isInitial, true)
        var object = user.changes.makeAsyncIterator()
        try await realm.asyncWrite { user.username = "ada lovelace" }
        if case .change(let changed, let properties)? = await object.next() {
            XCTAssertEqual(changed.username, "ada lovelace")
            XCTAssertEqual(properties, ["username"])
        } else {
            XCTFail("expected a change")
        }
    }
}
