// Realm Swift's type-safe queries (`Query<T>`, `where { … }`), as ported code writes them,
// each checked against the same condition written in plain Swift over the objects.

import Foundation
import Strata
import XCTest

final class PortingQueryContractTests: XCTestCase {
    final class Pet: Object {
        @Persisted(primaryKey: true) var name: String = ""
        @Persisted var age: Int = 0
    }

    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var name: String = ""
        @Persisted var nickname: String?
        @Persisted var age: Int = 0
        @Persisted var rating: Int?
        @Persisted var score: Double = 0
        @Persisted var isActive: Bool = false
        @Persisted var partner: Person?
        @Persisted var pets: List<Pet>
        @Persisted var tags: List<String>
        var shout: String { name.uppercased() }
    }

    private var directory: URL?
    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
        super.tearDown()
    }

    private func people() throws -> (Realm, Results<Person>) {
        let (realm, config) = try contractRealm("query", types: [Person.self, Pet.self])
        directory = config.directory
        try realm.write {
            let pets = try (0 ..< 4).map { try realm.create(Pet.self, value: ["name": "pet\($0)", "age": $0 * 3]) }
            let names = ["Ann", "bob", "Álvaro", "alice", "Carl", "dora", "Ed", "anna"]
            var previous: Person?
            for (i, name) in names.enumerated() {
                let person = try realm.create(Person.self, value: ["id": i, "name": name, "age": 10 + i * 7, "score": Double(i) / 4,
                                                                   "isActive": i % 3 == 0])
                person.nickname = i % 2 == 0 ? "n\(i)" : nil
                person.rating = i % 4 == 0 ? nil : i
                person.partner = previous
                person.pets.append(objectsIn: pets.prefix(i % 4))
                person.tags.append(objectsIn: i % 2 == 0 ? ["even", "x\(i)"] : ["odd"])
                previous = person
            }
        }
        return (realm, realm.objects(Person.self))
    }

    /// The ids `query` selects, and the ids `expected` selects over every person.
    private func check(_ people: Results<Person>, _ query: (Query<Person>) -> Query<Bool>, _ expected: (Person) -> Bool,
                       file: StaticString = #filePath, line: UInt = #line) {
        let found = people.where(query).map(\.id)
        let oracle = people.filter(expected).map(\.id)
        XCTAssertEqual(found, oracle, file: file, line: line)
    }

    func testComparisonsAndLogic() throws {
        let (_, people) = try people()
        check(people, { $0.age > 30 }, { $0.age > 30 })
        check(people, { $0.age >= 31 && $0.age < 52 }, { $0.age >= 31 && $0.age < 52 })
        check(people, { $0.age < 20 || $0.isActive }, { $0.age < 20 || $0.isActive })
        check(people, { !$0.isActive }, { !$0.isActive })
        check(people, { $0.isActive }, { $0.isActive })
        check(people, { $0.name == "Ed" }, { $0.name == "Ed" })
        check(people, { $0.name != "Ed" }, { $0.name != "Ed" })
        check(people, { $0.nickname == nil }, { $0.nickname == nil })
        check(people, { $0.nickname != nil && $0.score > 0.5 }, { $0.nickname != nil && $0.score > 0.5 })
        check(people, { $0.rating > 2 }, { ($0.rating ?? .min) > 2 })
        check(people, { $0.age.contains(24 ... 38) }, { (24 ... 38).contains($0.age) })
        check(people, { $0.age.contains(24 ..< 38) }, { (24 ..< 38).contains($0.age) })
        check(people, { $0.id.in([1, 3, 5, 99]) }, { [1, 3, 5, 99].contains($0.id) })
    }

    func testStringsLinksAndLists() throws {
        let (realm, people) = try people()
        check(people, { $0.name.starts(with: "a") }, { $0.name.hasPrefix("a") })
        check(people, { $0.name.starts(with: "a", options: .caseInsensitive) }, { $0.name.lowercased().hasPrefix("a") })
        check(people, { $0.name.starts(with: "a", options: [.caseInsensitive, .diacriticInsensitive]) },
              { $0.name.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).hasPrefix("a") })
        check(people, { $0.name.ends(with: "a") }, { $0.name.hasSuffix("a") })
        check(people, { $0.name.contains("nn") }, { $0.name.contains("nn") })
        check(people, { $0.name.equals("ED", options: .caseInsensitive) }, { $0.name == "Ed" })
        check(people, { $0.name.like("?o*") }, { $0.name.count >= 2 && Array($0.name)[1] == "o" })
        check(people, { $0.partner.name == "Ann" }, { $0.partner?.name == "Ann" })
        check(people, { $0.partner.age > 40 }, { ($0.partner?.age ?? 0) > 40 })
        check(people, { $0.pets.count > 1 }, { $0.pets.count > 1 })
        check(people, { $0.pets.age > 5 }, { $0.pets.contains { $0.age > 5 } })
        check(people, { $0.tags.contains("odd") }, { $0.tags.contains("odd") })
        check(people, { $0.tags.containsAny(in: ["x2", "x4"]) }, { !Set($0.tags).isDisjoint(with: ["x2", "x4"]) })
        let pet = try XCTUnwrap(realm.object(ofType: Pet.self, forPrimaryKey: "pet1"))
        check(people, { $0.pets.contains(pet) }, { $0.pets.contains(pet) })

        let ann = try XCTUnwrap(realm.object(ofType: Person.self, forPrimaryKey: 0))
        XCTAssertEqual(people.where { $0.partner == ann }.map(\.id), [1], "a link compared with an object")
        XCTAssertEqual(people.index(matching: { $0.name == "Carl" }), 4)
        XCTAssertEqual(ann.pets.where { $0.age > 100 }.count, 0, "a list's query")
        let bob = try XCTUnwrap(realm.object(ofType: Person.self, forPrimaryKey: 3))
        XCTAssertEqual(bob.pets.where { $0.age >= 3 }.map(\.name), ["pet1", "pet2"])
        XCTAssertEqual(people.where { $0.age > 40 }.where { $0.isActive }.map(\.id), [6], "queries chain with AND")
    }
}

