// Realm's model types of docs/API.md §8: ObjectId, MutableSet, Map (LinkingObjects and
// EmbeddedObject have their own files): the API, persistence across reopening, and
// differential runs against Swift's Set and Dictionary.

import Foundation
import XCTest
import StrataTestSupport
@testable import Strata

final class Tagged: Object {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name = ""
    @Persisted(indexed: true) var ref: ObjectId = ObjectId()
    @Persisted var labels: MutableSet<String>
    @Persisted var numbers: MutableSet<Double>
    @Persisted var optionalNumbers: MutableSet<Int?>
    @Persisted var scores: Map<String, Int>
    @Persisted var notes: Map<String, String?>
}

let modelTypeTypes: [Object.Type] = [Tagged.self]

final class ObjectIdTests: RealmTestCase {
    func testGeneratedIdsAreTwelveBytesInCreationOrder() {
        let before = Date()
        let ids = (0 ..< 2_000).map { _ in ObjectId.generate() }
        XCTAssertEqual(Set(ids).count, ids.count)
        // Within one process and second, later means greater (the counter); across a second
        // boundary the timestamp leads.
        XCTAssertEqual(ids, ids.sorted())
        for id in ids {
            XCTAssertEqual(id.bytes.count, 12)
            XCTAssertEqual(id.stringValue.count, 24)
            XCTAssertEqual(Array(id.bytes[4 ..< 9]), Array(ids[0].bytes[4 ..< 9]), "5 random bytes per process")
        }
        let seconds = ids[0].bytes[0 ..< 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        XCTAssertEqual(TimeInterval(seconds), before.timeIntervalSince1970.rounded(.down), accuracy: 2)
        XCTAssertEqual(ids[0].timestamp.timeIntervalSince1970, TimeInterval(seconds))
    }

    func testStringFormRoundTripsAndBadStringsAreRefused() throws {
        let id = try ObjectId(string: "507f1f77bcf86cd799439011")
        XCTAssertEqual(id.stringValue, "507f1f77bcf86cd799439011")
        XCTAssertEqual(id.bytes, [0x50, 0x7f, 0x1f, 0x77, 0xbc, 0xf8, 0x6c, 0xd7, 0x99, 0x43, 0x90, 0x11])
        XCTAssertEqual(try ObjectId(string: "507F1F77BCF86CD799439011"), id)
        XCTAssertEqual(ObjectId("507f1f77bcf86cd799439011"), id)
        XCTAssertEqual(id.timestamp, Date(timeIntervalSince1970: 0x507f1f77))
        XCTAssertEqual(ObjectId().stringValue, String(repeating: "0", count: 24))
        for (bad, reason) in [("507f1f77bcf86cd79943901", "not 23 characters"), ("507f1f77bcf86cd7994390111", "not 25 characters"),
                              ("507f1f77bcf86cd79943901g", "offset 23"), ("é07f1f77bcf86cd799439011", "offset 0"), ("", "not 0 characters")] {
            XCTAssertThrowsError(try ObjectId(string: bad), bad) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
                XCTAssertTrue("\(error)".contains("is not an ObjectId"), "\(error)")
            }
        }
    }

    func testCodableUsesTheHexString() throws {
        let id = ObjectId.generate()
        let data = try JSONEncoder().encode(["id": id])
        XCTAssertEqual(String(decoding: data, as: UTF8.self), "{\"id\":\"\(id.stringValue)\"}")
        XCTAssertEqual(try JSONDecoder().decode([String: ObjectId].self, from: data)["id"], id)
        XCTAssertThrowsError(try JSONDecoder().decode([String: ObjectId].self, from: Data("{\"id\":\"xyz\"}".utf8)))
        XCTAssertEqual(try JSONDecoder().decode(PrimaryKeyValue.self, from: JSONEncoder().encode(PrimaryKeyValue.objectId(id))), .objectId(id))
    }

