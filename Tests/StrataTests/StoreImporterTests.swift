// StoreImporter (what `strata import` uses): objects written through the stored schema keep
// the secondary indexes exact, so the app's indexed queries find them.

import XCTest
@testable import Strata

final class StoreImporterTests: RealmTestCase {
    func testImportedObjectsAreFoundThroughTheIndex() throws {
        let config = configuration()
        do {
            let realm = try Realm(configuration: config)
            try realm.write { try realm.add(makeUser("1", city: "Raleigh")) }
        }
        do {
            let store = try Store(directory: directory)
            defer { try? store.close() }
            let importer = try XCTUnwrap(try StoreImporter(store: store))
            let json = #"[{"objId": "1", "city": "Durham"}, {"objId": "2", "city": "Durham", "rank": 4}, {"objId": "3", "city": "Cary"}]"#
            let report = try importer.importObjects(ofType: "User", from: Data(json.utf8))
            XCTAssertEqual(report, StoreImporter.Report(inserted: 2, updated: 1, unchanged: 0))
            XCTAssertThrowsError(try importer.importObjects(ofType: "User", from: Data(#"[{"objId": "4", "city": 7}]"#.utf8))) {
                XCTAssertTrue("\($0)".contains("$[0].city"), "\($0)")
            }
        }
        let realm = try Realm(configuration: config)
        let durham = realm.objects(User.self).filter(#Predicate { $0.city == "Durham" })
        XCTAssertNotNil(durham.query.indexTerm)
        XCTAssertEqual(durham.map(\.objId).sorted(), ["1", "2"])
        XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.city == "Raleigh" }).count, 0)
        XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: "4"))
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "2")?.rank, 4)
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "1")?.username, "user1", "left out: kept")
    }
}
