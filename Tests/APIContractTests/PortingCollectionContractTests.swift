// Realm Swift's RealmCollection and AnyRealmCollection, and queries over an object's list,
// set and linking objects (`owner.dogs.filter("age > 3")`), as ported code writes them.

import Foundation
import Strata
import XCTest

final class PortingCollectionContractTests: XCTestCase {
    final class Dog: Object {
        @Persisted(primaryKey: true) var name: String = ""
        @Persisted var age: Int = 0
        @Persisted var weight: Double = 0
        @Persisted var walker: Kennel?
    }

    final class Kennel: Object {
        @Persisted(primaryKey: true) var name: String = ""
        @Persisted var dogs: List<Dog>
        @Persisted var favourites: MutableSet<Dog>
        @Persisted var numbers: List<Int>
        @Persisted(originProperty: "walker") var walked: LinkingObjects<Dog>
    }

    private var directory: URL?
    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
        super.tearDown()
    }

    /// A kennel holding dogs a(9), b(3), c(5), b again, d(5) in that order; a and c are walked.
    private func kennel() throws -> (Realm, Kennel) {
        let (realm, config) = try contractRealm("collections", types: [Dog.self, Kennel.self])
        directory = config.directory
        let kennel = try realm.write {
            let kennel = try realm.create(Kennel.self, value: ["name": "k"])
            let dogs = try [("a", 9), ("b", 3), ("c", 5), ("d", 5), ("x", 1)].map { name, age in
                try realm.create(Dog.self, value: ["name": name, "age": age, "weight": Double(age) * 2])
            }
            kennel.dogs.append(objectsIn: [dogs[0], dogs[1], dogs[2], dogs[1], dogs[3]])
            kennel.favourites.insert(objectsIn: [dogs[2], dogs[0]])
            kennel.numbers.append(objectsIn: [4, 1, 7])
            dogs[0].walker = kennel
            dogs[2].walker = kennel
            return kennel
        }
        return (realm, kennel)
    }

    func testListQueriesAreLiveResultsInTheListsOrder() throws {
        let (realm, kennel) = try kennel()
        let older = kennel.dogs.filter("age >= %@", 4)
        XCTAssertEqual(older.map(\.name), ["a", "c", "d"], "the list's order, not the key order")
        XCTAssertEqual(kennel.dogs.filter(#Predicate { $0.age < 4 }).map(\.name), ["b", "b"], "a dog listed twice is there twice")
        XCTAssertEqual(kennel.dogs.sorted(byKeyPath: "age").map(\.name), ["b", "b", "c", "d", "a"], "ties keep the list's order")
        XCTAssertEqual(kennel.dogs.sorted(byKeyPath: "age", ascending: false).map(\.name), ["a", "c", "d", "b", "b"])
        XCTAssertEqual(kennel.dogs.sorted(by: \.weight).first?.name, "b")
        XCTAssertEqual(kennel.dogs.filter("age > 3").sorted(byKeyPath: "name", ascending: false).map(\.name), ["d", "c", "a"])
        XCTAssertEqual(kennel.dogs.distinct(by: ["age"]).map(\.name), ["a", "b", "c"])
        XCTAssertEqual(kennel.dogs.filter("name == 'x'").count, 0, "x exists but is not in the list")
        XCTAssertTrue(older.explain().contains("the objects of Kennel.dogs"), older.explain())

        try realm.write {
            kennel.dogs.append(try XCTUnwrap(realm.object(ofType: Dog.self, forPrimaryKey: "x")))
            realm.object(ofType: Dog.self, forPrimaryKey: "x")!.age = 20
            kennel.dogs.remove(at: 0)
            XCTAssertEqual(older.map(\.name), ["c", "d", "x"], "live inside the write")
        }
        XCTAssertEqual(older.map(\.name), ["c", "d", "x"])
        XCTAssertEqual(older.count, 3)
        try realm.write { try realm.delete(kennel) }
        XCTAssertEqual(older.count, 0, "the results of a deleted object's list are empty")
    }

    func testSetAndLinkingObjectsQueries() throws {
        let (_, kennel) = try kennel()
        XCTAssertEqual(Set(kennel.favourites.filter("age > 6").map(\.name)), ["a"])
        XCTAssertEqual(kennel.walked.sorted(byKeyPath: "age").map(\.name), ["c", "a"])
        XCTAssertEqual(kennel.walked.filter("age < 6").map(\.name), ["c"])
        XCTAssertEqual(kennel.walked.max(ofProperty: "age") as Int?, 9)
        XCTAssertEqual(kennel.dogs.sum(ofProperty: "age") as Int, 25)
        XCTAssertEqual(kennel.dogs.average(ofProperty: "weight") as Double?, 10)
        XCTAssertEqual(kennel.dogs.min(ofProperty: "age") as Int?, 3)
        XCTAssertEqual(kennel.dogs.index(matching: "age == 5"), 2)
        XCTAssertEqual(kennel.dogs.index(matching: #Predicate { $0.name == "d" }), 4)
        XCTAssertEqual(kennel.dogs.value(forKey: "name") as? [Any?] as? [String], ["a", "b", "c", "b", "d"])
        XCTAssertEqual(kennel.walked.value(forKeyPath: "walker.name") as? [Any?] as? [String], ["k", "k"])
        XCTAssertEqual(kennel.dogs.objects(at: [0, 2]).map(\.name), ["a", "c"])
    }

    /// Generic code over RealmCollection, as Realm Swift's tests and apps write it.
    private func namesOfAdults<C: RealmCollection>(_ dogs: C) -> [String] where C.Element == Dog {
        dogs.filter("age >= 5").sorted(byKeyPath: "name").map(\.name)
    }

    func testGenericCodeOverEveryCollection() throws {
        let (realm, kennel) = try kennel()
        XCTAssertEqual(namesOfAdults(realm.objects(Dog.self)), ["a", "c", "d"])
        XCTAssertEqual(namesOfAdults(kennel.dogs), ["a", "c", "d"])
        XCTAssertEqual(namesOfAdults(kennel.favourites), ["a", "c"])
        XCTAssertEqual(namesOfAdults(kennel.walked), ["a", "c"])
        var any = AnyRealmCollection(realm.objects(Dog.self))
        XCTAssertEqual(any.count, 5)
        XCTAssertEqual(namesOfAdults(any), ["a", "c", "d"])
        any = AnyRealmCollection(kennel.dogs)
        XCTAssertEqual(any.map(\.name), ["a", "b", "c", "b", "d"])
        XCTAssertTrue(any.realm == realm)
        XCTAssertFalse(any.isFrozen || any.isInvalidated)
        let frozen = any.freeze()
        XCTAssertTrue(frozen.isFrozen)
        try realm.write { kennel.dogs.removeAll() }
        XCTAssertEqual(frozen.count, 5, "frozen at five dogs")
        XCTAssertEqual(any.count, 0)
        XCTAssertEqual(try XCTUnwrap(frozen.thaw()).count, 0)
        XCTAssertEqual(frozen.filter("age == 9").map(\.name), ["a"], "a frozen list's query reads the frozen commit")

        let numbers = AnyRealmCollection(kennel.numbers)
        XCTAssertEqual(numbers.sum(), 12)
        XCTAssertEqual(numbers.average(), 4)
        XCTAssertEqual(numbers.min(), 1)
        XCTAssertEqual(numbers.index(of: 7), 2)
        XCTAssertEqual(List<Double>([1, 2]).average(), 1.5)
        XCTAssertNil(List<Int>().average())
        XCTAssertNil(List<Int>().realm, "an unmanaged list has no realm")
        XCTAssertNotNil(realm.objects(Dog.self).realm, "results always have one")
    }

    func testObservingAListsResults() throws {
        let (realm, kennel) = try kennel()
        var changes: [String] = []
        let token = kennel.dogs.filter("age >= 5").observe { change in
            switch change {
            case .initial(let results): changes.append("initial \(results.map(\.name))")
            case .update(let results, let deletions, let insertions, let modifications):
                changes.append("\(results.map(\.name)) -\(deletions) +\(insertions) ~\(modifications)")
            case .error(let error): changes.append("error \(error)")
            }
        }
        defer { token.invalidate() }
        try realm.write { kennel.dogs.append(realm.object(ofType: Dog.self, forPrimaryKey: "a")!) }
        try realm.write { realm.object(ofType: Dog.self, forPrimaryKey: "c")!.age = 6 }
        try realm.write { kennel.dogs.remove(at: 0) }
        // a and c link to the kennel (`walker`), whose list changed: as in Realm, a change of
        // a linked object reports them modified.
        XCTAssertEqual(changes, ["initial [\"a\", \"c\", \"d\"]",
                                 "[\"a\", \"c\", \"d\", \"a\"] -[] +[3] ~[0, 1]",
                                 "[\"a\", \"c\", \"d\", \"a\"] -[] +[] ~[1]",
                                 "[\"c\", \"d\", \"a\"] -[0] +[] ~[0, 2]"])
    }

    func testObservingAListOfValuesASetAndAMap() throws {
        final class Box: Object {
            @Persisted(primaryKey: true) var name: String = ""
            @Persisted var numbers: List<Int>
            @Persisted var labels: MutableSet<String>
            @Persisted var counts: Map<String, Int>
        }
        let (realm, config) = try contractRealm("collection-observe", types: [Box.self])
        directory = config.directory
        let box = try realm.write { try realm.create(Box.self, value: ["name": "b", "numbers": [1, 2, 3], "counts": ["x": 1, "y": 2]]) }
        var listChanges: [String] = [], setChanges: [String] = [], mapChanges: [String] = []
        let listToken = box.numbers.observe { change in
            switch change {
            case .initial(let list): listChanges.append("initial \(Array(list))")
            case .update(let list, let deletions, let insertions, let modifications):
                listChanges.append("\(Array(list)) -\(deletions) +\(insertions) ~\(modifications)")
            case .error(let error): listChanges.append("error \(error)")
            }
        }
        let setToken = box.labels.observe { change in
            if case .update(let set, _, let insertions, _) = change { setChanges.append("\(set.count) +\(insertions)") }
        }
        let mapToken = box.counts.observe { change in
            switch change {
            case .initial(let map): mapChanges.append("initial \(map.count)")
            case .update(_, let deletions, let insertions, let modifications):
                mapChanges.append("-\(deletions) +\(insertions) ~\(modifications)")
            case .error(let error): mapChanges.append("error \(error)")
            }
        }
        defer { [listToken, setToken, mapToken].forEach { $0.invalidate() } }
        try realm.write { box.numbers.append(4) }
        try realm.write { box.numbers[0] = 10 }
        try realm.write { box.numbers.remove(at: 1) }
        try realm.write { box.labels.insert("new") }
        try realm.write {
            box.counts["x"] = 5
            box.counts["z"] = 0
            box.counts.removeObject(for: "y")
        }
        XCTAssertEqual(listChanges, ["initial [1, 2, 3]", "[1, 2, 3, 4] -[] +[3] ~[]", "[10, 2, 3, 4] -[] +[] ~[0]",
                                     "[10, 3, 4] -[1] +[] ~[]"])
        XCTAssertEqual(setChanges, ["1 +[0]"])
        XCTAssertEqual(mapChanges, ["initial 2", "-[\"y\"] +[\"z\"] ~[\"x\"]"], "commits that leave the map alone are not reported")

        try realm.write { try realm.delete(box) }
        XCTAssertEqual(listChanges.last, "[] -[0, 1, 2] +[] ~[]", "deleting the owner removes every element, and ends the observation")
    }

    func testObservingLinkingObjectsAndAListOnAQueue() throws {
        let (realm, kennel) = try kennel()
        var walked: [String] = []
        let token = kennel.walked.observe { change in
            switch change {
            case .initial(let links): walked.append("initial \(links.count)")
            case .update(let links, let deletions, let insertions, _): walked.append("\(links.count) -\(deletions) +\(insertions)")
            case .error(let error): walked.append("error \(error)")
            }
        }
        defer { token.invalidate() }
        try realm.write { realm.object(ofType: Dog.self, forPrimaryKey: "b")!.walker = kennel }
        XCTAssertEqual(walked, ["initial 2", "3 -[] +[1]"], "b sorts between a and c (the origin type's key order)")

        let queue = DispatchQueue(label: "list-observer")
        let updated = expectation(description: "update on the queue")
        let seen = LockedValue<[Int]>([])
        let queueToken = kennel.dogs.observe(on: queue) { change in
            dispatchPrecondition(condition: .onQueue(queue))
            if case .update(let list, _, let insertions, _) = change {
                seen.set(insertions + [list.count])
                updated.fulfill()
            }
        }
        defer { queueToken.invalidate() }
        queue.sync {}  // registered before the write below
        try realm.write { kennel.dogs.append(realm.object(ofType: Dog.self, forPrimaryKey: "x")!) }
        wait(for: [updated], timeout: 10)
        XCTAssertEqual(seen.get(), [5, 6])
    }
}

/// Realm Swift's `observe(keyPaths:)` on results: modifications only of watched properties.
final class PortingKeyPathObservationContractTests: PortingStoreTestCase {
    func testKeyPathsLimitTheModificationsReported() throws {
        let realm = try Realm(configuration: try configuration("observe-keypaths"))
        try realm.write {
            let ann = Contact()
            ann.name = "Ann"
            ann.phones.append({ let p = Phone(); p.number = "1"; return p }())
            try realm.add(ann)
        }
        let contacts = realm.objects(Contact.self)
        var ages: [RealmCollectionChange<Results<Contact>>] = []
        var phones: [RealmCollectionChange<Results<Contact>>] = []
        var everything: [RealmCollectionChange<Results<Contact>>] = []
        let ageToken = contacts.observe(keyPaths: ["age"]) { ages.append($0) }
        let phoneToken = contacts.observe(keyPaths: ["phones.number"]) { phones.append($0) }
        let allToken = contacts.observe { everything.append($0) }
        defer { [ageToken, phoneToken, allToken].forEach { $0.invalidate() } }

        try realm.write { realm.object(ofType: Contact.self, forPrimaryKey: "Ann")!.tags.append("x") }
        XCTAssertEqual([ages.count, phones.count, everything.count], [1, 1, 2], "tags are watched by neither")

        try realm.write { realm.object(ofType: Contact.self, forPrimaryKey: "Ann")!.age = 40 }
        XCTAssertEqual([ages.count, phones.count, everything.count], [2, 1, 3])
        guard case .update(_, _, _, let modified) = ages.last else { return XCTFail() }
        XCTAssertEqual(modified, [0])

        try realm.write { realm.objects(Phone.self).first!.number = "2" }
        XCTAssertEqual([ages.count, phones.count, everything.count], [2, 2, 4], "a linked phone changed: only the path through phones")

        try realm.write { try realm.add({ let c = Contact(); c.name = "Bob"; return c }()) }
        XCTAssertEqual([ages.count, phones.count, everything.count], [3, 3, 5], "insertions are always reported")
        guard case .update(_, _, let inserted, let modifiedWithInsert) = ages.last else { return XCTFail() }
        XCTAssertEqual(inserted, [1])
        XCTAssertEqual(modifiedWithInsert, [])
    }

    func testAListsKeyPathsLimitTheLinkedChangesReported() throws {
        let realm = try Realm(configuration: try configuration("list-keypaths"))
        try realm.write {
            try realm.create(Contact.self, value: ["name": "Ann", "phones": [["555"]]] as [String: Any])
        }
        let ann = try XCTUnwrap(realm.object(ofType: Contact.self, forPrimaryKey: "Ann"))
        var numbers: [RealmCollectionChange<List<Phone>>] = []
        var nothing: [RealmCollectionChange<List<Phone>>] = []
        let watching = ann.phones.observe(keyPaths: ["number"]) { numbers.append($0) }
        let ignoring = ann.phones.observe(keyPaths: ["missing"]) { nothing.append($0) }
        defer { [watching, ignoring].forEach { $0.invalidate() } }
        try realm.write { ann.phones[0].number = "556" }
        XCTAssertEqual([numbers.count, nothing.count], [2, 1], "a linked phone's number changed: only the watcher of number hears it")
        try realm.write { ann.phones.append({ let p = Phone(); p.number = "557"; return p }()) }
        XCTAssertEqual([numbers.count, nothing.count], [3, 2], "an insertion is always reported")
    }
}
