// API.md §8's Realm Swift lines that Strata has so far, as a user writes them (`import
// Strata` only). EmbeddedObject, LinkingObjects, MutableSet, Map and ObjectId are not
// there yet (issue 14).

import Strata
import XCTest

final class Contact: Object {
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var age: Int = 0
    @Persisted var tags: List<String>
    @Persisted var phones: List<Phone>
}

final class PortingContractTests: XCTestCase {
    func testSection8RealmSwiftNames() throws {
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
