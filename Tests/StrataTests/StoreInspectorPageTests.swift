// StoreInspector's pages (what the studio's tables show): each page is the same slice of the
// full answer that `objects(ofType:matching:)` gives, with and without a query, for a type
// with a primary key and one with hidden ids, and past the end.

import Foundation
import XCTest
import StrataStorage
import StrataTestSupport
@testable import Strata

final class StoreInspectorPageTests: RealmTestCase {
    final class Note: Object {
        @Persisted var text: String = ""
        @Persisted var rank: Int = 0
    }

    func testPagesAreSlicesOfTheFullAnswer() throws {
        let realm = try openRealm(types: allModelTypes + [Note.self])
        var random = SplitMix64(seed: TestEnvironment.seed(default: 3))
        try realm.write {
            for i in 0 ..< 700 {
                let number = Int(random.next() % 1_000_000)
                try realm.add(makeUser(String(format: "u%07d", number) + "-\(i)", rank: number % 13, city: ["a", "b", "c"][i % 3]))
                try realm.create(Note.self, value: ["text": "note \(i)", "rank": i % 7])
            }
        }
        realm.invalidate()
        let store = try Store(directory: directory, options: StoreOptions())
        defer { try? store.close() }
        let inspector = try XCTUnwrap(try StoreInspector(store: store))
        func json(_ objects: some Collection<[String: Any]>) throws -> Data {
            try JSONSerialization.data(withJSONObject: Array(objects), options: [.sortedKeys])
        }
        for type in ["User", "Note"] {
            for query in [nil, "rank > 4", "rank > 4 SORT(rank DESC)", "city == 'b' LIMIT(30)", "rank > 99",
                          "rank IN {1, 2} AND rank != 2 OR NOT (rank BETWEEN {2, 11})",
                          "city BEGINSWITH 'a' OR rank == 3 SORT(city DESC, rank ASC) LIMIT(300)"] {
                if type == "Note", query?.contains("city") == true { continue }   // (Note has no city)
                let all = try inspector.objects(ofType: type, matching: query)
                for (offset, limit) in [(0, 50), (50, 50), (650, 100), (all.count, 10), (all.count + 5, 10), (0, 0)] {
                    let page = try inspector.page(ofType: type, matching: query, offset: offset, limit: limit)
                    XCTAssertEqual(page.matching, all.count, "\(type) \(query ?? "all")")
                    XCTAssertEqual(try json(page.objects), try json(all.dropFirst(offset).prefix(limit)),
                                   "\(type) \(query ?? "all") at \(offset), \(limit)")
                }
            }
        }
        XCTAssertThrowsError(try inspector.page(ofType: "User", matching: nil, offset: -1, limit: 5)) { error in
            XCTAssertTrue("\(error)".contains("non-negative offset"), "\(error)")
        }
        XCTAssertThrowsError(try inspector.page(ofType: "Nope", matching: nil, offset: 0, limit: 5))
    }

    /// A page of a query the columns answer is the same slice of the same answer, and a
    /// store damaged after a realm's close kept its projection is read from its records:
    /// the page reports the damage as the listing does, never the kept values.
    func testAColumnPageAgreesWithTheListingAndMeetsDamageAsItDoes() throws {
        do {
            let realm = try openRealm(types: allModelTypes + [Note.self])
            try realm.write { for i in 0 ..< 5000 { try realm.create(Note.self, value: ["text": "note \(i)", "rank": i % 7]) } }
            XCTAssertGreaterThan(realm.objects(Note.self).filter("rank > 3").count, 0)   // a projection, kept at the close
            realm.invalidate()
        }
        XCTAssertTrue(try FileManager.default.contentsOfDirectory(atPath: directory.path).contains { $0.hasSuffix(".derived") })
        do {
            let store = try Store(directory: directory, options: StoreOptions())
            defer { try? store.close() }
            let inspector = try XCTUnwrap(try StoreInspector(store: store))
            for query in ["rank > 4", "rank == 2 OR text == 'note 9'"] {
                let all = try inspector.objects(ofType: "Note", matching: query)
                let page = try inspector.page(ofType: "Note", matching: query, offset: 100, limit: 40)
                XCTAssertEqual(page.matching, all.count, query)
                XCTAssertEqual(try JSONSerialization.data(withJSONObject: page.objects, options: [.sortedKeys]),
                               try JSONSerialization.data(withJSONObject: Array(all.dropFirst(100).prefix(40)), options: [.sortedKeys]), query)
            }
        }
        // One flipped byte in a note's row (its text), in whichever segment holds it.
        XCTAssertTrue(try flipFirstByte(of: "note 2500"), "a note's row")
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(directory: directory, options: options)
        defer { try? store.close() }
        let inspector = try XCTUnwrap(try StoreInspector(store: store))
        var listing: String?
        do { _ = try inspector.objects(ofType: "Note", matching: "rank > 3") } catch { listing = "\(error)" }
        XCTAssertNotNil(listing, "the listing reads every record and meets the damage")
        XCTAssertThrowsError(try inspector.page(ofType: "Note", matching: "rank > 3", offset: 0, limit: 10), "the page meets it too")
    }
}
