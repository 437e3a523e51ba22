// Realm Swift's model-level names, as ported code writes them: ObjectId's literal and
// timestamp initializers, Object.sharedSchema(), the dynamic API (dynamicObject,
// dynamicCreate) and ThreadSafeReference.isInvalidated.

import Foundation
import Strata
import XCTest

/// Declared as Realm's test models do: an ObjectId from a literal is not optional.
final class LiteralIdentified: Object {
    @Persisted(primaryKey: true) var _id = ObjectId("507f1f77bcf86cd799439011")
    @Persisted var note: String = ""
}

/// A link, an embedded object and lists of both, for values given as nested arrays.
final class Shelf: Object {
    @Persisted var name: String = ""
    @Persisted var main: Phone?
    @Persisted var phones: List<Phone>
    @Persisted var spot: Spot?
    @Persisted var spots: List<Spot>
}

final class Spot: EmbeddedObject {
    @Persisted var row: Int = 0
    @Persisted var column: Int = 0
}

final class PortingModelAPIContractTests: PortingStoreTestCase {
    func testCreateTakesNestedArraysForLinkedListedAndEmbeddedObjects() throws {
        let realm = try Realm(configuration: try configuration("nested-arrays"))
        try realm.write {
            // Realm's test form: `["name", [["a"]], [[2]]]`, each object as its values in order.
            let ann = try realm.create(Contact.self, value: ["Ann", 3, ["t"], [["555"], ["556"]]])
            XCTAssertEqual(ann.phones.map(\.number), ["555", "556"])
            XCTAssertEqual(Array(ann.tags), ["t"])
            XCTAssertThrowsError(try realm.create(Contact.self, value: ["Bob", 1, [], [["555", "extra"]]])) { error in
                XCTAssertTrue("\(error)".contains("Phone has 1 properties; the array has 2 values"), "\(error)")
            }
        }
        XCTAssertNil(realm.object(ofType: Contact.self, forPrimaryKey: "Bob"), "the failed create left nothing")
        XCTAssertEqual(realm.objects(Phone.self).count, 2)

        let (shelves, config) = try contractRealm("nested-arrays-embedded", types: [Shelf.self, Phone.self, Spot.self])
        directories.append(config.directory!)
        try shelves.write {
            let shelf = try shelves.create(Shelf.self, value: ["top", ["100"], [["101"], ["102"]], [1, 2], [[3, 4], [5]]])
            XCTAssertEqual(shelf.main?.number, "100")
            XCTAssertEqual(shelf.phones.map(\.number), ["101", "102"])
            XCTAssertEqual(shelf.spot?.row, 1)
            XCTAssertEqual(shelf.spot?.column, 2)
            XCTAssertEqual(shelf.spots.map { [$0.row, $0.column] }, [[3, 4], [5, 0]], "values left out keep the initial value")
            XCTAssertThrowsError(try shelves.create(Shelf.self, value: ["bad", nil, [], [1, 2, 3]])) { error in
                XCTAssertTrue("\(error)".contains("Spot has 2 properties; the array has 3 values"), "\(error)")
            }
        }
    }

    func testObjectIdFromALiteralAndFromATimestamp() throws {
        let id: ObjectId = ObjectId("507f1f77bcf86cd799439011")
        XCTAssertEqual(id, try ObjectId(string: "507f1f77bcf86cd799439011"))
        let model = LiteralIdentified()
        let typed: ObjectId = model._id           // not ObjectId?
        XCTAssertEqual(typed, id)
        XCTAssertEqual(LiteralIdentified.sharedSchema()?.primaryKeyProperty?.kind, .objectId)
        XCTAssertEqual(LiteralIdentified.sharedSchema()?.primaryKeyProperty?.isOptional, false)

        let date = Date(timeIntervalSince1970: 1_700_000_000.75)
        let first = ObjectId(timestamp: date, machineId: 0x0A0B0C, processId: 0x0102)
        let second = ObjectId(timestamp: date, machineId: 0x0A0B0C, processId: 0x0102)
        XCTAssertEqual(first.timestamp, Date(timeIntervalSince1970: 1_700_000_000))
        XCTAssertEqual(Array(first.bytes[4 ..< 9]), [0x0C, 0x0B, 0x0A, 0x02, 0x01], "machine and process ids as Realm's engine lays them out")
        XCTAssertNotEqual(first, second, "the counter differs")
        XCTAssertLessThan(first, second, "made later in the same second: sorts after")
    }

