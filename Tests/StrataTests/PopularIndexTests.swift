// A value shared by very many objects (a Bool, a status) in a secondary index: a
// one-object change rewrites a bounded number of bytes, however many objects share the
// value, and lookups stay exact through bucket splits.

import XCTest
import StrataTestSupport
@testable import Strata

final class Flagged: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var flag: Bool = false
    @Persisted(indexed: true) var status: Int = 0
}

final class PopularIndexTests: RealmTestCase {
    private func bytesOnDisk(_ realm: Realm) -> Int {
        realm.store.stats.segmentDetails.reduce(0) { $0 + $1.diskBytes }
    }

    /// 100,000 objects share `flag == true`; changing one rewrote a 64th of the keys
    /// (~1,560 keys, ~20 KB) before bucket splitting; now a leaf of a few dozen.
    func testAOneObjectChangeAmongAHundredThousandSharingAValueWritesLittle() throws {
        var config = configuration(types: [Flagged.self])
        config.storeOptions.autoCompaction = .disabled
        let realm = try Realm(configuration: config)
        let count = 100_000
        try realm.write {
            for i in 0..<count {
                let object = Flagged()
                object.id = i
                object.flag = true
                try realm.add(object)
            }
        }
        // One more change to let leaves split (a leaf splits when an edit finds it too big).
        try realm.write { realm.object(ofType: Flagged.self, forPrimaryKey: 1)!.flag = false }
        let before = bytesOnDisk(realm)
        try realm.write { realm.object(ofType: Flagged.self, forPrimaryKey: 2)!.flag = false }
        let written = bytesOnDisk(realm) - before
        XCTAssertLessThan(written, 4096, "one change wrote \(written) bytes")
        XCTAssertEqual(realm.objects(Flagged.self).filter(#Predicate { $0.flag == true }).count, count - 2)
        XCTAssertEqual(Set(realm.objects(Flagged.self).filter("flag == false").map(\.id)), [1, 2])
    }

    /// Random inserts, deletes and value changes over tens of thousands of objects sharing
    /// few values (so buckets split): index lookups always equal a full scan.
    /// The index checker itself: a stale record, and a posting list that lost an object,
    /// are each reported (so the checks above can fail).
    func testTheIndexCheckerFindsStaleAndMissingEntries() throws {
        let realm = try Realm(configuration: configuration(types: [Flagged.self]))
        try realm.write {
            for i in 0 ..< 10 {
                let object = Flagged()
                object.id = i
                object.status = i % 2
                try realm.add(object)
            }
        }
        XCTAssertNil(realm.checkIndexInvariants())
        let bound = try XCTUnwrap(realm.boundTypes.first { $0.className == "Flagged" })
        let table = bound.indexTable(try XCTUnwrap(bound.schema.index(of: "status")))
        // A list for a value no object holds.
        let stale = SecondaryIndex.bucketKey(IndexValueKey.bytes(for: .int(7)), SecondaryIndex.listSlot)
        try realm.store.write { try $0.put(table: table, key: stale, value: SecondaryIndex.encodePostings([PrimaryKeyValue.int(3).keyBytes])) }
        realm.refresh()
        XCTAssertTrue(realm.checkIndexInvariants()?.contains("reachable from no value") ?? false, "\(String(describing: realm.checkIndexInvariants()))")
        try realm.store.write { try $0.delete(table: table, key: stale) }
        // The list of status 1 without object 3.
        let list = SecondaryIndex.bucketKey(IndexValueKey.bytes(for: .int(1)), SecondaryIndex.listSlot)
        try realm.store.write { try $0.put(table: table, key: list, value: SecondaryIndex.encodePostings([1, 5, 7, 9].map { PrimaryKeyValue.int(Int64($0)).keyBytes })) }
        realm.refresh()
        XCTAssertTrue(realm.checkIndexInvariants()?.contains("the index holds 4 objects for") ?? false, "\(String(describing: realm.checkIndexInvariants()))")
    }

    func testLookupsEqualAScanThroughSplits() throws {
        let realm = try Realm(configuration: configuration(types: [Flagged.self]))
        var rng = SplitMix64(seed: 0x1D_E7)
        var model: [Int: Int] = [:]
        try realm.write {
            for i in 0..<40_000 {
                let object = Flagged()
                object.id = i
                object.status = i % 10 == 0 ? 1 : 0
                model[i] = object.status
                try realm.add(object)
            }
        }
        for round in 0..<40 {
            try realm.write {
                for _ in 0..<50 {
                    let id = Int.random(in: 0..<45_000, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0:
                        if let object = realm.object(ofType: Flagged.self, forPrimaryKey: id) {
                            try realm.delete(object)
                            model[id] = nil
                        }
                    case 1:
                        let object = Flagged()
                        object.id = id
                        object.status = Int.random(in: 0..<3, using: &rng)
                        try realm.add(object, update: .modified)
                        model[id] = object.status
                    default:
                        if let object = realm.object(ofType: Flagged.self, forPrimaryKey: id) {
                            object.status = Int.random(in: 0..<3, using: &rng)
                            model[id] = object.status
                        }
                    }
                }
            }
            if round % 8 == 7 || round == 39 {
                if round == 39 { XCTAssertNil(realm.checkIndexInvariants()) }   // every record reachable, none stale
                for value in 0..<3 {
                    let expected = Set(model.filter { $0.value == value }.keys)
                    let indexed = realm.objects(Flagged.self).filter(#Predicate { $0.status == value })
                    XCTAssertNotNil(indexed.query.indexTerm)
                    XCTAssertEqual(Set(indexed.map(\.id)), expected, "status \(value), round \(round)")
                }
            }
        }
    }
}
