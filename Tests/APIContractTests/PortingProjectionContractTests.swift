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
}
