// Realm Swift's Projection and @Projected, as ported code declares them: a view of an
// object through key paths, live, writable inside a write, listed by realm.objects.

import Foundation
import Strata
import XCTest

final class ContactSummary: Projection<Contact> {
    @Projected(\Contact.name) var name
    @Projected(\Contact.age) var age
    @Projected(\Contact.phones.count) var phoneCount
    @Projected(\Contact.name.localizedUppercase) var shout
}

/// Realm's `projectTo`: a list of objects seen as one property of each.
final class ContactPhones: Projection<Contact> {
    @Projected(\Contact.name) var name
    @Projected(\Contact.phones.projectTo.number) var numbers: ProjectedCollection<String>
    @Projected(\Contact.phones.projectTo.number.count) var phoneCount
}

final class PortingProjectionContractTests: PortingStoreTestCase {
    func testProjectionsReadAndWriteTheirRootObject() throws {
        let realm = try Realm(configuration: try configuration("projection"))
        try realm.write {
            try realm.create(Contact.self, value: ["name": "Ann", "age": 30, "phones": [["555"], ["556"]]] as [String: Any])
            try realm.create(Contact.self, value: ["name": "Bob", "age": 20] as [String: Any])
        }
        let summaries = realm.objects(ContactSummary.self)
        XCTAssertEqual(summaries.count, 2)
        XCTAssertEqual(summaries.map(\.name), ["Ann", "Bob"])
        let ann = try XCTUnwrap(summaries.first)
        XCTAssertEqual(ann.phoneCount, 2)
        XCTAssertEqual(ann.shout, "ANN")
        XCTAssertEqual(ann.rootObject.name, "Ann")
        XCTAssertEqual(summaries.filter("age > 25").map(\.name), ["Ann"])
        XCTAssertEqual(summaries.sorted(byKeyPath: "age").map(\.name), ["Bob", "Ann"])
        XCTAssertEqual(ann, ContactSummary(projecting: realm.object(ofType: Contact.self, forPrimaryKey: "Ann")!))

        try realm.write { ann.age = 31 }
        XCTAssertEqual(realm.object(ofType: Contact.self, forPrimaryKey: "Ann")?.age, 31, "set through the projection")
        XCTAssertEqual(ann.age, 31)

        var changes: [ObjectChange<Projection<Contact>>] = []
        let token = ann.observe(keyPaths: ["age"]) { changes.append($0) }
        defer { token.invalidate() }
        try realm.write { realm.object(ofType: Contact.self, forPrimaryKey: "Ann")!.age = 32 }
        guard case .change(let projection, let properties)? = changes.last else { return XCTFail("\(changes)") }
        XCTAssertEqual((projection as? ContactSummary)?.age, 32)
        XCTAssertEqual(properties.map(\.name), ["age"])

        var listChanges: [RealmCollectionChange<ProjectedResults<Contact, ContactSummary>>] = []
        let listToken = summaries.observe { listChanges.append($0) }
        defer { listToken.invalidate() }
        try realm.write { try realm.create(Contact.self, value: ["name": "Cy"] as [String: Any]) }
        guard case .update(let after, _, let insertions, _)? = listChanges.last else { return XCTFail("\(listChanges)") }
        XCTAssertEqual(insertions, [2])
        XCTAssertEqual(after.last?.name, "Cy")

        let frozen = ann.freeze()
        try realm.write { ann.age = 40 }
        XCTAssertEqual(frozen.age, 32)
        XCTAssertTrue(frozen.isFrozen)
        XCTAssertEqual(frozen.thaw()?.age, 40)
        try realm.write { try realm.delete(realm.object(ofType: Contact.self, forPrimaryKey: "Ann")!) }
        XCTAssertTrue(ann.isInvalidated)
    }

    func testProjectToReadsWritesAndObservesTheListItProjects() throws {
        let realm = try Realm(configuration: try configuration("project-to"))
        try realm.write {
            try realm.create(Contact.self, value: ["name": "Ann", "phones": [["555"], ["5566"]]] as [String: Any])
        }
        let ann = try XCTUnwrap(realm.objects(ContactPhones.self).first)
        let numbers = ann.numbers
        XCTAssertEqual(Array(numbers), ["555", "5566"])
        XCTAssertEqual(ann.phoneCount, 2, "a key path on past the projection reads the collection")
        XCTAssertEqual(numbers.count, 2)
        XCTAssertEqual(numbers.index(of: "5566"), 1)
        XCTAssertEqual(numbers.realm, realm)
        XCTAssertFalse(numbers.isFrozen)
        XCTAssertTrue(numbers.description.contains("[1] 5566"), numbers.description)

        // Live: it reads the list, not a copy of its values.
        let contact = ann.rootObject
        try realm.write { contact.phones.append(Phone(value: ["557"])) }
        XCTAssertEqual(Array(numbers), ["555", "5566", "557"])

        // Setting an element sets that object's property (inside a write).
        try realm.write { numbers[0] = "111" }
        XCTAssertEqual(contact.phones[0].number, "111")

        // Observed: the list's changes by position, the values read at the time.
        var seen: [RealmCollectionChange<ProjectedCollection<String>>] = []
        let token = numbers.observe { seen.append($0) }
        defer { token.invalidate() }
        guard case .initial(let initial)? = seen.first else { return XCTFail("\(seen)") }
        XCTAssertEqual(Array(initial), ["111", "5566", "557"])
        try realm.write { contact.phones.remove(at: 1) }
        guard case .update(let after, let deletions, let insertions, _)? = seen.last else { return XCTFail("\(seen)") }
        XCTAssertEqual(deletions, [1])
        XCTAssertEqual(insertions, [])
        XCTAssertEqual(Array(after), ["111", "557"])
        try realm.write { contact.phones[1].number = "999" }
        guard case .update(_, _, _, let modifications)? = seen.last else { return XCTFail("\(seen)") }
        XCTAssertEqual(modifications, [1])

        // Frozen with the projection; thawed back to the live list.
        let frozen = ann.freeze().numbers
        try realm.write { contact.phones.removeAll() }
        XCTAssertTrue(frozen.isFrozen)
        XCTAssertEqual(Array(frozen), ["111", "999"])
        XCTAssertEqual(frozen.thaw()?.count, 0)
        XCTAssertEqual(numbers.count, 0)

        // From a set, and as generic code over RealmCollection sees it.
        func values<C: RealmCollection>(_ collection: C) -> [C.Element] { Array(collection) }
        XCTAssertEqual(values(numbers), [])
        let unmanaged = MutableSet<Phone>()
        unmanaged.insert(Phone(value: ["1"]))
        XCTAssertEqual(Array(unmanaged.projectTo.number), ["1"])
        XCTAssertNil(unmanaged.projectTo.number.realm)
    }
}
