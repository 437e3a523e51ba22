// docs/API.md §8's Realm Swift names, as a user writes them (`import Strata` only), the model
// types included: EmbeddedObject, LinkingObjects, MutableSet, Map and ObjectId.

import Strata
import XCTest

final class Contact: Object {
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var age: Int = 0
    @Persisted var tags: List<String>
    @Persisted var phones: List<Phone>
}

/// docs/API.md §8's model types, as a user declares them (in a namespace: `Car` is taken).
enum PortedModelTypes {
    final class Address: EmbeddedObject { @Persisted var street: String = "" }

    final class Car: Object {
        @Persisted(primaryKey: true) var _id: ObjectId
        @Persisted var owner: Owner?
    }

    final class Owner: Object {
        @Persisted(primaryKey: true) var _id: ObjectId
        @Persisted var address: Address?; @Persisted var addresses: List<Address>
        @Persisted(originProperty: "owner") var cars: LinkingObjects<Car>
        @Persisted var labels: MutableSet<String>; @Persisted var scores: Map<String, Int>
    }
}

final class PortingContractTests: XCTestCase {
    func testObjectIdEmbeddedObjectsLinkingObjectsMutableSetAndMap() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-8m-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        var config = Realm.Configuration(directory: url)
        config.objectTypes = [PortedModelTypes.Owner.self, PortedModelTypes.Car.self, PortedModelTypes.Address.self]
        let realm = try Realm(configuration: config)
        let id = ObjectId.generate()
        XCTAssertEqual(id.stringValue.count, 24)
        XCTAssertEqual(try ObjectId(string: id.stringValue), id)
        XCTAssertLessThan(id, ObjectId.generate())
        let owner = PortedModelTypes.Owner()
        owner._id = id
        let home = PortedModelTypes.Address(); home.street = "1 Main"
        owner.address = home
        owner.addresses.append(PortedModelTypes.Address())
        owner.labels.insert("vip")
        owner.scores["level"] = 3
        let car = PortedModelTypes.Car()
        car.owner = owner
        try realm.write { try realm.add(car) }
        XCTAssertEqual(owner.cars.count, 1)
        XCTAssertEqual(owner.address?.street, "1 Main")
        XCTAssertTrue(owner.labels.contains("vip"))
        XCTAssertEqual(owner.scores["level"], 3)
        XCTAssertEqual(realm.objects(PortedModelTypes.Owner.self).filter("_id == %@", id).count, 1)
        XCTAssertEqual(realm.objects(PortedModelTypes.Owner.self).filter(#Predicate { $0._id == id }).count, 1)
        XCTAssertEqual(realm.objects(PortedModelTypes.Owner.self).filter("cars.@count == 1 AND address.street == '1 Main'").count, 1)
        try realm.write { try realm.delete(owner) }
        XCTAssertTrue(home.isInvalidated)
    }

    func testRealmSwiftListResultsAndDynamicObjectNames() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-8-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        var config = Realm.Configuration(directory: url)
        config.objectTypes = [Contact.self, Phone.self]
        let realm = try Realm(configuration: config)
        let a = Phone(), b = Phone()
        a.number = "1111"
        b.number = "2222"
        let bob = Contact()
        bob.name = "bob"
        bob.age = 4
        try realm.write {
            try realm.add(bob)
            let list = bob.phones
            list.append(objectsIn: [a, b]); list.insert(a, at: 0); list.move(from: 0, to: 2)
            list.swapAt(0, 1); list.replace(index: 0, object: a); _ = list.index(of: a); list.removeAll()
            list.append(objectsIn: [a, b])
            bob.tags.append(objectsIn: ["x", "y"])
        }
        let results = realm.objects(Contact.self)
        XCTAssertEqual(results.sorted(byKeyPath: "name", ascending: true).count, 1)
        XCTAssertEqual(results.filter("age > %@ AND name BEGINSWITH[c] %@", 3, "b").count, 1)
        XCTAssertEqual(realm.objects(Contact.self).filter("ANY phones.number == '1111' AND tags.@count > 1").count, 1)
        let dynamic = realm.dynamicObjects("Contact")
        XCTAssertEqual(dynamic.first?["name"] as? String, "bob")
        let array: [Contact] = realm.objects(Contact.self).toArray()
        XCTAssertEqual(array.count, 1)
    }
}

/// A realm of `types` in a new temporary directory (the caller removes it), and its configuration.
func contractRealm(_ name: String, types: [Object.Type]) throws -> (Realm, Realm.Configuration) {
    var config = Realm.Configuration(directory: FileManager.default.temporaryDirectory
        .appendingPathComponent("strata-contract-\(name)-\(UUID().uuidString)"))
    config.objectTypes = types
    return (try Realm(configuration: config), config)
}

