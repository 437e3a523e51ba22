// Realm Swift's sectioned results, as ported code writes them: sectioned(by:) in its three
// forms, sections and index paths, observation of the whole and of one section, freezing.

import Foundation
import Strata
import XCTest

final class Pal: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var city: String?
    @Persisted var score: Int = 0
}

final class PortingSectionedResultsContractTests: PortingStoreTestCase {
    private func palRealm(_ name: String) throws -> Realm {
        let (realm, config) = try contractRealm(name, types: [Pal.self])
        directories.append(config.directory!)
        try realm.write {
            for (id, name, city) in [(1, "Ann", "Oslo"), (2, "Bob", "Paris"), (3, "Cy", "Oslo"), (4, "Dee", nil), (5, "Abe", "Paris")] as [(Int, String, String?)] {
                try realm.add({ let p = Pal(); p.id = id; p.name = name; p.city = city; p.score = id * 10; return p }())
            }
        }
        return realm
    }

    func testSectionsByAKeyPathInKeyOrder() throws {
        let realm = try palRealm("sectioned-keypath")
        let sections = realm.objects(Pal.self).sectioned(by: \.city)
        XCTAssertEqual(sections.allKeys, [nil, "Oslo", "Paris"], "nil first, then ascending")
        XCTAssertEqual(sections.count, 3)
        XCTAssertEqual(sections.map(\.count), [1, 2, 2])
        XCTAssertEqual(sections[1].map(\.name), ["Ann", "Cy"], "within a section: the results' order")
        XCTAssertEqual(sections[IndexPath(item: 1, section: 2)].name, "Abe")
        XCTAssertEqual(sections[2].key, "Paris")
        XCTAssertEqual(sections[2].id, "Paris")

        let descending = realm.objects(Pal.self).sectioned(by: \.city, ascending: false)
        XCTAssertEqual(descending.allKeys, ["Paris", "Oslo", nil])

        let sorted = realm.objects(Pal.self).sectioned(by: \.city, sortDescriptors: [SortDescriptor(keyPath: "city", ascending: false), SortDescriptor(keyPath: "score", ascending: false)])
        XCTAssertEqual(sorted.allKeys, ["Paris", "Oslo", nil], "the first descriptor's direction orders the sections")
        XCTAssertEqual(sorted[0].map(\.name), ["Abe", "Bob"], "then by score, descending")
    }

    func testSectionsByABlock() throws {
        let realm = try palRealm("sectioned-block")
        let byInitial = realm.objects(Pal.self).sectioned(by: { String($0.name.prefix(1)) },
                                                         sortDescriptors: [SortDescriptor(keyPath: "name")])
        XCTAssertEqual(byInitial.allKeys, ["A", "B", "C", "D"])
        XCTAssertEqual(byInitial[0].map(\.name), ["Abe", "Ann"])
        let filtered = realm.objects(Pal.self).filter("score > 20").sectioned(by: { $0.score >= 40 }, sortDescriptors: [SortDescriptor(\Pal.score)])
        XCTAssertEqual(filtered.allKeys, [false, true])
        XCTAssertEqual(filtered.map { $0.map(\.id) }, [[3], [4, 5]])
    }

