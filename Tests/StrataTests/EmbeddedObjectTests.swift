// EmbeddedObject: owned by its parent, stored inside the parent's row, deleted with it;
// never on its own, never in two parents.

import Foundation
import XCTest
@testable import Strata

final class Address: EmbeddedObject {
    @Persisted var street = ""
    @Persisted var city = ""
    @Persisted var geo: GeoPoint?
    @Persisted var tags: List<String>
}

final class GeoPoint: EmbeddedObject {
    @Persisted var lat = 0.0
    @Persisted var lng = 0.0
}

final class Contact: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var address: Address?
    @Persisted var previous: List<Address>
    @Persisted var friend: Contact?
}

let embeddedTypes: [Object.Type] = [Contact.self, Address.self, GeoPoint.self]

func makeAddress(_ street: String, city: String = "Raleigh") -> Address {
    let address = Address()
    address.street = street
    address.city = city
    return address
}

final class EmbeddedObjectTests: RealmTestCase {
    func testEmbeddedObjectsPersistInsideTheirParent() throws {
        do {
            let realm = try openRealm(types: embeddedTypes)
            let contact = Contact()
            contact.name = "ann"
            let home = makeAddress("1 Main")
            let geo = GeoPoint(); geo.lat = 35.7; geo.lng = -78.6
            home.geo = geo
            home.tags.append("home")
            contact.address = home
            contact.previous.append(objectsIn: [makeAddress("2 Oak"), makeAddress("3 Elm", city: "Durham")])
            try realm.write { try realm.add(contact) }
            // The instances became the managed embedded objects.
            XCTAssertTrue(home.realm === realm)
            XCTAssertEqual(geo.lat, 35.7)
            try realm.write {
                home.street = "10 Main"
                geo.lng = -78.7
                home.tags.append("primary")
                contact.previous[1].city = "Cary"
            }
            // Stored inline: the embedded type has no rows of its own.
            let bound = try realm.boundType(for: Address.self)
            XCTAssertEqual(realm.snapshot.count(table: bound.table), 0)
        }
        let realm = try openRealm(types: embeddedTypes)
        let contact = try XCTUnwrap(realm.object(ofType: Contact.self, forPrimaryKey: "ann"))
        XCTAssertEqual(contact.address?.street, "10 Main")
        XCTAssertEqual(contact.address?.geo?.lng, -78.7)
        XCTAssertEqual(contact.address?.tags.toArray(), ["home", "primary"])
        XCTAssertEqual(contact.previous.map(\.street), ["2 Oak", "3 Elm"])
        XCTAssertEqual(contact.previous.map(\.city), ["Raleigh", "Cary"])
        XCTAssertEqual(contact.previous[0], contact.previous[0])
        XCTAssertNotEqual(contact.previous[0], contact.previous[1])
        XCTAssertEqual(contact.address?.primaryKeyValue, .string("ann"))
    }

    func testReplacingOrDeletingTheParentDeletesTheEmbeddedObject() throws {
        let realm = try openRealm(types: embeddedTypes)
        let contact = Contact()
        contact.name = "bob"
        contact.address = makeAddress("1 Main")
        contact.previous.append(objectsIn: [makeAddress("a"), makeAddress("b"), makeAddress("c")])
        try realm.write { try realm.add(contact) }
        let old = try XCTUnwrap(contact.address)
        try realm.write { contact.address = makeAddress("2 New") }
        XCTAssertTrue(old.isInvalidated == false, "the property's new value is at the same place")
        XCTAssertEqual(old.street, "2 New")
        try realm.write { contact.address = nil }
        XCTAssertTrue(old.isInvalidated)
        let middle = contact.previous[1]
        try realm.write { try realm.delete(middle) }
        XCTAssertEqual(contact.previous.map(\.street), ["a", "c"])
        try realm.write { contact.previous.move(from: 0, to: 1); contact.previous.swapAt(0, 1) }
        XCTAssertEqual(contact.previous.map(\.street), ["a", "c"])
        let first = contact.previous[0]
        try realm.write { try realm.delete(contact) }
        XCTAssertTrue(first.isInvalidated)
        XCTAssertEqual(realm.objects(Contact.self).count, 0)
    }