/// Realm Swift's `SortDescriptor(keyPath:ascending:)`, beside Foundation's key-path form.
final class PortingSortDescriptorContractTests: XCTestCase {
    func testSortDescriptorsByPropertyName() throws {
        let (realm, config) = try contractRealm("sort-descriptor", types: [Contact.self, Phone.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        try realm.write {
            for (name, age) in [("d", 3), ("a", 5), ("c", 3), ("b", 9)] { try realm.create(Contact.self, value: ["name": name, "age": age]) }
        }
        let contacts = realm.objects(Contact.self)
        let byAgeThenName = contacts.sorted(by: [SortDescriptor(keyPath: "age", ascending: false), SortDescriptor(keyPath: "name")])
        XCTAssertEqual(byAgeThenName.map(\.name), ["b", "a", "c", "d"])
        XCTAssertTrue(byAgeThenName.explain().contains("sort: age descending, name ascending"), byAgeThenName.explain())
        XCTAssertEqual(contacts.sorted(by: [SortDescriptor(keyPath: "name")]).map(\.name), ["a", "b", "c", "d"])
        XCTAssertEqual(contacts.sorted(by: [SortDescriptor(keyPath: "name").reversed()]).map(\.name), ["d", "c", "b", "a"])
        XCTAssertEqual(contacts.sorted(by: [SortDescriptor(\Contact.age), SortDescriptor(keyPath: "name", ascending: false)]).map(\.name),
                       ["d", "c", "a", "b"], "mixed with Foundation's key-path form")
        let descriptor: SortDescriptor<Contact> = SortDescriptor(keyPath: "age", ascending: false)
        XCTAssertFalse(descriptor.ascending)
        XCTAssertTrue(descriptor.reversed().ascending)
        XCTAssertEqual(contacts.sorted(by: [SortDescriptor(keyPath: "nope")]).count, 4, "an unknown name sorts as nil")
        XCTAssertEqual(Array(contacts).sorted(using: SortDescriptor(keyPath: "age")).map(\.age), [3, 3, 5, 9], "Foundation's sorted(using:)")
    }
}
