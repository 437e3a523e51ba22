// Realm Swift's optional primary keys: `Int?`, `String?`, `ObjectId?` keys, where nil is a
// key like any other — one object of the type may have it.

import Foundation
import Strata
import XCTest

final class MaybeKeyed: Object {
    @Persisted(primaryKey: true) var id: Int?
    @Persisted var note: String = ""
}

final class MaybeNamed: Object {
    @Persisted(primaryKey: true) var name: String?
    @Persisted var rank: Int = 0
}

final class MaybeIdentified: Object {
    @Persisted(primaryKey: true) var _id: ObjectId?
}

final class PortingOptionalPrimaryKeyContractTests: PortingStoreTestCase {
    func testNilIsOneKeyAmongTheOthers() throws {
        let (realm, config) = try contractRealm("optional-keys", types: [MaybeKeyed.self, MaybeNamed.self, MaybeIdentified.self])
        directories.append(config.directory!)
        XCTAssertEqual(MaybeKeyed.sharedSchema()?.primaryKeyProperty?.isOptional, true)
        try realm.write {
            try realm.add({ let o = MaybeKeyed(); o.note = "nil key"; return o }())
            for id in [2, 1] { try realm.add({ let o = MaybeKeyed(); o.id = id; o.note = "\(id)"; return o }()) }
            XCTAssertThrowsError(try realm.add(MaybeKeyed())) { error in
                guard case RealmError.primaryKeyExists(let type, let key) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(type, "MaybeKeyed")
                XCTAssertEqual(key, "nil")
            }
            try realm.create(MaybeKeyed.self, value: ["id": NSNull(), "note": "updated"] as [String: Any], update: .modified)
            try realm.create(MaybeNamed.self, value: ["name": nil, "rank": 1] as [String: Any?])
            try realm.create(MaybeNamed.self, value: ["name": "a", "rank": 2] as [String: Any])
            try realm.add(MaybeIdentified())
        }
        let keyed = realm.objects(MaybeKeyed.self)
        XCTAssertEqual(keyed.count, 3)
        XCTAssertEqual(realm.object(ofType: MaybeKeyed.self, forPrimaryKey: Int?.none)?.note, "updated")
        XCTAssertEqual(realm.object(ofType: MaybeKeyed.self, forPrimaryKey: 2)?.note, "2")
        XCTAssertEqual(keyed.map(\.id), [nil, 1, 2], "nil first in key order")
        XCTAssertEqual(keyed.filter("id == nil").count, 1)
        XCTAssertEqual(keyed.filter("id > 1").map(\.id), [2])
        XCTAssertEqual(keyed.sorted(byKeyPath: "id", ascending: false).map(\.id), [2, 1, nil])
        XCTAssertEqual(realm.object(ofType: MaybeKeyed.self, forPrimaryKey: Int?.none)?.primaryKeyValue, PrimaryKeyValue.null)
        XCTAssertEqual(realm.object(ofType: MaybeNamed.self, forPrimaryKey: String?.none)?.rank, 1)
        XCTAssertEqual(realm.objects(MaybeIdentified.self).first?._id, nil)

        try realm.write { try realm.delete(realm.object(ofType: MaybeKeyed.self, forPrimaryKey: Int?.none)!) }
        XCTAssertNil(realm.object(ofType: MaybeKeyed.self, forPrimaryKey: Int?.none))
        try realm.write { try realm.add(MaybeKeyed()) }
        realm.invalidate()
        let reopened = try Realm(configuration: config)
        XCTAssertEqual(reopened.objects(MaybeKeyed.self).map(\.id), [nil, 1, 2])
    }

    func testColumnsSortsAndJSONWithANilKeyAmongThousands() throws {
        let (realm, config) = try contractRealm("optional-keys-many", types: [MaybeKeyed.self, MaybeNamed.self, MaybeIdentified.self])
        directories.append(config.directory!)
        try realm.write {
            for id in (0 ..< 3000).reversed() { try realm.add({ let o = MaybeKeyed(); o.id = id; o.note = "n\(id % 7)"; return o }()) }
            try realm.add({ let o = MaybeKeyed(); o.note = "n0"; return o }())
        }
        let keyed = realm.objects(MaybeKeyed.self)
        for _ in 0 ..< 3 {   // repeated: the column projection is built and then used
            XCTAssertEqual(keyed.count, 3001)
            XCTAssertEqual(Array(keyed.map(\.id).prefix(3)), [nil, 0, 1])
            XCTAssertEqual(keyed.filter("id >= 2990").count, 10)
            XCTAssertEqual(keyed.filter("note == 'n0'").count, 430)
            XCTAssertEqual(keyed.filter("note == 'n0'").map(\.id).first, .some(nil))
            XCTAssertEqual(keyed.sorted(byKeyPath: "id", ascending: false).map(\.id).last, .some(nil))
            XCTAssertEqual(keyed.filter("id == nil").map(\.note), ["n0"])
        }

        let coder = RealmCoder(realm: realm)
        let decoded = try coder.decodeArray(MaybeNamed.self, from: Data(#"[{"name": null, "rank": 5}, {"name": "b", "rank": 6}]"#.utf8))
        XCTAssertEqual(decoded.map(\.rank), [5, 6])
        _ = try coder.decodeArray(MaybeNamed.self, from: Data(#"[{"name": null, "rank": 7}]"#.utf8))
        XCTAssertEqual(realm.objects(MaybeNamed.self).count, 2, "the nil key was updated, not added again")
        XCTAssertEqual(realm.object(ofType: MaybeNamed.self, forPrimaryKey: String?.none)?.rank, 7)
    }
}