/// Realm Swift's identity comparisons, as ported code writes them.
final class PortingIdentityContractTests: XCTestCase {
    func testIsSameObjectAndRealmEquality() throws {
        let (realm, config) = try contractRealm("same", types: [Contact.self, Phone.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        let ann = Contact()
        ann.name = "Ann"
        XCTAssertTrue(ann.isSameObject(as: ann), "an unmanaged object is itself")
        XCTAssertFalse(ann.isSameObject(as: Contact()))
        XCTAssertFalse(ann.isSameObject(as: nil))
        try realm.write { try realm.add(ann) }
        let again = try XCTUnwrap(realm.object(ofType: Contact.self, forPrimaryKey: "Ann"))
        XCTAssertTrue(again.isSameObject(as: ann), "two reads of one stored object")
        XCTAssertFalse(again === ann)
        let other = try Realm(configuration: config)
        let fromOther = try XCTUnwrap(other.object(ofType: Contact.self, forPrimaryKey: "Ann"))
        XCTAssertTrue(fromOther.isSameObject(as: ann), "read by another realm of the same store")
        let bob = Contact()
        bob.name = "Bob"
        try realm.write { try realm.add(bob) }
        XCTAssertFalse(realm.object(ofType: Contact.self, forPrimaryKey: "Bob")!.isSameObject(as: ann))
        XCTAssertTrue(ann.realm == realm)
        XCTAssertTrue(realm == realm)
        XCTAssertTrue(other == realm, "two opens on one thread are one instance, as in Realm")
    }
}

/// Realm Swift's `Object(value:)`, as ported code writes it.
final class PortingObjectValueContractTests: XCTestCase {
    func testObjectFromADictionaryAnArrayOrAnotherObject() throws {
        let fromDictionary = Contact(value: ["name": "Ann", "age": 41, "tags": ["a", "b"], "phones": [["number": "555"], ["number": "556"]]])
        XCTAssertNil(fromDictionary.realm)
        XCTAssertEqual(fromDictionary.name, "Ann")
        XCTAssertEqual(fromDictionary.age, 41)
        XCTAssertEqual(Array(fromDictionary.tags), ["a", "b"])
        XCTAssertEqual(fromDictionary.phones.map(\.number), ["555", "556"])
        // In declaration order; properties not given keep their initial values.
        let fromArray = Contact(value: ["Bob", 7])
        XCTAssertEqual(fromArray.name, "Bob")
        XCTAssertEqual(fromArray.age, 7)
        XCTAssertTrue(fromArray.tags.isEmpty)
        let copy = Contact(value: fromDictionary)
        XCTAssertEqual(copy.name, "Ann")
        XCTAssertEqual(Array(copy.tags), ["a", "b"])
        XCTAssertFalse(copy === fromDictionary)
        // Nested objects, linked and embedded.
        let car = PortedModelTypes.Car(value: ["owner": ["address": ["street": "1 Main"], "labels": ["vip"]]])
        XCTAssertEqual(car.owner?.address?.street, "1 Main")
        XCTAssertEqual(car.owner?.labels.contains("vip"), true)
        // Added like any unmanaged object.
        let (realm, config) = try contractRealm("value", types: [Contact.self, Phone.self, PortedModelTypes.Owner.self,
                                                                 PortedModelTypes.Car.self, PortedModelTypes.Address.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        try realm.write {
            try realm.add(fromDictionary)
            try realm.add(car)
        }
        XCTAssertEqual(realm.object(ofType: Contact.self, forPrimaryKey: "Ann")?.phones.count, 2)
        XCTAssertEqual(realm.objects(PortedModelTypes.Car.self).first?.owner?.address?.street, "1 Main")
        // A value that does not fit: the throwing form names it.
        XCTAssertThrowsError(try Contact.make(value: ["name": "Cy", "height": 2])) { error in
            XCTAssertEqual(error as? RealmError, .unknownProperty(type: "Contact", property: "height"))
        }
        XCTAssertThrowsError(try Contact.make(value: ["name": "Cy", "age": "old"])) { error in
            XCTAssertTrue("\(error)".contains("age"), "\(error)")
        }
    }
}

/// Realm Swift's `Realm()` over `Realm.Configuration.defaultConfiguration`.
final class PortingDefaultConfigurationContractTests: XCTestCase {
    func testRealmOpensTheDefaultConfiguration() throws {
        let saved = Realm.Configuration.defaultConfiguration
        defer { Realm.Configuration.defaultConfiguration = saved }
        // Unset: no store is named, and the error says what to do.
        XCTAssertThrowsError(try Realm()) { error in
            XCTAssertTrue("\(error)".contains("defaultConfiguration"), "\(error)")
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-default-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        Realm.Configuration.defaultConfiguration = Realm.Configuration(directory: url, objectTypes: [Contact.self, Phone.self])
        let realm = try Realm()
        try realm.write { try realm.add(Contact(value: ["name": "Dee"])) }
        XCTAssertEqual(try Realm().objects(Contact.self).count, 1, "another Realm() reads the same store")
        XCTAssertEqual(Realm.Configuration.defaultConfiguration.directory, url)
    }
}

/// Realm Swift's List range and offset edits, held to what an Array (the oracle) does.
final class PortingListEditContractTests: XCTestCase {
    func testRangeAndOffsetEditsOnManagedAndUnmanagedLists() throws {
        let (realm, config) = try contractRealm("list", types: [Contact.self, Phone.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        let managed = Contact(value: ["name": "Eve"])
        try realm.write { try realm.add(managed) }
        for contact in [Contact(), managed] {
            var oracle = (0 ..< 10).map { "t\($0)" }
            try realm.write {
                contact.tags.replaceAll(with: oracle)
                XCTAssertEqual(contact.tags.removeFirst(), oracle.removeFirst())
                contact.tags.removeFirst(2); oracle.removeFirst(2)
                contact.tags.removeLast(1); oracle.removeLast(1)
                contact.tags.replaceSubrange(1 ..< 3, with: ["x", "y", "z"]); oracle.replaceSubrange(1 ..< 3, with: ["x", "y", "z"])
                contact.tags.removeSubrange(0 ..< 1); oracle.removeSubrange(0 ..< 1)
                XCTAssertEqual(Array(contact.tags), oracle)
                // ["x", "y", "z", "t6", "t7", "t8"]: SwiftUI's onDelete and onMove.
                XCTAssertEqual(oracle, ["x", "y", "z", "t6", "t7", "t8"])
                contact.tags.remove(atOffsets: IndexSet([0, 2]))
                XCTAssertEqual(Array(contact.tags), ["y", "t6", "t7", "t8"])
                contact.tags.move(fromOffsets: IndexSet([0, 1]), toOffset: 3)   // before "t8"
                XCTAssertEqual(Array(contact.tags), ["t7", "y", "t6", "t8"])
                contact.tags.move(fromOffsets: IndexSet([3]), toOffset: 0)
                XCTAssertEqual(Array(contact.tags), ["t8", "t7", "y", "t6"])
                contact.tags.move(fromOffsets: IndexSet([0]), toOffset: 4)      // to the end
                XCTAssertEqual(Array(contact.tags), ["t7", "y", "t6", "t8"])
            }
        }
        XCTAssertEqual(Array(realm.object(ofType: Contact.self, forPrimaryKey: "Eve")!.tags), ["t7", "y", "t6", "t8"])
    }
}

/// Realm Swift's `distinct(by:)`: the first object of each combination, in the results' order.
final class PortingDistinctContractTests: XCTestCase {
    func testDistinctKeepsTheFirstOfEachCombinationInOrder() throws {
        let (realm, config) = try contractRealm("distinct", types: [Contact.self, Phone.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        let people: [(String, Int)] = [("a", 30), ("b", 20), ("c", 30), ("d", 40), ("e", 20), ("f", 30)]
        try realm.write { for (name, age) in people { try realm.add(Contact(value: ["name": name, "age": age])) } }
        let all = realm.objects(Contact.self)
        // Primary-key order: a(30) b(20) c d(40) e f → one per age, the first met.
        XCTAssertEqual(all.distinct(by: ["age"]).map(\.name), ["a", "b", "d"])
        // Sorted by name descending first: f(30) e(20) d(40) …
        XCTAssertEqual(all.sorted(byKeyPath: "name", ascending: false).distinct(by: ["age"]).map(\.name), ["f", "e", "d"])
        XCTAssertEqual(all.filter("age < 40").distinct(by: ["age"]).count, 2)
        // In call order: distinct first (a and b, in key order), then the sort; sorting first
        // picks f and e instead.
        XCTAssertEqual(all.distinct(by: ["age"]).sorted(byKeyPath: "name", ascending: false).map(\.name), ["d", "b", "a"])
        XCTAssertEqual(all.distinct(by: ["age"]).filter("age < 40").map(\.name), ["a", "b"])
        XCTAssertEqual(all.distinct(by: ["age", "name"]).count, 6)
        XCTAssertEqual(all.distinct(by: ["age"]).sum(of: \.age), 90, "aggregates see the distinct objects")
        XCTAssertEqual(try all.filter(query: "age > 0 SORT(name ASC) LIMIT(2)").distinct(by: ["age"]).map(\.name), ["a", "b"],
                       "LIMIT applies after distinct")
        XCTAssertTrue(all.distinct(by: ["age"]).explain().contains("distinct: age"))
        // Live: a new first-of-its-age object appears, and notifications recompute.
        let results = all.distinct(by: ["age"])
        var counts: [Int] = []
        let token = results.observe { change in
            if case .update(let results, _, _, _) = change { counts.append(results.count) }
            if case .initial(let results) = change { counts.append(results.count) }
        }
        try realm.write { try realm.add(Contact(value: ["name": "g", "age": 50])) }
        realm.refresh()
        XCTAssertEqual(results.map(\.name), ["a", "b", "d", "g"])
        XCTAssertEqual(counts.last, 4)
        token.invalidate()
    }
}

/// Realm Swift's `Results.thaw()`.
final class PortingThawContractTests: XCTestCase {
    func testThawedResultsAreLiveAgain() throws {
        let (realm, config) = try contractRealm("thaw", types: [Contact.self, Phone.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        try realm.write { for (name, age) in [("a", 1), ("b", 2), ("c", 3)] { try realm.add(Contact(value: ["name": name, "age": age])) } }
        let frozen = realm.objects(Contact.self).filter("age >= 2").sorted(byKeyPath: "age", ascending: false).freeze()
        XCTAssertTrue(frozen.isFrozen)
        try realm.write { try realm.add(Contact(value: ["name": "d", "age": 4])) }
        XCTAssertEqual(frozen.map(\.name), ["c", "b"], "frozen results keep their commit")
        let thawed = try XCTUnwrap(frozen.thaw())
        XCTAssertFalse(thawed.isFrozen)
        XCTAssertEqual(thawed.map(\.name), ["d", "c", "b"], "the same query, live")
        let live = realm.objects(Contact.self)
        XCTAssertEqual(live.thaw()?.count, 4, "live results thaw to themselves")
    }
}

/// Realm Swift's Map aggregates and merge.
final class PortingMapContractTests: XCTestCase {
    func testMapAggregatesAndMerge() throws {
        let (realm, config) = try contractRealm("map", types: [PortedModelTypes.Owner.self, PortedModelTypes.Car.self, PortedModelTypes.Address.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        let unmanaged = PortedModelTypes.Owner()
        XCTAssertNil(unmanaged.scores.min())
        XCTAssertNil(unmanaged.scores.average())
        XCTAssertEqual(unmanaged.scores.sum(), 0)
        unmanaged.scores["a"] = 3
        unmanaged.scores["b"] = 8
        try realm.write { try realm.add(unmanaged) }
        let scores = try XCTUnwrap(realm.objects(PortedModelTypes.Owner.self).first).scores
        try realm.write {
            scores.merge(["b": 1, "c": 4], uniquingKeysWith: +)
            scores.merge([(key: "a", value: 10)]) { old, _ in old }
        }
        XCTAssertEqual(scores["a"], 3)
        XCTAssertEqual(scores["b"], 9)
        XCTAssertEqual(scores["c"], 4)
        XCTAssertEqual(scores.min(), 3)
        XCTAssertEqual(scores.max(), 9)
        XCTAssertEqual(scores.sum(), 16)
        XCTAssertEqual(try XCTUnwrap(scores.average()), 16.0 / 3, accuracy: 1e-12)
        XCTAssertEqual(Array(scores.sorted()), [3, 4, 9])
        XCTAssertEqual(scores.sorted(ascending: false), [9, 4, 3])
    }
}

/// Realm Swift's models give links initial values that create objects (Realm's own test
/// models: `objectCol = SwiftBoolObject()`); adding the object adds the linked one.
final class PortingInitialObjectContractTests: XCTestCase {
    final class Collar: Object {
        @Persisted var size: Int = 3
        @Persisted var color: String = "red"
    }
    final class Pet: Object {
        @Persisted(primaryKey: true) var name: String = ""
        @Persisted var collar: Collar? = Collar()
        @Persisted var age: Int = 1
        @Persisted var spare: Collar? = Collar()
        @Persisted var tags: List<String>
    }
    final class Owner: Object {
        @Persisted var name: String = "owner"
        @Persisted var pet: Pet? = Pet()
    }

    func testAnInitialValueThatCreatesAnObject() throws {
        // Unmanaged: every property in its place, the nested objects with their own values.
        let pet = Pet()
        XCTAssertEqual(pet.age, 1)
        XCTAssertEqual(pet.collar?.size, 3)
        XCTAssertEqual(pet.spare?.color, "red")
        XCTAssertFalse(pet.collar === pet.spare)
        pet.name = "Rex"
        pet.collar?.size = 5
        pet.tags.append("good")
        let owner = Owner()
        XCTAssertEqual(owner.name, "owner")
        XCTAssertEqual(owner.pet?.collar?.color, "red", "two levels deep")
        // Objects made one after another on this thread are unaffected.
        let plain = Collar()
        XCTAssertEqual(plain.size, 3)
        XCTAssertEqual(plain.color, "red")

        let (realm, config) = try contractRealm("initial-object", types: [Collar.self, Pet.self, Owner.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        try realm.write { try realm.add(pet) }
        XCTAssertEqual(realm.objects(Collar.self).count, 2, "adding the pet added both collars")
        let stored = try XCTUnwrap(realm.object(ofType: Pet.self, forPrimaryKey: "Rex"))
        XCTAssertEqual(stored.collar?.size, 5)
        XCTAssertEqual(stored.spare?.size, 3)
        XCTAssertEqual(stored.age, 1)
        XCTAssertEqual(Array(stored.tags), ["good"])
        // Reading managed objects (made without their initial values' objects being kept).
        for _ in 0 ..< 3 { XCTAssertEqual(realm.objects(Pet.self).first?.collar?.size, 5) }
        XCTAssertEqual(realm.objects(Collar.self).count, 2, "reading creates nothing")
        try realm.write { try realm.add(Owner()) }
        XCTAssertEqual(realm.objects(Owner.self).first?.pet?.collar?.size, 3)
        XCTAssertEqual(realm.objects(Collar.self).count, 4)
    }

    /// Initializers that assign properties before super.init() (Swift initializes such a
    /// property's wrapper twice). Every property assigned so: the object works, unmanaged
    /// and added. Only some of them: the values read back unmanaged, and adding throws an
    /// error that says what to change (it trapped on an index out of range).
    final class Badge: Object {
        @Persisted var label: String
        @Persisted var level: Int
        init(label: String, level: Int) {
            self.label = label
            self.level = level
            super.init()
        }
        required init() { super.init() }
    }
    final class Ribbon: Object {
        @Persisted var label: String
        @Persisted var level: Int = 2
        init(label: String) {
            self.label = label
            super.init()
        }
        required init() { super.init() }
    }

    func testPropertiesAssignedBeforeSuperInit() throws {
        for i in 0 ..< 1_000 {
            let badge = Badge(label: "b\(i)", level: i)
            XCTAssertEqual(badge.label, "b\(i)")
            XCTAssertEqual(badge.level, i)
            let ribbon = Ribbon(label: "r\(i)")
            XCTAssertEqual(ribbon.label, "r\(i)")
            XCTAssertEqual(ribbon.level, 2)
        }
        XCTAssertEqual(Collar().size, 3, "no slot left behind shifts the next object")
        let (realm, config) = try contractRealm("before-super", types: [Badge.self, Ribbon.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        try realm.write { try realm.add(Badge(label: "gold", level: 7)) }
        XCTAssertEqual(realm.objects(Badge.self).first?.label, "gold")
        XCTAssertEqual(realm.objects(Badge.self).first?.level, 7)
        try realm.write {
            XCTAssertThrowsError(try realm.add(Ribbon(label: "blue"))) { error in
                XCTAssertTrue("\(error)".contains("assign it after super.init()"), "\(error)")
            }
        }
        XCTAssertEqual(realm.objects(Ribbon.self).count, 0)
        XCTAssertEqual(Collar().color, "red")
        // 10,000 objects assigning every property before super.init() orphan 20,000 slots:
        // an object made after them, with a nested initial value, is still right.
        for i in 0 ..< 10_000 { XCTAssertEqual(Badge(label: "x", level: i).level, i) }
        let pet = Pet()
        XCTAssertEqual(pet.collar?.size, 3)
        XCTAssertEqual(pet.age, 1)
    }

    /// A nested initial value whose class registers a property twice: the object holding
    /// it reads its own properties (it trapped on an index out of range) and adding it
    /// throws, naming what to change; the same for an embedded object.
    final class Street: Object {
        @Persisted var name: String
        @Persisted var number: Int = 1
        init(name: String) {
            self.name = name
            super.init()
        }
        required init() { super.init() }
    }
    final class House: Object {
        @Persisted var floors: Int = 2
        @Persisted var street: Street? = Street(name: "Main")
        @Persisted var rooms: Int = 5
    }
    final class Porch: EmbeddedObject {
        @Persisted var width: Int
        @Persisted var depth: Int = 3
        init(width: Int) {
            self.width = width
            super.init()
        }
        required init() { super.init() }
    }
    final class Cabin: Object {
        @Persisted var porch: Porch?
    }

    func testANestedObjectRegisteringAPropertyTwice() throws {
        let house = House()
        XCTAssertEqual(house.floors, 2)
        XCTAssertEqual(house.rooms, 5)
        XCTAssertEqual(house.street?.name, "Main")
        XCTAssertEqual(house.street?.number, 1)
        let (realm, config) = try contractRealm("nested-twice", types: [House.self, Street.self, Cabin.self, Porch.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        try realm.write {
            XCTAssertThrowsError(try realm.add(house)) { error in
                XCTAssertTrue("\(error)".contains("assign it after super.init()"), "\(error)")
            }
            let cabin = Cabin()
            cabin.porch = Porch(width: 4)
            XCTAssertThrowsError(try realm.add(cabin)) { error in
                XCTAssertTrue("\(error)".contains("Porch") && "\(error)".contains("after super.init()"), "\(error)")
            }
        }
        XCTAssertEqual(realm.objects(Cabin.self).count, 0)
    }

    /// An initial value that writes to a realm (a counter handing out ids, a pattern of
    /// Realm apps): the object being made keeps the properties registered before it.
    final class Counter: Object {
        @Persisted(primaryKey: true) var name: String = ""
        @Persisted var value: Int = 0
    }
    final class Ticket: Object {
        @Persisted var title: String = "untitled"
        @Persisted var number: Int = Ticket.nextNumber()
        @Persisted var done: Bool = true

        nonisolated(unsafe) static var realm: Realm?
        static func nextNumber() -> Int {
            guard let realm else { return 0 }
            return (try? realm.write {
                let counter = try realm.create(Counter.self, value: ["name": "tickets"], update: .modified)
                counter.value += 1
                return counter.value
            }) ?? -1
        }
    }

    func testAnInitialValueThatWritesToARealm() throws {
        let (realm, config) = try contractRealm("initial-write", types: [Counter.self, Ticket.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        Ticket.realm = realm
        defer { Ticket.realm = nil }
        let tickets = (0 ..< 3).map { _ in Ticket() }
        XCTAssertEqual(tickets.map(\.number), [1, 2, 3])
        XCTAssertEqual(tickets.map(\.title), ["untitled", "untitled", "untitled"])
        XCTAssertEqual(tickets.map(\.done), [true, true, true])
    }
}

/// Realm's `create(_:value:)` without the primary key uses the property's initial value:
/// a fresh `ObjectId` for an `_id` declared without one.
final class PortingCreateWithoutKeyContractTests: XCTestCase {
    final class Note: Object {
        @Persisted(primaryKey: true) var _id: ObjectId
        @Persisted var text: String = ""
    }

    func testCreateWithoutThePrimaryKey() throws {
        let (realm, config) = try contractRealm("create-without-key", types: [Note.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        let (first, second) = try realm.write {
            (try realm.create(Note.self, value: ["text": "a"]), try realm.create(Note.self, value: ["text": "b"]))
        }
        XCTAssertNotEqual(first._id, second._id)
        XCTAssertEqual(realm.objects(Note.self).count, 2)
        XCTAssertEqual(realm.object(ofType: Note.self, forPrimaryKey: second._id)?.text, "b")
    }
}

/// Realm Swift's configuration initializers and `fileURL`, as ported code writes them.
final class PortingConfigurationContractTests: XCTestCase {
    final class Entry: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var text: String = ""
    }

    func testRealmShapedConfigurations() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-\(UUID().uuidString)/app.realm")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        var config = Realm.Configuration(fileURL: url, schemaVersion: 3, objectTypes: [Entry.self])
        XCTAssertEqual(config.fileURL, url)
        XCTAssertEqual(config.directory, url)
        XCTAssertEqual(config.schemaVersion, 3)
        do {
            let realm = try Realm(configuration: config)
            try realm.write { try realm.create(Entry.self, value: ["id": 1, "text": "on disk"]) }
            realm.invalidate()
        }
        config.fileURL = url
        XCTAssertEqual(try Realm(configuration: config).object(ofType: Entry.self, forPrimaryKey: 1)?.text, "on disk")

        let memory = Realm.Configuration(inMemoryIdentifier: "porting-\(UUID().uuidString)", objectTypes: [Entry.self])
        XCTAssertNil(memory.fileURL)
        let first = try Realm(configuration: memory)
        try first.write { try first.create(Entry.self, value: ["id": 2]) }
        XCTAssertEqual(try Realm(configuration: memory).objects(Entry.self).count, 1, "one in-memory store per identifier")

        let saved = Realm.Configuration.defaultConfiguration
        defer { Realm.Configuration.defaultConfiguration = saved }
        Realm.Configuration.defaultConfiguration = Realm.Configuration(fileURL: nil, schemaVersion: 3, objectTypes: [Entry.self])
        XCTAssertEqual(try Realm(fileURL: url).object(ofType: Entry.self, forPrimaryKey: 1)?.text, "on disk")
    }
}

/// Realm Swift's collection API by property name and by positions, as ported code calls it.
final class PortingNamedAggregateContractTests: XCTestCase {
    final class Player: Object {
        @Persisted(primaryKey: true) var name: String = ""
        @Persisted var age: Int = 0
        @Persisted var rating: Double = 0
        @Persisted var bonus: Int? = nil
        @Persisted var joined: Date = Date(timeIntervalSince1970: 0)
    }

    func testAggregatesByNameAndPositions() throws {
        let (realm, config) = try contractRealm("named", types: [Player.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        try realm.write {
            for (i, name) in ["ann", "bob", "cy", "di"].enumerated() {
                try realm.create(Player.self, value: ["name": name, "age": 20 + i * 10, "rating": Double(i) + 0.5,
                                                      "bonus": i % 2 == 0 ? i : nil, "joined": Date(timeIntervalSince1970: Double(i) * 100)])
            }
        }
        let all = realm.objects(Player.self)
        XCTAssertEqual(all.min(ofProperty: "age") as Int?, 20)
        XCTAssertEqual(all.max(ofProperty: "age") as Int?, 50)
        XCTAssertEqual(all.sum(ofProperty: "age") as Int, 140)
        XCTAssertEqual(all.average(ofProperty: "age") as Double?, 35)
        XCTAssertEqual(all.sum(ofProperty: "rating") as Double, 8)
        XCTAssertEqual(all.max(ofProperty: "joined") as Date?, Date(timeIntervalSince1970: 300))
        XCTAssertEqual(all.sum(ofProperty: "bonus") as Int, 2, "nil values are left out")
        XCTAssertEqual(all.average(ofProperty: "bonus") as Double?, 1)
        XCTAssertEqual(all.min(ofProperty: "name") as String?, "ann")
        let older = all.filter("age > 25")
        XCTAssertEqual(older.min(ofProperty: "age") as Int?, 30)
        XCTAssertNil(all.filter("age > 99").average(ofProperty: "age") as Double?)
        XCTAssertEqual(all.filter("age > 99").sum(ofProperty: "age") as Int, 0)

        XCTAssertEqual(all.objects(at: IndexSet([0, 2])).map(\.name), ["ann", "cy"])
        XCTAssertEqual(all.index(matching: #Predicate<Player> { $0.age > 35 }), 2)
        XCTAssertEqual(all.index(matching: "rating > %@", 1.0), 1)
        XCTAssertNil(all.index(matching: "age > 100"))
        XCTAssertEqual(all.value(forKey: "name") as? [Any?] as? [String], ["ann", "bob", "cy", "di"])
        try realm.write { older.setValue(1, forKey: "age") }
        XCTAssertEqual(all.map(\.age), [20, 1, 1, 1])
    }
}

/// Realm Swift's freeze, thaw, isFrozen and isInvalidated on collection properties and results.
final class PortingCollectionFreezeContractTests: XCTestCase {
    final class Shelf: Object {
        @Persisted(primaryKey: true) var name: String = ""
        @Persisted var books: List<String>
        @Persisted var labels: MutableSet<String>
        @Persisted var counts: Map<String, Int>
    }

    func testFreezingAndThawingCollections() throws {
        let (realm, config) = try contractRealm("collection-freeze", types: [Shelf.self])
        defer { try? FileManager.default.removeItem(at: config.directory!) }
        let shelf = try realm.write {
            let shelf = try realm.create(Shelf.self, value: ["name": "a"])
            shelf.books.append(objectsIn: ["x", "y"])
            shelf.labels.insert("new")
            shelf.counts["x"] = 1
            return shelf
        }
        let unmanaged = List<String>()
        XCTAssertFalse(unmanaged.isFrozen)
        XCTAssertFalse(unmanaged.isInvalidated)

        let books = shelf.books.freeze(), labels = shelf.labels.freeze(), counts = shelf.counts.freeze()
        XCTAssertTrue(books.isFrozen && labels.isFrozen && counts.isFrozen)
        XCTAssertFalse(shelf.books.isFrozen)
        try realm.write {
            shelf.books.append("z")
            shelf.labels.insert("old")
            shelf.counts["y"] = 2
        }
        XCTAssertEqual(Array(books), ["x", "y"], "a frozen list keeps the commit it was frozen at")
        XCTAssertEqual(labels.count, 1)
        XCTAssertEqual(counts.count, 1)
        XCTAssertEqual(Array(try XCTUnwrap(books.thaw())), ["x", "y", "z"])
        XCTAssertEqual(try XCTUnwrap(labels.thaw()).count, 2)
        XCTAssertEqual(try XCTUnwrap(counts.thaw())["y"], 2)
        XCTAssertTrue(books.freeze() === books, "freezing a frozen list returns it")

        let results = realm.objects(Shelf.self)
        XCTAssertFalse(shelf.books.isInvalidated || results.isInvalidated)
        try realm.write { try realm.delete(shelf) }
        XCTAssertTrue(shelf.books.isInvalidated && shelf.labels.isInvalidated && shelf.counts.isInvalidated)
        XCTAssertNil(books.thaw(), "its object was deleted since")
        realm.invalidate()
        XCTAssertTrue(results.isInvalidated)
    }
}

/// Realm Swift's per-thread instance: `try Realm(configuration:)` twice where one runs is one
/// realm, so a helper that opens its own realm inside a write writes in that write.
final class PortingInstanceCacheContractTests: PortingStoreTestCase {
    /// What Realm code does in every function: open the realm again.
    private func addContact(_ name: String, _ config: Realm.Configuration) throws {
        let realm = try Realm(configuration: config)
        let contact = Contact()
        contact.name = name
        try realm.add(contact)
    }

    func testOneInstancePerThreadAndConfiguration() throws {
        let config = try configuration("instances")
        let realm = try Realm(configuration: config)
        XCTAssertTrue(try Realm(configuration: config) === realm)
        try realm.write {
            try addContact("Ann", config)
            XCTAssertTrue(try Realm(configuration: config).isInWriteTransaction, "the write of the one is the write of the other")
        }
        XCTAssertEqual(realm.objects(Contact.self).count, 1)

        var readOnly = config
        readOnly.readOnly = true
        XCTAssertFalse(try Realm(configuration: readOnly) === realm, "another configuration is another instance")
        XCTAssertFalse(try Realm(configuration: try configuration("instances-other")) === realm)

        let onQueue = LockedValue<Bool?>(nil)
        let queue = DispatchQueue(label: "instances")
        let realmID = ObjectIdentifier(realm)
        queue.sync {
            let queueRealm = try? Realm(configuration: config, queue: queue)
            let again = try? Realm(configuration: config, queue: queue)
            onQueue.set(queueRealm.map { ObjectIdentifier($0) != realmID && $0 === again })
        }
        XCTAssertEqual(onQueue.get(), true, "a queue has its own instance, one for every open there")

        realm.invalidate()
        let reopened = try Realm(configuration: config)
        XCTAssertFalse(reopened === realm, "an invalidated realm is not handed out again")
        XCTAssertEqual(reopened.objects(Contact.self).count, 1)
    }

    func testOneInstancePerTask() async throws {
        let config = try configuration("instances-task")
        let (same, otherTaskDiffers) = try await _Concurrency.Task {
            let first = try Realm(configuration: config)
            await _Concurrency.Task.yield()
            let second = try Realm(configuration: config)
            // (`first` stays alive meanwhile: its address cannot be reused by the other's.)
            let other = try await _Concurrency.Task { ObjectIdentifier(try Realm(configuration: config)) }.value
            return (first === second, other != ObjectIdentifier(first))
        }.value
        XCTAssertTrue(same, "one task, across awaits: one instance")
        XCTAssertTrue(otherTaskDiffers, "another task: another instance")
    }

    func testAReleasedInstanceIsNotKept() throws {
        let config = try configuration("instances-released")
        weak var released: Realm?
        do {
            let realm = try Realm(configuration: config)
            released = realm
        }
        XCTAssertNil(released, "the cache holds instances weakly")
        XCTAssertNotNil(try Realm(configuration: config))
    }
}