    func testSectionsFollowWritesAndReportIndexPaths() throws {
        let realm = try palRealm("sectioned-observe")
        let sections = realm.objects(Pal.self).sectioned(by: \.city)
        var changes: [RealmSectionedResultsChange<SectionedResults<String?, Pal>>] = []
        let token = sections.observe { changes.append($0) }
        defer { token.invalidate() }
        var sectionChanges: [RealmSectionedResultsChange<ResultsSection<String?, Pal>>] = []
        let sectionToken = sections[1].observe { sectionChanges.append($0) }     // "Oslo"
        defer { sectionToken.invalidate() }
        XCTAssertEqual(changes.count, 1)
        guard case .initial(let initial) = changes[0] else { return XCTFail("\(changes[0])") }
        XCTAssertEqual(initial.allKeys, [nil, "Oslo", "Paris"])

        // A new section.
        try realm.write { try realm.add({ let p = Pal(); p.id = 6; p.name = "Eve"; p.city = "Rome"; return p }()) }
        guard case .update(let after, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete) = changes.last else {
            return XCTFail("\(String(describing: changes.last))")
        }
        XCTAssertEqual(after.allKeys, [nil, "Oslo", "Paris", "Rome"])
        XCTAssertEqual(deletions, [])
        XCTAssertEqual(insertions, [IndexPath(item: 0, section: 3)])
        XCTAssertEqual(modifications, [])
        XCTAssertEqual(sectionsToInsert, IndexSet(integer: 3))
        XCTAssertEqual(sectionsToDelete, IndexSet())
        XCTAssertEqual(sectionChanges.count, 1, "the Oslo section did not change")

        // A change inside a section is a modification there.
        try realm.write { realm.object(ofType: Pal.self, forPrimaryKey: 3)!.score = 99 }
        guard case .update(_, let d2, let i2, let m2, let s2, let r2) = changes.last else { return XCTFail() }
        XCTAssertEqual(d2, [])
        XCTAssertEqual(i2, [])
        XCTAssertEqual(m2, [IndexPath(item: 1, section: 1)])
        XCTAssertEqual(s2, IndexSet())
        XCTAssertEqual(r2, IndexSet())
        guard case .update(let oslo, _, _, let sectionModified, _, _) = sectionChanges.last else { return XCTFail() }
        XCTAssertEqual(sectionModified, [IndexPath(item: 1, section: 1)])
        XCTAssertEqual(oslo.map(\.id), [1, 3])

        // Dee moves from the nil section to Oslo: the nil section goes.
        try realm.write { realm.object(ofType: Pal.self, forPrimaryKey: 4)!.city = "Oslo" }
        guard case .update(let moved, let d3, let i3, let m3, let s3, let r3) = changes.last else { return XCTFail() }
        XCTAssertEqual(moved.allKeys, ["Oslo", "Paris", "Rome"])
        XCTAssertEqual(d3, [IndexPath(item: 0, section: 0)])
        XCTAssertEqual(i3, [IndexPath(item: 2, section: 0)])
        XCTAssertEqual(m3, [])
        XCTAssertEqual(s3, IndexSet())
        XCTAssertEqual(r3, IndexSet(integer: 0))
        guard case .update(let oslo2, _, let sectionInserted, _, _, _) = sectionChanges.last else { return XCTFail() }
        XCTAssertEqual(sectionInserted, [IndexPath(item: 2, section: 0)])
        XCTAssertEqual(oslo2.map(\.id), [1, 3, 4])
    }

    func testAnObjectWhoseKeyChangesInPlaceMovesBetweenSections() throws {
        // Sorted by name, sectioned by score: a new score keeps the object's place in the
        // results (a modification there) but moves it to another section.
        let realm = try palRealm("sectioned-move")
        let sections = realm.objects(Pal.self).sectioned(by: { $0.score >= 40 }, sortDescriptors: [SortDescriptor(keyPath: "name")])
        XCTAssertEqual(sections.map { $0.map(\.name) }, [["Ann", "Bob", "Cy"], ["Abe", "Dee"]])
        var last: RealmSectionedResultsChange<SectionedResults<Bool, Pal>>?
        let token = sections.observe { last = $0 }
        defer { token.invalidate() }
        try realm.write { realm.object(ofType: Pal.self, forPrimaryKey: 1)!.score = 50 }     // Ann
        guard case .update(let after, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete) = last else {
            return XCTFail("\(String(describing: last))")
        }
        XCTAssertEqual(after.map { $0.map(\.name) }, [["Bob", "Cy"], ["Abe", "Ann", "Dee"]])
        XCTAssertEqual(deletions, [IndexPath(item: 0, section: 0)])
        XCTAssertEqual(insertions, [IndexPath(item: 1, section: 1)])
        XCTAssertEqual(modifications, [])
        XCTAssertEqual(sectionsToInsert, IndexSet())
        XCTAssertEqual(sectionsToDelete, IndexSet())
    }

    func testFrozenSectionsKeepTheirCommit() throws {
        let realm = try palRealm("sectioned-frozen")
        let frozen = realm.objects(Pal.self).sectioned(by: \.city).freeze()
        XCTAssertTrue(frozen.isFrozen)
        try realm.write { try realm.delete(realm.objects(Pal.self).filter("city == nil")) }
        XCTAssertEqual(frozen.allKeys, [nil, "Oslo", "Paris"])
        XCTAssertEqual(frozen.thaw()?.allKeys, ["Oslo", "Paris"])
        let section = frozen[0]
        XCTAssertTrue(section.isFrozen)
        XCTAssertEqual(section.thaw()?.count, 0, "the live section of a key that is gone is empty")
    }
}
