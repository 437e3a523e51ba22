// The seed documents' README examples, transcribed as closely as Swift allows (Objective-C
// → Swift, `@objc dynamic` → `@Persisted`, a managed object context → the realm), with the
// outcomes the seeds state asserted: FastEasyMapping (FEM) and RealmResultsController
// (RRC; RealmCoder, Realm+JSON and WCDB are in SeedCoderExamplesTests.swift). Only `import Strata`: a drift in the public API fails to compile here. Then one
// test per seed behaviour Strata keeps (delegate order with nested objects, reverseMap
// never given nil, custom assignment policies, NotificationCenter posts on change).
//
// Names the JSON contract file already uses (`User`, `Task` is Swift's) are renamed:
// RRC's `User` is `RRCUser`, its `Task` model (the disclaimer's) is `RRCTask`, and its
// `Task` entity (the mapper's result) is `TaskEntity`.

import Foundation
import Strata
import XCTest

// MARK: FEM models (Person, Car, Phone and Category are the contract file's)

final class Website: Object {
    @Persisted(primaryKey: true) var identifier: Int = 0
    @Persisted var title: String = ""
    @Persisted var category: Category?
}

final class Bookmark: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var url: String = ""
    @Persisted var urlString: String = ""
    @Persisted var updateDate: Date? = nil
}

extension Person {
    // + (FEMMapping *)defaultMapping
    static func defaultMapping() -> EntityMapping {
        let mapping = EntityMapping(for: Person.self)           // initWithEntityName:@"Person"
        mapping.addAttributes(fromArray: ["name"])
        mapping.addAttributes(fromDictionary: ["email": "user_email"])
        mapping.addRelationshipMapping(Car.defaultMapping(), forProperty: "car", keyPath: "car")
        mapping.addToManyRelationshipMapping(Phone.defaultMapping(), forProperty: "phones", keyPath: "phones")
        return mapping
    }
}

extension Car {
    static func defaultMapping() -> EntityMapping {
        let mapping = EntityMapping(for: Car.self)
        mapping.addAttributes(fromArray: ["model", "year"])
        return mapping
    }
}

extension Phone {
    static func defaultMapping() -> EntityMapping {
        let mapping = EntityMapping(for: Phone.self)
        mapping.addAttributes(fromArray: ["number", "ddd", "ddi"])
        return mapping
    }
}

extension Website {
    // The seed's "binding relationships by primary key" mapping.
    static func defaultMapping() -> EntityMapping {
        let mapping = EntityMapping(for: Website.self)
        mapping.primaryKey = "identifier"
        mapping.addAttributes(fromDictionary: ["identifier": "id", "title": "title"])

        let categoryMapping = EntityMapping(for: Category.self)
        categoryMapping.primaryKey = "identifier"
        categoryMapping.addAttributes(fromDictionary: ["identifier": "category"])

        mapping.addRelationshipMapping(categoryMapping, property: "category", keyPath: nil)
        return mapping
    }

    // The seed's weak-relationship mapping.
    static func weakMapping() -> EntityMapping {
        let mapping = EntityMapping(for: Website.self)
        mapping.primaryKey = "identifier"
        mapping.addAttributes(fromDictionary: ["identifier": "id", "title": "title"])

        let categoryMapping = EntityMapping(for: Category.self)
        categoryMapping.primaryKey = "identifier"
        categoryMapping.addAttribute(withProperty: "identifier", keyPath: nil)

        let categoryRelationship = Relationship(property: "category", keyPath: "category", mapping: categoryMapping)
        categoryRelationship.weak = true

        mapping.addRelationship(categoryRelationship)
        return mapping
    }
}

/// Records a deserializer's delegate calls as `will/did Object/Collection(<type>)`.
final class OrderRecorder: DeserializerDelegate {
    var calls: [String] = []
    private func name(_ mapping: EntityMapping) -> String { mapping.type.className }
    func deserializer(_ deserializer: Deserializer, willMapObjectFromRepresentation representation: JSONValue, mapping: EntityMapping) {
        calls.append("willMapObject(\(name(mapping)))")
    }
    func deserializer(_ deserializer: Deserializer, didMapObject object: Object, fromRepresentation representation: JSONValue, mapping: EntityMapping) {
        calls.append("didMapObject(\(type(of: object).className))")
    }
    func deserializer(_ deserializer: Deserializer, willMapCollectionFromRepresentation representation: JSONValue, mapping: EntityMapping) {
        calls.append("willMapCollection(\(name(mapping)))")
    }
    func deserializer(_ deserializer: Deserializer, didMapCollection collection: [Object], fromRepresentation representation: JSONValue, mapping: EntityMapping) {
        calls.append("didMapCollection(\(name(mapping)) x\(collection.count))")
    }
}

// MARK: RRC models

final class TaskModel: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var projectID: Int = 0
    @Persisted var resolved: Bool = false

    convenience init(id: Int, name: String, projectID: Int = 0) {
        self.init()
        self.id = id
        self.name = name
        self.projectID = projectID
    }
}

/// The seed's `Task` entity: what the controller hands out, made by `TaskEntity.map`.
struct TaskEntity {
    let id: Int
    let name: String
    static func map(_ model: TaskModel) -> TaskEntity { TaskEntity(id: model.id, name: model.name) }
    init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
    init(_ model: TaskModel) { self.init(id: model.id, name: model.name) }
}

final class RRCUser: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
}

final class RRCTask: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var assignedUser: RRCUser?
}