    func testEmbeddedObjectsCannotStandAloneOrHaveTwoParents() throws {
        let realm = try openRealm(types: embeddedTypes)
        XCTAssertThrowsError(try realm.write { try realm.add(makeAddress("x")) }) { error in
            XCTAssertEqual("\(error)".contains("Address is an embedded object type: it cannot be added on its own"), true, "\(error)")
        }
        XCTAssertThrowsError(try realm.write { try realm.create(Address.self, value: ["street": "x"]) }) { error in
            XCTAssertTrue("\(error)".contains("cannot be added on its own"), "\(error)")
        }
        let a = Contact(); a.name = "a"; a.address = makeAddress("shared")
        try realm.write { try realm.add(a) }
        let b = Contact(); b.name = "b"; b.address = a.address
        XCTAssertThrowsError(try realm.write { try realm.add(b) }) { error in
            XCTAssertTrue("\(error)".contains("Contact.address: Cannot set a link to an existing managed embedded object"), "\(error)")
        }
        XCTAssertNil(realm.object(ofType: Contact.self, forPrimaryKey: "b"), "nothing written")
        XCTAssertThrowsError(try realm.write {
            try realm.create(Contact.self, value: ["name": "c", "previous": [a.address!]])
        }) { error in
            XCTAssertTrue("\(error)".contains("Contact.previous[0]: Cannot set a link to an existing managed embedded object"), "\(error)")
        }
        // A copy is fine, and so is a dictionary.
        try realm.write {
            let c = try realm.create(Contact.self, value: ["name": "c", "address": a.address!.deepCopy(), "previous": [["street": "d", "city": "Apex"]]])
            XCTAssertEqual(c.previous.first?.city, "Apex")
            XCTAssertEqual(c.address?.street, "shared")
            c.address?.street = "own"
        }
        XCTAssertEqual(a.address?.street, "shared")
        // Assigning the object to where it already is changes nothing.
        try realm.write { a.address = a.address }
        XCTAssertEqual(a.address?.street, "shared")
    }

    func testChangesInsideAnEmbeddedObjectAreChangesOfItsParent() throws {
        let realm = try openRealm(types: embeddedTypes)
        let contact = Contact(); contact.name = "n"; contact.address = makeAddress("1")
        try realm.write { try realm.add(contact) }
        var changes: [[String]] = []
        let token = contact.observe { change in
            if case .change(_, let properties) = change { changes.append(properties.map(\.name)) }
        }
        defer { token.invalidate() }
        var collectionModifications: [[Int]] = []
        let results = realm.objects(Contact.self)
        let resultsToken = results.observe { change in
            if case .update(_, _, _, let modifications) = change { collectionModifications.append(modifications) }
        }
        defer { resultsToken.invalidate() }
        try realm.write { contact.address?.street = "2" }
        try realm.write { contact.address?.geo = GeoPoint() }
        XCTAssertEqual(changes, [["address"], ["address"]])
        XCTAssertEqual(collectionModifications, [[0], [0]])
    }
}

final class EmbeddedQueryTests: RealmTestCase {
    func testStringQueriesReadEmbeddedObjects() throws {
        let realm = try openRealm(types: embeddedTypes)
        try realm.write {
            for (name, city, previous) in [("a", "Raleigh", ["Durham"]), ("b", "Cary", []), ("c", "Durham", ["Apex", "Cary"])] {
                let contact = Contact(); contact.name = name
                contact.address = makeAddress("1", city: city)
                contact.previous.append(objectsIn: previous.map { makeAddress("p", city: $0) })
                try realm.add(contact)
            }
            let none = Contact(); none.name = "d"
            try realm.add(none)
        }
        let contacts = realm.objects(Contact.self)
        XCTAssertEqual(contacts.filter("address.city == 'Cary'").map(\.name), ["b"])
        XCTAssertEqual(contacts.filter("address == nil").map(\.name), ["d"])
        XCTAssertEqual(contacts.filter("ANY previous.city == 'Cary'").map(\.name), ["c"])
        XCTAssertEqual(contacts.filter("previous.@count == 0").map(\.name), ["b", "d"])
        XCTAssertEqual(contacts.filter(#Predicate { $0.address?.city == "Durham" }).map(\.name), ["c"])
    }
}

final class EmbeddedAloneTests: RealmTestCase {
    func testEmbeddedTypesAreRefusedAtTheRootOfJSONAndImports() throws {
        let realm = try openRealm(types: embeddedTypes)
        XCTAssertThrowsError(try RealmCoder(realm: realm).decode(Address.self, from: Data(#"{"street": "x"}"#.utf8))) { error in
            XCTAssertTrue("\(error)".contains("Address is an embedded object type: it cannot be added on its own"), "\(error)")
        }
        realm.invalidate()
        let store = try Store(directory: directory, options: StoreOptions())
        defer { try? store.close() }
        XCTAssertThrowsError(try StoreImporter(store: store)?.importObjects(ofType: "Address", from: Data(#"[{"street": "x"}]"#.utf8))) { error in
            XCTAssertTrue("\(error)".contains("Address is an embedded object type"), "\(error)")
        }
    }
}