    func testRealmIsEmptyAndSchemaNames() throws {
        let realm = try Realm(configuration: try configuration("is-empty"))
        XCTAssertTrue(realm.isEmpty)
        try realm.write {
            try realm.create(Contact.self, value: ["name": "Ann"] as [String: Any])
            XCTAssertFalse(realm.isEmpty, "the open write's objects count")
        }
        XCTAssertFalse(realm.isEmpty)
        try realm.write { try realm.deleteAll() }
        XCTAssertTrue(realm.isEmpty)
        XCTAssertEqual(realm.schema.objectSchema.map(\.className).sorted(), ["Contact", "Phone"])
        XCTAssertEqual(realm.schema["Contact"]?.properties.first?.type, .string)
        XCTAssertEqual(realm.schema["Contact"]?.properties.first?.isPrimary, true)
    }

    func testSharedSchemaDescribesTheClass() throws {
        let schema = try XCTUnwrap(Contact.sharedSchema())
        XCTAssertEqual(schema.className, "Contact")
        XCTAssertEqual(schema.properties.map(\.name), ["name", "age", "tags", "phones"])
        XCTAssertEqual(schema.primaryKeyProperty?.name, "name")
        XCTAssertEqual(schema["phones"]?.objectClassName, "Phone")
        XCTAssertNil(DynamicObject.sharedSchema(), "a dynamic object's schema is the stored type's")
    }

    func testDynamicCreateAndDynamicObject() throws {
        let realm = try Realm(configuration: try configuration("dynamic-create"))
        try realm.write {
            let ann = try realm.dynamicCreate("Contact", value: ["name": "Ann", "age": 31, "tags": ["a", "b"]])
            XCTAssertEqual(ann["age"] as? Int, 31)
            try realm.dynamicCreate("Contact", value: ["Bob", 40])
            XCTAssertThrowsError(try realm.dynamicCreate("Contact", value: ["name": "Ann"])) { error in
                guard case RealmError.primaryKeyExists = error else { return XCTFail("\(error)") }
            }
            try realm.dynamicCreate("Contact", value: ["name": "Ann", "age": 32], update: .modified)
            XCTAssertThrowsError(try realm.dynamicCreate("Contact", value: ["age": 1]), "no class: the key must be given") { error in
                guard case RealmError.missingPrimaryKey(_, let property) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(property, "name")
            }
            XCTAssertThrowsError(try realm.dynamicCreate("Nothing")) { error in
                guard case RealmError.unknownType("Nothing") = error else { return XCTFail("\(error)") }
            }
            XCTAssertThrowsError(try realm.dynamicCreate("Contact", value: ["name": "Cy", "age": "old"])) { error in
                guard case RealmError.typeMismatch(let property, _, _) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(property, "Contact.age")
            }
        }
        XCTAssertThrowsError(try realm.dynamicCreate("Contact", value: ["name": "Dee"])) { error in
            guard case RealmError.notInWriteTransaction = error else { return XCTFail("\(error)") }
        }

        let ann = try XCTUnwrap(realm.dynamicObject(ofType: "Contact", forPrimaryKey: "Ann"))
        XCTAssertEqual(ann["age"] as? Int, 32)
        XCTAssertEqual(ann["tags"] as? [String], ["a", "b"], "left as it was by the update")
        XCTAssertEqual(try realm.dynamicObject(ofType: "Contact", forPrimaryKey: "Bob")?["age"] as? Int, 40)
        XCTAssertNil(try realm.dynamicObject(ofType: "Contact", forPrimaryKey: "Zed"))
        XCTAssertNil(try realm.dynamicObject(ofType: "Contact", forPrimaryKey: 3.5), "not a key value")
        XCTAssertThrowsError(try realm.dynamicObject(ofType: "Nothing", forPrimaryKey: 1))
        XCTAssertEqual(realm.object(ofType: Contact.self, forPrimaryKey: "Ann")?.age, 32, "the class reads what the dynamic API wrote")
        XCTAssertEqual(realm.objects(Contact.self).count, 2)
    }