/// Records a results controller's delegate calls.
final class RRCRecorder: RealmResultsControllerDelegate {
    var calls: [String] = []
    func willChangeResults(controller: AnyObject) { calls.append("will") }
    func didChangeObject<U>(object: U, controller: AnyObject, oldIndexPath: IndexPath, newIndexPath: IndexPath, changeType: RealmResultsChangeType) {
        calls.append("\(changeType.rawValue) \(newIndexPath.section).\(newIndexPath.item)")
    }
    func didChangeSection<U>(section: RealmSection<U>, controller: AnyObject, index: Int, changeType: RealmResultsChangeType) {
        calls.append("section \(changeType.rawValue) \(index)")
    }
    func didChangeResults(controller: AnyObject) { calls.append("did") }
}

/// Collects notifications posted on any thread.
final class PostedNames: @unchecked Sendable {
    private let lock = NSLock()
    private var names: [String] = []
    private var tokens: [NSObjectProtocol] = []

    func observe(_ name: String) {
        let token = NotificationCenter.default.addObserver(forName: Notification.Name(name), object: nil, queue: nil) { [self] note in
            let change = (note.userInfo?[RealmResultsChangeType.userInfoKey] as? RealmResultsChangeType)?.rawValue ?? "?"
            lock.lock()
            names.append("\(note.name.rawValue) \(change)")
            lock.unlock()
        }
        lock.lock()
        tokens.append(token)
        lock.unlock()
    }

    func take() -> [String] {
        lock.lock()
        defer { names = []; lock.unlock() }
        return names
    }

    deinit {
        for token in tokens { NotificationCenter.default.removeObserver(token) }
    }
}

final class SeedExamplesTests: ContractTestCase {
    private func openRealm() throws -> Realm {
        try realm([Car.self, Phone.self, Category.self, Person.self, Website.self, Bookmark.self,
                   TaskModel.self, RRCUser.self, RRCTask.self])
    }