    func testObjectIdPrimaryKeyIndexAndQueriesPersist() throws {
        let ids = (0 ..< 20).map { _ in ObjectId.generate() }
        let shared = ObjectId.generate()
        do {
            let realm = try openRealm(types: modelTypeTypes)
            try realm.write {
                for (position, id) in ids.enumerated() {
                    let object = Tagged()
                    object._id = id
                    object.name = "n\(position)"
                    object.ref = position % 2 == 0 ? shared : ObjectId()
                    try realm.add(object)
                }
            }
            // A property declared without a value gets a fresh ObjectId, as in Realm Swift.
            XCTAssertNotEqual(Tagged()._id, Tagged()._id)
        }
        let realm = try openRealm(types: modelTypeTypes)
        XCTAssertEqual(realm.object(ofType: Tagged.self, forPrimaryKey: ids[7])?.name, "n7")
        XCTAssertEqual(realm.object(ofType: Tagged.self, forPrimaryKeyValue: .objectId(ids[3]))?.name, "n3")
        XCTAssertEqual(realm.objects(Tagged.self).map(\._id), ids, "primary-key order is creation order")
        XCTAssertEqual(realm.objects(Tagged.self).filter("_id == %@", ids[5]).map(\.name), ["n5"])
        XCTAssertEqual(realm.objects(Tagged.self).filter("_id > %@", ids[17]).map(\.name), ["n18", "n19"])
        let wanted = ids[9]
        XCTAssertEqual(realm.objects(Tagged.self).filter(#Predicate { $0._id == wanted }).map(\.name), ["n9"])
        XCTAssertEqual(realm.objects(Tagged.self).filter("ref == %@", shared).count, 10)
        XCTAssertEqual(realm.objects(Tagged.self).filter(#Predicate { $0.ref == shared }).count, 10)
        XCTAssertEqual(realm.objects(Tagged.self).sorted(byKeyPath: "name", ascending: false).first?._id, ids[9])
        XCTAssertEqual(realm.objects(Tagged.self).first?.primaryKeyValue, .objectId(ids[0]))
        XCTAssertThrowsError(try realm.write { try realm.create(Tagged.self, value: ["_id": "not hex"]) }) { error in
            XCTAssertTrue("\(error)".contains("'not hex' is not an ObjectId"), "\(error)")
        }
        try realm.write { try realm.create(Tagged.self, value: ["_id": "507f1f77bcf86cd799439011", "name": "from text"]) }
        XCTAssertEqual(realm.object(ofType: Tagged.self, forPrimaryKey: try ObjectId(string: "507f1f77bcf86cd799439011"))?.name, "from text")
    }
}

final class MutableSetTests: RealmTestCase {
    func testSetAPIUnmanagedAndManaged() throws {
        let unmanaged = MutableSet(["a", "b", "a"])
        XCTAssertEqual(unmanaged.count, 2)
        unmanaged.insert("c")
        unmanaged.remove("a")
        XCTAssertEqual(Set(unmanaged), ["b", "c"])
        XCTAssertTrue(unmanaged.contains("b"))
        XCTAssertTrue(unmanaged.isSubset(of: ["b", "c", "d"]))
        XCTAssertFalse(unmanaged.isSubset(of: ["b"]))
        XCTAssertTrue(unmanaged.intersects(["c", "z"]))
        XCTAssertFalse(unmanaged.intersects(["z"]))

        let realm = try openRealm(types: modelTypeTypes)
        let object = Tagged()
        object.labels.insert(objectsIn: ["x", "y", "x"])
        object.numbers.insert(objectsIn: [0.0, -0.0, .nan, .nan, 1])
        object.optionalNumbers.insert(objectsIn: [nil, 1, nil])
        try realm.write { try realm.add(object) }
        XCTAssertEqual(object.labels.toArray(), ["x", "y"])
        XCTAssertEqual(object.numbers.count, 3, "0.0 and -0.0 are one element, every NaN is one")
        XCTAssertEqual(object.optionalNumbers.toArray(), [nil, 1])
        try realm.write {
            object.labels.formUnion(["y", "z"])
            object.labels.subtract(["x"])
            object.labels.insert("w")
            object.labels.formIntersection(["y", "z", "q"])
        }
        XCTAssertEqual(object.labels.toArray(), ["y", "z"])
        XCTAssertTrue(object.labels.isSubset(of: MutableSet(["y", "z", "u"])))
        try realm.write { object.labels.removeAll() }
        XCTAssertTrue(object.labels.isEmpty)
        try realm.write { object.labels = MutableSet(["k", "k", "l"]) }
        XCTAssertEqual(object.labels.toArray(), ["k", "l"])
        XCTAssertEqual(realm.schema["Tagged"]?["labels"]?.typeDescription, "MutableSet<string>")
    }

    func testSetMatchesSwiftSetUnderRandomOperationsAcrossReopening() throws {
        var random = SplitMix64(seed: 0x5E7)
        var model = Set<String>()
        let id = ObjectId.generate()
        do {
            let realm = try openRealm(types: modelTypeTypes)
            try realm.write { let object = Tagged(); object._id = id; try realm.add(object) }
        }
        for round in 0 ..< 8 {
            let realm = try openRealm(types: modelTypeTypes)
            let object = try XCTUnwrap(realm.object(ofType: Tagged.self, forPrimaryKey: id))
            XCTAssertEqual(Set(object.labels), model, "after reopening, round \(round)")
            try realm.write {
                for _ in 0 ..< 40 {
                    let values = (0 ..< Int.random(in: 0 ... 4, using: &random)).map { _ in "v\(Int.random(in: 0 ..< 12, using: &random))" }
                    switch Int.random(in: 0 ..< 6, using: &random) {
                    case 0: values.forEach { object.labels.insert($0); model.insert($0) }
                    case 1: values.forEach { object.labels.remove($0); model.remove($0) }
                    case 2: object.labels.formUnion(values); model.formUnion(values)
                    case 3: object.labels.formIntersection(values); model.formIntersection(values)
                    case 4: object.labels.subtract(values); model.subtract(values)
                    default:
                        XCTAssertEqual(object.labels.isSubset(of: values), model.isSubset(of: values))
                        XCTAssertEqual(object.labels.intersects(values), !model.isDisjoint(with: values))
                    }
                    XCTAssertEqual(object.labels.count, model.count)
                    XCTAssertEqual(Set(object.labels), model)
                    for value in values { XCTAssertEqual(object.labels.contains(value), model.contains(value)) }
                }
            }
        }
    }
}

final class MapTests: RealmTestCase {
    func testMapAPIUnmanagedAndManaged() throws {
        let realm = try openRealm(types: modelTypeTypes)
        let object = Tagged()
        object.scores["a"] = 1
        object.scores.setValue(2, forKey: "b")
        object.notes["n"] = .some(nil)
        object.notes["m"] = "text"
        XCTAssertEqual(object.scores.count, 2)
        try realm.write { try realm.add(object) }
        XCTAssertEqual(object.scores["a"], 1)
        XCTAssertEqual(object.scores.keys, ["a", "b"])
        XCTAssertEqual(object.scores.values, [1, 2])
        XCTAssertEqual(object.notes.count, 2)
        XCTAssertEqual(object.notes["n"], .some(nil), "an optional value can be nil and still be present")
        XCTAssertTrue(object.notes["absent"] == nil, "an absent key is nil")
        try realm.write {
            object.scores["c"] = 3
            object.scores["a"] = nil
            object.scores.removeObject(for: "b")
            object.scores.updateValue(30, forKey: "c")
            object.scores.setValue(nil, forKey: "zz")
        }
        XCTAssertEqual(Array(object.scores.map(\.key)), ["c"])
        XCTAssertEqual(object.scores.object(forKey: "c"), 30)
        XCTAssertEqual(object["scores"] as? [String: Int], ["c": 30])
        try realm.write { object.scores.removeAll() }
        XCTAssertTrue(object.scores.isEmpty)
        XCTAssertEqual(realm.schema["Tagged"]?["notes"]?.typeDescription, "Map<String, string?>")
    }

    func testKeysRealmRefusesAreErrorsNamingTheKeyAndNothingIsWritten() throws {
        let realm = try openRealm(types: modelTypeTypes)
        for key in ["a.b", "$set", "."] {
            XCTAssertThrowsError(try realm.write {
                try realm.create(Tagged.self, value: ["_id": ObjectId.generate(), "name": "x", "scores": ["fine": 1, key: 2]])
            }) { error in
                XCTAssertTrue("\(error)".contains("Tagged.scores: map key '\(key)'"), "\(error)")
            }
        }
        XCTAssertEqual(realm.objects(Tagged.self).count, 0)
        XCTAssertNil(MapKeyRule.problem("a$b"), "only a leading $ is refused")
        XCTAssertNil(MapKeyRule.problem(""))
    }

    func testMapMatchesSwiftDictionaryUnderRandomOperationsAcrossReopening() throws {
        var random = SplitMix64(seed: 0x3A9)
        var model: [String: Int] = [:]
        let id = ObjectId.generate()
        do {
            let realm = try openRealm(types: modelTypeTypes)
            try realm.write { let object = Tagged(); object._id = id; try realm.add(object) }
        }
        for round in 0 ..< 8 {
            let realm = try openRealm(types: modelTypeTypes)
            let object = try XCTUnwrap(realm.object(ofType: Tagged.self, forPrimaryKey: id))
            XCTAssertEqual(Dictionary(uniqueKeysWithValues: object.scores.map { ($0.key, $0.value) }), model, "round \(round)")
            try realm.write {
                for _ in 0 ..< 40 {
                    let key = "k\(Int.random(in: 0 ..< 10, using: &random))"
                    let value = Int.random(in: -5 ... 5, using: &random)
                    switch Int.random(in: 0 ..< 5, using: &random) {
                    case 0, 1: object.scores[key] = value; model[key] = value
                    case 2: object.scores.removeObject(for: key); model[key] = nil
                    case 3: object.scores.setValue(value, forKey: key); model[key] = value
                    default: if Int.random(in: 0 ..< 10, using: &random) == 0 { object.scores.removeAll(); model = [:] }
                    }
                    XCTAssertEqual(object.scores[key], model[key])
                    XCTAssertEqual(object.scores.count, model.count)
                    XCTAssertEqual(object.scores.keys, model.keys.sorted())
                }
            }
        }
    }
}

final class MutableSetCreateTests: RealmTestCase {
    func testCreateFromAnArrayKeepsDistinctElements() throws {
        let realm = try openRealm(types: modelTypeTypes)
        let object = try realm.write { try realm.create(Tagged.self, value: ["_id": ObjectId.generate(), "labels": ["a", "b", "a"], "numbers": [0.0, -0.0, 1]]) }
        XCTAssertEqual(object.labels.toArray(), ["a", "b"])
        XCTAssertEqual(object.numbers.count, 2)
    }
}

final class ModelTypesNotificationTests: RealmTestCase {
    func testSetAndMapChangesAreChangesOfTheirProperty() throws {
        let realm = try openRealm(types: modelTypeTypes)
        let object = Tagged()
        try realm.write { try realm.add(object) }
        var changed: [[String]] = []
        let token = object.observe { change in
            if case .change(_, let properties) = change { changed.append(properties.map(\.name)) }
        }
        defer { token.invalidate() }
        var modifications: [[Int]] = []
        let resultsToken = realm.objects(Tagged.self).observe { change in
            if case .update(_, _, _, let modified) = change { modifications.append(modified) }
        }
        defer { resultsToken.invalidate() }
        try realm.write { object.labels.insert("a") }
        try realm.write { object.labels.insert("a") }      // already there: nothing changes
        try realm.write { object.scores["k"] = 1 }
        try realm.write { object.scores["k"] = 2; object.labels.remove("a") }
        XCTAssertEqual(changed, [["labels"], ["scores"], ["labels", "scores"]])
        XCTAssertEqual(modifications, [[0], [0], [0]])
    }
}

final class LinkingObjectsPredicateTests: RealmTestCase {
    func testPredicatesReadLinkingObjectsOnObjects() throws {
        let realm = try openRealm(types: linkingTypes)
        try realm.write {
            let ann = Driver(); ann.name = "ann"
            let bob = Driver(); bob.name = "bob"
            for (plate, model, driver) in [("A1", "T", ann), ("A2", "S", ann), ("B1", "S", bob)] {
                let car = Vehicle(); car.plate = plate; car.model = model; car.driver = driver
                try realm.add(car)
            }
        }
        let drivers = realm.objects(Driver.self)
        XCTAssertEqual(drivers.filter(#Predicate { $0.cars.count > 1 }).map(\.name), ["ann"])
        XCTAssertEqual(drivers.filter(#Predicate { $0.cars.contains { $0.model == "S" } }).map(\.name), ["ann", "bob"])
        XCTAssertEqual(drivers.filter(#Predicate { $0.cars.allSatisfy { $0.model == "S" } }).map(\.name), ["bob"])
    }
}

final class ModelTypeDeclarationTests: RealmTestCase {
    func testSetsOfKindsNotHashableByStorageAreSchemaErrors() throws {
        final class EmbeddedSet: Object {
            @Persisted var id = 0
            @Persisted var places: MutableSet<Address>
        }
        final class ColumnSet: Object {
            @Persisted var id = 0
            @Persisted var points: MutableSet<StrictPoint>
        }
        final class KeyedEmbedded: EmbeddedObject {
            @Persisted(primaryKey: true) var id = 0
        }
        final class IndexedMap: Object {
            @Persisted var id = 0
            @Persisted(indexed: true) var scores: Map<String, Int>
        }
        let cases: [(Object.Type, String)] = [
            (EmbeddedSet.self, "EmbeddedSet.places cannot be a set of embedded objects: a set compares its elements by their stored values"),
            (ColumnSet.self, "ColumnSet.points cannot be a set of a custom column type"),
            (KeyedEmbedded.self, "KeyedEmbedded.id: an embedded object type cannot have a primary key"),
            (IndexedMap.self, "IndexedMap.scores: Map<String, int> cannot be indexed"),
        ]
        for (type, reason) in cases {
            XCTAssertThrowsError(try Realm(configuration: configuration(types: [type, Address.self, GeoPoint.self]))) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error) — expected: \(reason)")
            }
        }
    }
}

final class Roster: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var members: MutableSet<Contact>
    @Persisted var byRole: Map<String, Contact?>
}

final class LinkCollectionTests: RealmTestCase {
    func testSetsAndMapsOfLinks() throws {
        let realm = try openRealm(types: [Roster.self] + embeddedTypes)
        let roster = Roster(); roster.name = "r"
        let ann = Contact(); ann.name = "ann"
        try realm.write { try realm.add(roster) }
        try realm.write {
            roster.members.insert(ann)                       // adds the unmanaged contact
            roster.members.insert(realm.object(ofType: Contact.self, forPrimaryKey: "ann")!)   // the same object again
            roster.byRole["lead"] = ann
            roster.byRole["spare"] = .some(nil)
        }
        XCTAssertEqual(roster.members.count, 1)
        XCTAssertTrue(roster.members.contains(ann))
        XCTAssertEqual(roster.byRole["lead"]??.name, "ann")
        XCTAssertEqual(roster.byRole.count, 2)
        XCTAssertEqual(realm.objects(Roster.self).filter("ANY members.name == 'ann'").count, 1)
        try realm.write { try realm.delete(ann) }
        XCTAssertEqual(roster.members.count, 0, "a link to a deleted object is left out")
    }

    func testMapsOfEmbeddedObjectsAreRefusedClearly() throws {
        final class Places: Object {
            @Persisted var id = 0
            @Persisted var byName: Map<String, Address?>
        }
        XCTAssertThrowsError(try Realm(configuration: configuration(types: [Places.self] + embeddedTypes))) { error in
            XCTAssertTrue("\(error)".contains("Places.byName cannot be a map of embedded objects"), "\(error)")
        }
    }
}