    func testCollectionsAreHandedOverByReference() throws {
        let config = try configuration("reference-collections")
        let realm = try Realm(configuration: config)
        try realm.write {
            try realm.create(Contact.self, value: ["name": "Ann", "tags": ["a", "b"], "phones": [["555"]]] as [String: Any])
        }
        let ann = try XCTUnwrap(realm.object(ofType: Contact.self, forPrimaryKey: "Ann"))
        let tags = ThreadSafeReference(to: ann.tags)
        let phones = ThreadSafeReference(to: ann.phones)
        let seen = LockedValue<[String]?>(nil)
        let thread = Thread {
            guard let other = try? Realm(configuration: config), let list = other.resolve(tags), let phoneList = other.resolve(phones) else { return }
            seen.set(Array(list) + phoneList.map(\.number))
        }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while seen.get() == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(seen.get(), ["a", "b", "555"])
        XCTAssertTrue(tags.isInvalidated)

        let again = ThreadSafeReference(to: ann.tags)
        try realm.write { try realm.delete(ann) }
        XCTAssertNil(realm.resolve(again), "the owner was deleted")
    }

    func testThreadSafeReferenceSaysWhenItWasResolved() throws {
        let config = try configuration("reference-invalidated")
        let realm = try Realm(configuration: config)
        try realm.write { try realm.add({ let c = Contact(); c.name = "Ann"; return c }()) }
        let reference = ThreadSafeReference(to: try XCTUnwrap(realm.object(ofType: Contact.self, forPrimaryKey: "Ann")))
        XCTAssertFalse(reference.isInvalidated)
        let copy = reference
        let resolvedName = LockedValue<String?>(nil)
        let thread = Thread {
            guard let other = try? Realm(configuration: config) else { return }
            resolvedName.set(other.resolve(copy)?.name)
        }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while resolvedName.get() == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(resolvedName.get(), "Ann")
        XCTAssertTrue(reference.isInvalidated, "every copy of the reference knows it was resolved")
    }
}

/// Realm Swift's linking objects declared on an embedded object: its parent.
final class Tree: Object {
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var root: Branch?
    @Persisted var branches: List<Branch>
}

final class Branch: EmbeddedObject {
    @Persisted var label: String = ""
    @Persisted(originProperty: "root") var rootOf: LinkingObjects<Tree>
    @Persisted(originProperty: "branches") var listedIn: LinkingObjects<Tree>
}

final class BadBranchHolder: Object {
    @Persisted var branch: BadBranch?
}

final class BadBranch: EmbeddedObject {
    @Persisted(originProperty: "missing") var holders: LinkingObjects<BadBranchHolder>
}

final class PortingEmbeddedLinkingObjectsContractTests: PortingStoreTestCase {
    func testAnEmbeddedObjectsLinkingObjectsAreItsParent() throws {
        let (realm, config) = try contractRealm("embedded-linking", types: [Tree.self, Branch.self])
        directories.append(config.directory!)
        try realm.write {
            try realm.create(Tree.self, value: ["name": "oak", "root": ["label": "r"], "branches": [["label": "a"], ["label": "b"]]] as [String: Any])
        }
        let tree = try XCTUnwrap(realm.object(ofType: Tree.self, forPrimaryKey: "oak"))
        let root = try XCTUnwrap(tree.root)
        XCTAssertEqual(root.rootOf.map(\.name), ["oak"])
        XCTAssertEqual(root.listedIn.count, 0, "held through another property")
        XCTAssertEqual(tree.branches[1].listedIn.first?.name, "oak")
        XCTAssertEqual(tree.branches[1].listedIn.first?.branches.count, 2)
        XCTAssertEqual(tree.branches[0].rootOf.count, 0)
        XCTAssertEqual(root.rootOf.index(of: tree), 0)
        XCTAssertEqual(Branch().rootOf.count, 0, "unmanaged: none")

        XCTAssertThrowsError(try contractRealm("embedded-linking-bad", types: [BadBranchHolder.self, BadBranch.self])) { error in
            XCTAssertTrue("\(error)".contains("BadBranch.holders: BadBranchHolder.missing is not a property holding BadBranch"), "\(error)")
        }
    }
}