    private let lucas = #"""
    {
        "name": "Lucas",
        "user_email": "lucas@example.com",
        "car": {
            "model": "i30",
            "year": "2013"
        },
        "phones": [
            {
                "ddi": "55",
                "ddd": "85",
                "number": "1111-1111"
            },
            {
                "ddi": "55",
                "ddd": "11",
                "number": "2222-222"
            }
        ]
    }
    """#

    // MARK: FastEasyMapping: the README, section by section

    /// Deserialization: an object, a collection, filling an object.
    func testFEMDeserialization() throws {
        let realm = try openRealm()
        let json = try JSONValue(data: Data(lucas.utf8))

        let mapping = Person.defaultMapping()
        let person: Person = try Deserializer.object(fromRepresentation: json, mapping: mapping, context: realm)
        XCTAssertEqual(person.name, "Lucas")
        XCTAssertEqual(person.email, "lucas@example.com")
        XCTAssertEqual(person.car?.model, "i30")
        XCTAssertEqual(person.car?.year, "2013")
        XCTAssertEqual(person.phones.map(\.number), ["1111-1111", "2222-222"])
        XCTAssertEqual(person.phones.map(\.ddd), ["85", "11"])

        let persons = try Deserializer.collection(fromRepresentation: JSONValue.array([json]), mapping: mapping, context: realm)
        XCTAssertEqual(persons.count, 1)
        XCTAssertEqual(realm.objects(Person.self).count, 1, "one Person: its primary key (email) keeps it unique")

        try Deserializer.fill(object: person, fromRepresentation: ["name": "Lucas M."] as [String: Any], mapping: mapping)
        XCTAssertEqual(person.name, "Lucas M.")
        XCTAssertEqual(person.car?.model, "i30", "keys the JSON leaves out keep their values")
    }

    /// Serialization: an object and a collection back to JSON with the same mapping.
    func testFEMSerialization() throws {
        let realm = try openRealm()
        let mapping = Person.defaultMapping()
        let person: Person = try Deserializer(realm: realm).object(fromRepresentation: Data(lucas.utf8), mapping: mapping)

        let json = try Serializer.serialize(object: person, mapping: mapping)
        XCTAssertEqual(json, try JSONValue(data: Data(lucas.utf8)), "the same JSON comes back")
        let jsons = try Serializer.serialize(collection: [person], mapping: mapping)
        XCTAssertEqual(jsons, .array([json]))
    }

    /// FEMAttribute: the same key, another key, and another type through map / reverseMap.
    func testFEMAttributes() throws {
        let realm = try openRealm()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(abbreviation: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"

        let mapping = EntityMapping(objectClass: Bookmark.self)
        mapping.addAttribute(withProperty: "id", keyPath: "id")
        mapping.addAttribute(Attribute.mapping(ofProperty: "url"))
        _ = Attribute(property: "url", keyPath: "url", map: nil, reverseMap: nil)                  // "or"
        mapping.addAttribute(Attribute.mapping(ofProperty: "urlString", toKeyPath: "URL"))
        _ = Attribute(property: "urlString", keyPath: "URL", map: nil, reverseMap: nil)            // "or"
        let attribute = Attribute(property: "updateDate", keyPath: "timestamp", map: { value in
            if case .string(let text) = value {
                return formatter.date(from: text)
            }
            return nil
        }, reverseMap: { value in
            .string(formatter.string(from: value as! Date))   // only ever given a non-nil value
        })
        mapping.addAttribute(attribute)

        let deserializer = Deserializer(realm: realm)
        let bookmark: Bookmark = try deserializer.object(fromRepresentation: [
            "id": 1, "url": "https://a.example", "URL": "https://b.example", "timestamp": "2017-06-01T10:20:30.000Z",
        ] as [String: Any], mapping: mapping)
        XCTAssertEqual(bookmark.url, "https://a.example")
        XCTAssertEqual(bookmark.urlString, "https://b.example")
        XCTAssertEqual(bookmark.updateDate, formatter.date(from: "2017-06-01T10:20:30.000Z"))
        XCTAssertEqual(try Serializer.serialize(object: bookmark, mapping: mapping)["timestamp"], .string("2017-06-01T10:20:30.000Z"))

        // "map can receive NSNull" (JSON null); returning nil gives nil.
        _ = try deserializer.object(fromRepresentation: ["id": 1, "timestamp": NSNull()] as [String: Any], mapping: mapping)
        XCTAssertNil(bookmark.updateDate)
        // "reverseMap is only called when the property holds a non-nil value"; nil → {"keyPath": null}.
        XCTAssertEqual(try Serializer.serialize(object: bookmark, mapping: mapping)["timestamp"], .null)
        XCTAssertNil(try Serializer.serialize(object: bookmark, mapping: mapping, includeNulls: false)["timestamp"])
    }

    /// FEMRelationship: explicit and implicit, `toMany`, and the five built-in policies' names.
    func testFEMRelationships() throws {
        let realm = try openRealm()
        let mapping = EntityMapping(objectClass: Person.self)
        mapping.addAttributes(fromDictionary: ["email": "user_email"])
        let carMapping = EntityMapping(objectClass: Car.self)
        carMapping.addAttributes(fromArray: ["model"])
        let carRelationship = Relationship(property: "car", keyPath: "car", mapping: carMapping)
        mapping.addRelationship(carRelationship)

        let phoneMapping = Phone.defaultMapping()
        let childRelationship = Relationship(property: "phones", keyPath: "phones", mapping: phoneMapping)
        childRelationship.toMany = true
        XCTAssertTrue(childRelationship.isToMany)
        mapping.addRelationship(childRelationship)
        let policies: [AssignmentPolicy] = [.assign, .objectMerge, .collectionMerge, .objectReplace, .collectionReplace]
        XCTAssertEqual(policies.count, 5)
        XCTAssertEqual(childRelationship.assignmentPolicy, .assign, "the default policy")

        let person: Person = try Deserializer(realm: realm).object(fromRepresentation: Data(lucas.utf8), mapping: mapping)
        XCTAssertEqual(person.car?.model, "i30")
        XCTAssertEqual(person.phones.count, 2)

        // Implicitly, FEM's other spelling.
        let implicit = EntityMapping(objectClass: Person.self)
        implicit.addAttributes(fromDictionary: ["email": "user_email"])
        implicit.addToManyRelationshipMapping(phoneMapping, property: "phones", keyPath: "phones")
        let again: Person = try Deserializer(realm: realm).object(fromRepresentation: Data(lucas.utf8), mapping: implicit)
        XCTAssertEqual(again.phones.count, 2)

        // toMany on a to-one property is a clear error, before anything is written.
        let wrong = Relationship(property: "car", keyPath: "car", mapping: carMapping)
        wrong.toMany = true
        let bad = EntityMapping(objectClass: Person.self)
        bad.addRelationship(wrong)
        XCTAssertThrowsError(try Deserializer(realm: realm).object(fromRepresentation: Data(lucas.utf8), mapping: bad)) {
            XCTAssertEqual("\($0)", "invalid value: EntityMapping(Person): relationship 'car' is toMany, but Person.car is a to-one link")
        }
    }

    /// Root path: the object nested under "result"; ignored inside relationships.
    func testFEMRootPath() throws {
        let realm = try openRealm()
        let mapping = EntityMapping(for: Person.self)
        mapping.rootPath = "result"
        mapping.addAttributes(fromArray: ["name"])
        mapping.addAttributes(fromDictionary: ["email": "user_email"])
        let car = Car.defaultMapping()
        car.rootPath = "vehicle"                       // ignored: the relationship's keyPath says where
        mapping.addRelationshipMapping(car, forProperty: "car", keyPath: "car")
        let json = #"{"result": {"name": "Lucas", "user_email": "lucas@example.com", "car": {"model": "i30", "year": "2013"}}}"#
        let person: Person = try Deserializer(realm: realm).object(fromRepresentation: Data(json.utf8), mapping: mapping)
        XCTAssertEqual(person.name, "Lucas")
        XCTAssertEqual(person.car?.model, "i30", "FEMMapping.rootPath is ignored during relationship mapping")
        let out = try Serializer.serialize(object: person, mapping: mapping)
        XCTAssertEqual(out["result"]?["car"]?["model"], .string("i30"), "\(out)")
        XCTAssertNil(out["result"]?["car"]?["vehicle"])
    }

    /// Uniqueness: "from the second import on, FEMDeserializer updates the existing Person".
    func testFEMUniqueness() throws {
        let realm = try openRealm()
        let mapping = EntityMapping(for: Person.self)
        mapping.primaryKey = "email"
        mapping.addAttributes(fromArray: ["name"])
        mapping.addAttributes(fromDictionary: ["email": "user_email"])
        mapping.addRelationshipMapping(Car.defaultMapping(), forProperty: "car", keyPath: "car")
        let deserializer = Deserializer(realm: realm)
        _ = try deserializer.object(fromRepresentation: Data(lucas.utf8), mapping: mapping)
        let second: Person = try deserializer.object(fromRepresentation: ["name": "Lucas 2", "user_email": "lucas@example.com"] as [String: Any],
                                                     mapping: mapping)
        XCTAssertEqual(realm.objects(Person.self).count, 1)
        XCTAssertEqual(second.name, "Lucas 2")
    }

    /// Binding a relationship by primary key (keyPath nil), and the weak relationship.
    func testFEMRelationshipByPrimaryKeyAndWeak() throws {
        let realm = try openRealm()
        let json = try JSONValue(data: Data(#"{"result": {"id": 314, "title": "https://github.com", "category": 4}}"#.utf8))
        let representation = try XCTUnwrap(json["result"])   // the seed's mapping has no rootPath

        // Weak first: "binds Website to the Category only if the latter exists".
        let weakSite: Website = try Deserializer(realm: realm).object(fromRepresentation: representation, mapping: Website.weakMapping())
        XCTAssertNil(weakSite.category)
        XCTAssertEqual(realm.objects(Category.self).count, 0, "no Category holding nothing but its identifier")
        try realm.write { _ = try realm.create(Category.self, value: ["identifier": 4, "name": "Code"]) }
        _ = try Deserializer(realm: realm).object(fromRepresentation: representation, mapping: Website.weakMapping())
        XCTAssertEqual(weakSite.category?.name, "Code")

        // Not weak: the Category is created lazily when missing.
        let other = JSONValue.object(["id": .int(315), "title": .string("https://github.com"), "category": .int(5)])
        let site: Website = try Deserializer(realm: realm).object(fromRepresentation: other, mapping: Website.defaultMapping())
        XCTAssertEqual(site.title, "https://github.com")
        XCTAssertEqual(site.category?.identifier, 5)
        XCTAssertEqual(realm.objects(Category.self).count, 2)
    }

    /// Delegation: the seed's Person/Phone example, as a collection of persons.
    func testFEMDelegateOrderOfTheSeedExample() throws {
        let realm = try openRealm()
        let mapping = EntityMapping(for: Person.self)
        mapping.addAttributes(fromArray: ["name"])
        mapping.addAttributes(fromDictionary: ["email": "user_email"])
        // (The seed writes `[Person defaultMapping]` here, a typo for Phone's.)
        mapping.addToManyRelationshipMapping(Phone.defaultMapping(), forProperty: "phones", keyPath: "phones")

        let deserializer = Deserializer(realm: realm)
        let delegate = OrderRecorder()
        deserializer.delegate = delegate
        let person = #"{"name": "Lucas", "user_email": "lucas@example.com", "phones": [{"ddi": "55", "ddd": "85", "number": "1111-1111"}]}"#
        _ = try deserializer.collection(fromRepresentation: Data("[\(person)]".utf8), mapping: mapping)
        XCTAssertEqual(delegate.calls, [
            "willMapCollection(Person)",            // 1. Persons array
            "willMapObject(Person)",                // 2. Person dictionary
            "willMapCollection(Phone)",             // 3. Phones array
            "willMapObject(Phone)",                 // 4. Phone dictionary
            "didMapObject(Phone)",                  // 5. Phone instance
            "didMapCollection(Phone x1)",           //    (the seed's list leaves it out; its text and FEM call it)
            "didMapObject(Person)",                 // 6. Person instance
            "didMapCollection(Person x1)",          // 7. Persons instances
        ])
    }

    // MARK: FEM behaviours

    /// Nested to-one and to-many objects, several roots, duplicates: FEM's order throughout.
    func testDelegateOrderWithNestedObjects() throws {
        let realm = try openRealm()
        let deserializer = Deserializer(realm: realm)
        let delegate = OrderRecorder()
        deserializer.delegate = delegate
        let two = #"""
        [{"name": "A", "user_email": "a@x", "car": {"model": "T"}, "phones": [{"number": "1"}, {"number": "2"}]},
         {"name": "B", "user_email": "b@x", "phones": []}]
        """#
        let people = try deserializer.collection(fromRepresentation: Data(two.utf8), mapping: Person.defaultMapping())
        XCTAssertEqual(people.count, 2)
        XCTAssertEqual(delegate.calls, [
            "willMapCollection(Person)",
            "willMapObject(Person)",
            "willMapObject(Car)", "didMapObject(Car)",
            "willMapCollection(Phone)",
            "willMapObject(Phone)", "didMapObject(Phone)",
            "willMapObject(Phone)", "didMapObject(Phone)",
            "didMapCollection(Phone x2)",
            "didMapObject(Person)",
            "willMapObject(Person)",
            "willMapCollection(Phone)", "didMapCollection(Phone x0)",
            "didMapObject(Person)",
            "didMapCollection(Person x2)",
        ])
        // One object: its nested objects too (this was only willMapObject, didMapObject).
        delegate.calls = []
        _ = try deserializer.object(fromRepresentation: Data(lucas.utf8), mapping: Person.defaultMapping())
        XCTAssertEqual(delegate.calls, [
            "willMapObject(Person)",
            "willMapObject(Car)", "didMapObject(Car)",
            "willMapCollection(Phone)",
            "willMapObject(Phone)", "didMapObject(Phone)",
            "willMapObject(Phone)", "didMapObject(Phone)",
            "didMapCollection(Phone x2)",
            "didMapObject(Person)",
        ])
        // fill: the object itself and its nested objects, as FEM's fillObject.
        delegate.calls = []
        let a = try XCTUnwrap(realm.object(ofType: Person.self, forPrimaryKey: "a@x"))
        try deserializer.fill(object: a, fromRepresentation: ["car": ["model": "S"]] as [String: Any], mapping: Person.defaultMapping())
        XCTAssertEqual(delegate.calls, ["willMapObject(Person)", "willMapObject(Car)", "didMapObject(Car)", "didMapObject(Person)"])
        // Weak relationships naming missing objects: no events for them (FEM maps nothing).
        delegate.calls = []
        _ = try deserializer.object(fromRepresentation: ["id": 1, "title": "t", "category": 99] as [String: Any], mapping: Website.weakMapping())
        XCTAssertEqual(delegate.calls, ["willMapObject(Website)", "didMapObject(Website)"])
    }

    /// didMapObject runs inside the write: a change the delegate makes is part of the commit.
    func testDelegateMayChangeTheMappedObject() throws {
        final class Stamper: DeserializerDelegate {
            func deserializer(_ deserializer: Deserializer, didMapObject object: Object, fromRepresentation representation: JSONValue, mapping: EntityMapping) {
                if let phone = object as? Phone { phone.ddi = "+" + phone.ddi }
            }
        }
        let realm = try openRealm()
        let deserializer = Deserializer(realm: realm)
        let stamper = Stamper()
        deserializer.delegate = stamper
        let person: Person = try deserializer.object(fromRepresentation: Data(lucas.utf8), mapping: Person.defaultMapping())
        XCTAssertEqual(person.phones.map(\.ddi), ["+55", "+55"])
        XCTAssertFalse(realm.isInWriteTransaction)
    }

    /// reverseMap is never handed nil: nil is null (or left out without includeNulls).
    func testReverseMapIsNotCalledForNil() throws {
        let realm = try openRealm()
        let calls = Counter()
        let maps = Counter()
        let mapping = EntityMapping(for: Bookmark.self)
        mapping.addAttributes(fromArray: ["id"])
        mapping.addAttribute(Attribute.mapping(ofProperty: "updateDate", toKeyPath: "timestamp", map: { json in
            maps.add()
            if case .int(let seconds) = json { return Date(timeIntervalSince1970: Double(seconds)) }
            return nil
        }, reverseMap: { value in
            calls.add()
            guard let date = value as? Date else {
                XCTFail("reverseMap was given \(String(describing: value))")
                return .string("not a date")
            }
            return .int(Int64(date.timeIntervalSince1970))
        }))
        let bookmark: Bookmark = try Deserializer(realm: realm).object(fromRepresentation: ["id": 1] as [String: Any], mapping: mapping)
        XCTAssertNil(bookmark.updateDate)
        XCTAssertEqual(maps.value, 0, "map is not called for a missing key")
        _ = try Deserializer(realm: realm).object(fromRepresentation: ["id": 1, "timestamp": NSNull()] as [String: Any], mapping: mapping)
        XCTAssertEqual(maps.value, 1, "map is called for null")
        XCTAssertEqual(try Serializer.serialize(object: bookmark, mapping: mapping), .object(["id": .int(1), "timestamp": .null]))
        XCTAssertEqual(try Serializer.serialize(object: bookmark, mapping: mapping, includeNulls: false), .object(["id": .int(1)]))
        XCTAssertEqual(calls.value, 0)
        try realm.write { bookmark.updateDate = Date(timeIntervalSince1970: 60) }
        XCTAssertEqual(try Serializer.serialize(object: bookmark, mapping: mapping)["timestamp"], .int(60))
        XCTAssertEqual(calls.value, 1)
        // An unmanaged object the same way.
        let loose = Bookmark()
        XCTAssertEqual(try Serializer.serialize(object: loose, mapping: mapping)["timestamp"], .null)
        XCTAssertEqual(calls.value, 1)
    }

    /// `.custom { old, new, context in … }`: given the related objects before and the JSON's,
    /// its answer is assigned; it can delete through the context; bad answers are clear errors.
    /// A payload that fails while being written inside the caller's write leaves nothing of
    /// itself behind, even when the caller catches the error and commits (as add and create
    /// do). Before, the objects written ahead of the failure stayed in the write.
    func testAPayloadFailingInsideTheCallersWriteLeavesNothingBehind() throws {
        let realm = try openRealm()
        let car = Relationship(property: "car", keyPath: "car", mapping: Car.defaultMapping())
        car.assignmentPolicy = .custom { old, new, _ in old + new }   // two cars for a to-one: refused while writing
        let person = EntityMapping(for: Person.self)
        person.addAttributes(fromDictionary: ["email": "user_email"])
        person.addAttributes(fromArray: ["name"])
        person.addRelationship(car)
        let deserializer = Deserializer(realm: realm)
        _ = try deserializer.object(fromRepresentation: ["user_email": "ada@example.com", "name": "Ada", "car": ["model": "i30"]] as [String: Any],
                                    mapping: person)
        try realm.write {
            XCTAssertThrowsError(try deserializer.collection(fromRepresentation: [
                ["user_email": "bob@example.com", "name": "Bob"],
                ["user_email": "ada@example.com", "name": "Renamed", "car": ["model": "i40"]],
            ] as [Any], mapping: person))
            // The caller catches the error and commits the rest of its write.
        }
        XCTAssertNil(realm.object(ofType: Person.self, forPrimaryKey: "bob@example.com"), "the failed payload's first object is not kept")
        XCTAssertEqual(realm.object(ofType: Person.self, forPrimaryKey: "ada@example.com")?.name, "Ada")
        XCTAssertEqual(realm.objects(Car.self).map(\.model), ["i30"], "nor the car it read")
    }

    func testCustomAssignmentPolicy() throws {
        let realm = try openRealm()
        let seen = Counter()
        let phones = Relationship(property: "phones", keyPath: "phones", mapping: Phone.defaultMapping())
        phones.toMany = true
        // Keep the old phones, add the new ones after them, drop the ones numbered "0".
        phones.assignmentPolicy = .custom { old, new, context in
            seen.add()
            XCTAssertEqual((context.destinationObject as? Person)?.name, "Lucas", "attributes are set first")
            XCTAssertEqual(context.property, "phones")
            var kept: [Object] = []
            for phone in old + new {
                if (phone as! Phone).number == "0" { try context.deleteRelationshipObject(phone) } else { kept.append(phone) }
            }
            return kept
        }
        let person = EntityMapping(for: Person.self)
        person.addAttributes(fromArray: ["name"])
        person.addAttributes(fromDictionary: ["email": "user_email"])
        person.addRelationship(phones)

        let deserializer = Deserializer(realm: realm)
        let lucas: Person = try deserializer.object(fromRepresentation: Data(self.lucas.utf8), mapping: person)
        XCTAssertEqual(lucas.phones.map(\.number), ["1111-1111", "2222-222"])
        _ = try deserializer.object(fromRepresentation: [
            "user_email": "lucas@example.com", "phones": [["number": "3"], ["number": "0"]],
        ] as [String: Any], mapping: person)
        XCTAssertEqual(lucas.phones.map(\.number), ["1111-1111", "2222-222", "3"])
        XCTAssertEqual(realm.objects(Phone.self).filter { $0.number == "0" }.count, 0, "deleted through the context")
        XCTAssertEqual(seen.value, 2)
        XCTAssertEqual(phones.assignmentPolicy, phones.assignmentPolicy, "a custom policy equals itself")
        XCTAssertNotEqual(phones.assignmentPolicy, .assign)

        // To-one: the answer must be at most one object of the linked type, managed here.
        let car = Relationship(property: "car", keyPath: "car", mapping: Car.defaultMapping())
        car.assignmentPolicy = .custom { old, new, _ in old.isEmpty ? new : old }   // objectMerge-like: keep the first car
        let withCar = EntityMapping(for: Person.self)
        withCar.addAttributes(fromDictionary: ["email": "user_email"])
        withCar.addRelationship(car)
        _ = try deserializer.object(fromRepresentation: ["user_email": "lucas@example.com", "car": ["model": "i30"]] as [String: Any], mapping: withCar)
        _ = try deserializer.object(fromRepresentation: ["user_email": "lucas@example.com", "car": ["model": "i40"]] as [String: Any], mapping: withCar)
        XCTAssertEqual(lucas.car?.model, "i30")

        car.assignmentPolicy = .custom { old, new, _ in old + new }
        XCTAssertThrowsError(try deserializer.object(fromRepresentation: ["user_email": "lucas@example.com", "name": "X", "car": ["model": "i50"]] as [String: Any],
                                                     mapping: withCar)) {
            XCTAssertEqual("\($0)", "invalid value: Person.car: the custom assignment policy returned 2 objects for a to-one relationship")
        }
        car.assignmentPolicy = .custom { _, _, _ in [Car()] }
        XCTAssertThrowsError(try deserializer.object(fromRepresentation: ["user_email": "lucas@example.com", "car": ["model": "i50"]] as [String: Any],
                                                     mapping: withCar)) {
            XCTAssertEqual("\($0)", "invalid value: Person.car: the custom assignment policy returned Car that this realm does not manage (unmanaged, deleted, or another realm's)")
        }
        XCTAssertEqual(lucas.car?.model, "i30", "nothing written")
        XCTAssertEqual(realm.objects(Car.self).filter { $0.model == "i50" }.count, 0)
    }

    /// `let p: Person = try deserializer.object(...)`: typed, and a wrong type is an error
    /// before anything is written.
    func testTypedObjectFromRepresentation() throws {
        let realm = try openRealm()
        let deserializer = Deserializer(realm: realm)
        let p: Person = try deserializer.object(fromRepresentation: Data(lucas.utf8), mapping: Person.defaultMapping())
        XCTAssertEqual(p.name, "Lucas")
        let ps: [Person] = try deserializer.collection(fromRepresentation: Data("[\(lucas)]".utf8), mapping: Person.defaultMapping())
        XCTAssertEqual(ps.first?.email, "lucas@example.com")
        XCTAssertThrowsError(try { () throws -> Car in
            try deserializer.object(fromRepresentation: ["name": "Z", "user_email": "z@x"] as [String: Any], mapping: Person.defaultMapping())
        }()) {
            XCTAssertEqual("\($0)", "invalid value: Deserializer.object(fromRepresentation:mapping:) as Car: the mapping maps Person")
        }
        XCTAssertNil(realm.object(ofType: Person.self, forPrimaryKey: "z@x"))
    }

    /// docs/API.md §8's seed names (RealmResultsController, FastEasyMapping), as ported code writes them (`Task` is `TaskEntity` here).
    func testResultsControllerShimsAndFastEasyMappingSeedLines() throws {
        let realm = try openRealm()
        let task = TaskModel(id: 1, name: "a", projectID: 1)
        let old = TaskModel(id: 2, name: "b", projectID: 1)
        try realm.write { try realm.add(old) }

        // RealmResultsController seed
        let request = RealmRequest<TaskModel>(predicate: "id != 0", realm: realm, sortKeyPaths: ["projectID", "name"])
        let rrc = try RealmResultsController<TaskModel, TaskEntity>(request: request, sectionKeyPath: "projectID", mapper: TaskEntity.init)
        try rrc.performFetch()
        try realm.write { realm.addNotified(task, update: true); realm.deleteNotified(old) }   // shims: plain add/delete
        let posted = PostedNames()
        posted.observe(task.objectIdentifier())
        try realm.write { task.name = "x"; task.notifyChange() }                              // shim: no-op, every change is seen
        let token = NotificationCenter.default.addObserver(forName: Notification.Name(task.objectIdentifier()), object: nil, queue: nil) { _ in }
        NotificationCenter.default.removeObserver(token)
        let array: [TaskModel] = realm.objects(TaskModel.self).toArray()
        XCTAssertEqual(array.map(\.name), ["x"])
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.name) }, [["x"]])
        XCTAssertEqual(posted.take(), ["TaskModel-1 Update"])

        // FastEasyMapping seed
        let phone = Phone.defaultMapping()
        let person = EntityMapping(for: Person.self)
        person.addAttributes(fromDictionary: ["email": "user_email"])
        let phones = Relationship(property: "phones", keyPath: "phones", mapping: phone); phones.toMany = true
        person.addRelationship(phones)
        person.addAttribute(withProperty: "name", keyPath: "full_name")
        person.addAttribute(Attribute.mapping(ofProperty: "updated", toKeyPath: "timestamp", map: { $0 }))
        let rel = phones
        rel.assignmentPolicy = .custom { old, new, context in new }            // FEM's custom policy block
        let deserializer = Deserializer(realm: realm)
        let json = Data(#"{"user_email": "e@x", "full_name": "Eve", "timestamp": "2020-01-01T00:00:00Z", "phones": [{"number": "1"}]}"#.utf8)
        let p: Person = try deserializer.object(fromRepresentation: json, mapping: person)   // typed, no cast
        XCTAssertEqual(p.name, "Eve")
        XCTAssertEqual(p.updated, Date(timeIntervalSince1970: 1_577_836_800))
        XCTAssertEqual(p.phones.map(\.number), ["1"])
    }

    // MARK: RealmResultsController: the README

    func testRRCQuickStartAndShims() throws {
        let realm = try openRealm()
        try realm.write {
            for (id, name, project) in [(1, "Alpha", 1), (2, "Beta", 1), (3, "Gamma", 2), (0, "Zero", 2)] {
                realm.addNotified(TaskModel(id: id, name: name, projectID: project))
            }
        }
        // Create a RealmRequest
        let request = RealmRequest<TaskModel>(predicate: "id != 0", realm: realm, sortKeyPaths: ["projectID", "name"])
        let sectionKeypath = "projectID"
        func MyFilterFunc(_ task: TaskModel) -> Bool { !task.name.hasPrefix("G") }

        // Create the RealmResultsController: with filter, without, and T == U.
        let rrc = try RealmResultsController<TaskModel, TaskEntity>(request: request, sectionKeyPath: sectionKeypath, mapper: TaskEntity.map,
                                                                    filter: MyFilterFunc)
        let delegate = RRCRecorder()
        rrc.delegate = delegate
        let unfiltered = try RealmResultsController<TaskModel, TaskEntity>(request: request, sectionKeyPath: sectionKeypath, mapper: TaskEntity.map)
        let same = try RealmResultsController<TaskModel, TaskModel>(request: request, sectionKeyPath: sectionKeypath)

        // Initial fetch
        try rrc.performFetch()
        try unfiltered.performFetch()
        try same.performFetch()
        XCTAssertEqual(rrc.numberOfSections, 1)
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.name) }, [["Alpha", "Beta"]])
        XCTAssertEqual(unfiltered.numberOfSections, 2)
        XCTAssertEqual(unfiltered.numberOfObjects(at: 1), 1)
        XCTAssertEqual(unfiltered.object(at: IndexPath(item: 0, section: 1)).name, "Gamma")
        XCTAssertNil(same.object(at: IndexPath(item: 0, section: 0)).realm, "T == U: copies that belong to no realm")

        // Adding and deleting with the seed's methods (plain add / delete underneath).
        let delta = TaskModel(id: 4, name: "Delta", projectID: 1)
        try realm.write { realm.addNotified(delta, update: true) }
        XCTAssertEqual(delegate.calls, ["will", "Insert 0.2", "did"])
        delegate.calls = []
        try realm.write { realm.deleteNotified(delta) }
        XCTAssertEqual(delegate.calls, ["will", "Delete 0.2", "did"])
        delegate.calls = []
        let created = try realm.write { realm.createNotified(TaskModel.self, value: ["id": 5, "name": "Epsilon", "projectID": 1], update: true) }
        XCTAssertEqual(created?.name, "Epsilon")
        XCTAssertEqual(delegate.calls, ["will", "Insert 0.2", "did"])
        delegate.calls = []
        XCTAssertNil(try realm.write { realm.createNotified(TaskModel.self, value: ["id": 5, "name": "Again"]) },
                     "a duplicate without update: nil, as the seed's T? says; nothing created")
        XCTAssertEqual(realm.object(ofType: TaskModel.self, forPrimaryKey: 5)?.name, "Epsilon")
        try realm.write { realm.deleteNotified(realm.objects(TaskModel.self).filter { $0.projectID == 1 && $0.id > 2 }) }
        XCTAssertEqual(delegate.calls, ["will", "Delete 0.2", "did"])
        try realm.write { realm.addNotified([TaskModel(id: 4, name: "Delta", projectID: 1)], update: false) }
        XCTAssertEqual(realm.objects(TaskModel.self).count, 5)

        // Notifying a single object's update: notifyChange() is a no-op, the change is seen anyway.
        delegate.calls = []
        let alpha = try XCTUnwrap(realm.object(ofType: TaskModel.self, forPrimaryKey: 1))
        try realm.write {
            alpha.name = "Alpha 2"
            alpha.notifyChange()
        }
        XCTAssertEqual(delegate.calls, ["will", "Update 0.0", "did"])
        delegate.calls = []
        try realm.write { alpha.resolved = true }   // without notifyChange(): the same
        XCTAssertEqual(delegate.calls, ["will", "Update 0.0", "did"])

        // The seed's own notifyChange() example, on a User.
        let users = try RealmResultsController<RRCUser, RRCUser>(request: RealmRequest<RRCUser>(predicate: nil, realm: realm), sectionKeyPath: nil)
        let userDelegate = RRCRecorder()
        users.delegate = userDelegate
        try users.performFetch()
        let user = RRCUser()
        user.name = "old name"

        try realm.write {
            realm.addNotified(user)
        }

        // STUFF GOING ON...

        try realm.write {
            user.name = "new name"
            user.notifyChange() //Notifies that there's a change on the object
        }
        XCTAssertEqual(userDelegate.calls, ["will", "section Insert 0", "Insert 0.0", "did", "will", "Update 0.0", "did"])
        XCTAssertEqual(users.object(at: IndexPath(item: 0, section: 0)).name, "new name")

        // RealmRequest on its own, and realm.execute.
        XCTAssertEqual(request.execute().map(\.id), [1, 2, 4, 3])
        XCTAssertEqual(realm.execute(request).count, 4)
        // toArray()
        let objects: [TaskModel] = realm.objects(TaskModel.self).toArray()
        XCTAssertEqual(objects.count, 5)
    }

    /// "Listening to Realm changes": observers by `objectIdentifier()`, and the disclaimer's
    /// example, whose limitation Strata does not have.
    func testRRCListeningToChangesAndTheDisclaimer() throws {
        let realm = try openRealm()
        let posted = PostedNames()

        let user = RRCUser()
        user.id = 123
        user.name = "John"
        XCTAssertEqual(user.objectIdentifier(), "RRCUser-123", "ObjectType-PrimaryKeyValue")
        posted.observe(user.objectIdentifier())
        try realm.write { realm.addNotified(user) }
        XCTAssertEqual(posted.take(), ["RRCUser-123 Insert"])

        let task = RRCTask()
        task.id = 1
        posted.observe(task.objectIdentifier())
        try realm.write {
            user.name = "Steven"    // the seed: "This change is not going to be notified"
            task.assignedUser = user
            realm.addNotified(task)
        }
        // The seed: "There will be only one notification for the Task object". Strata sees
        // every change, so the user's change is announced too.
        XCTAssertEqual(posted.take(), ["RRCTask-1 Insert", "RRCUser-123 Update"])
        try realm.write { realm.deleteNotified(task) }
        XCTAssertEqual(posted.take(), ["RRCTask-1 Delete"])
    }

    // MARK: RRC behaviours

    /// A post after each commit that changes a watched object — plain writes, other threads —
    /// and none for commits that leave it alone or for objects nobody asked about.
    func testNotificationCenterPostsAfterCommitsThatChangeAWatchedObject() throws {
        let realm = try openRealm()
        try realm.write {
            try realm.add([TaskModel(id: 1, name: "a"), TaskModel(id: 2, name: "b"),
                           TaskModel(id: 3, name: "c")])
        }
        let watched = try XCTUnwrap(realm.object(ofType: TaskModel.self, forPrimaryKey: 1))
        let other = try XCTUnwrap(realm.object(ofType: TaskModel.self, forPrimaryKey: 2))
        let posted = PostedNames()
        posted.observe(watched.objectIdentifier())     // asked for: watched from now on
        posted.observe("TaskModel-2")                  // never asked for through objectIdentifier(): not watched
        XCTAssertEqual(watched.objectIdentifier(), "TaskModel-1")

        try realm.write { other.name = "b2" }
        XCTAssertEqual(posted.take(), [], "an unchanged watched object: no post; an unwatched one: none either")
        try realm.write { watched.name = "a2" }
        XCTAssertEqual(posted.take(), ["TaskModel-1 Update"], "posted before write returns, on this thread")
        try realm.write { watched.name = "a3"; watched.projectID = 9 }
        XCTAssertEqual(posted.take(), ["TaskModel-1 Update"], "once per commit")

        // A commit from another thread: posted there, once it is visible.
        let config = realm.configuration
        let done = expectation(description: "other thread")
        Thread {
            do {
                let there = try Realm(configuration: config)
                try there.write { there.object(ofType: TaskModel.self, forPrimaryKey: 1)?.name = "from afar" }
            } catch {
                XCTFail("\(error)")
            }
            done.fulfill()
        }.start()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(posted.take(), ["TaskModel-1 Update"])

        try realm.write { try realm.delete(watched) }
        XCTAssertEqual(posted.take(), ["TaskModel-1 Delete"])
        try realm.write { realm.addNotified(TaskModel(id: 1, name: "back")) }
        XCTAssertEqual(posted.take(), ["TaskModel-1 Insert"])
        // A rolled-back write commits nothing: nothing is posted.
        try realm.beginWrite()
        realm.object(ofType: TaskModel.self, forPrimaryKey: 1)?.name = "never"
        realm.cancelWrite()
        XCTAssertEqual(posted.take(), [])
    }

    /// The identifier's forms: string and UUID keys, and types without a primary key.
    func testObjectIdentifierForms() throws {
        let realm = try openRealm()
        let person = Person()
        person.email = "ada@example.com"
        XCTAssertEqual(person.objectIdentifier(), "Person-ada@example.com")
        let car = Car()
        XCTAssertEqual(car.objectIdentifier(), "Car-unmanaged", "no primary key, unmanaged: no identity yet")
        try realm.write { try realm.add(car) }
        XCTAssertTrue(car.objectIdentifier().hasPrefix("Car-"))
        XCTAssertNotEqual(car.objectIdentifier(), "Car-unmanaged")
        let posted = PostedNames()
        posted.observe(car.objectIdentifier())
        try realm.write { car.model = "T" }
        XCTAssertEqual(posted.take(), ["\(car.objectIdentifier()) Update"])
    }
}

/// A thread-safe counter for closures the API requires to be `@Sendable`.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
    func add() { lock.lock(); count += 1; lock.unlock() }
}
