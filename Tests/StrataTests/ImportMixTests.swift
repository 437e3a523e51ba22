// Imports build pending rows as encoded bytes; hand edits, deletes, queries, failed imports
// and cancelled writes then meet those rows inside the same write. A seeded random sequence
// of such writes is checked against an in-memory model after every write, including the
// secondary index (`city`).

import XCTest
import StrataTestSupport
@testable import Strata

final class Shop: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var city: String = ""
    @Persisted var name: String = ""
    @Persisted var visits: Int = 0
}

final class ImportMixTests: RealmTestCase {
    private struct ShopModel: Equatable {
        var city = "", name = "", visits = 0
    }

    func testImportsHandEditsQueriesAndCancelsInOneWriteMatchAModel() throws {
        let seed = TestEnvironment.seed(default: 23)
        let scale = TestEnvironment.fuzzScale
        var generator = SplitMix64(seed: seed)
        let realm = try openRealm(types: [Shop.self])
        let coder = RealmCoder(realm: realm)
        let cities = ["Raleigh", "Lisbon", "Osaka"]
        var model: [Int: ShopModel] = [:]

        for round in 0 ..< 150 * scale {
            var pending = model
            try realm.beginWrite()
            for _ in 0 ..< Int.random(in: 1 ... 6, using: &generator) {
                switch Int.random(in: 0 ..< 6, using: &generator) {
                case 0, 1:
                    // A partial import: each key present or not.
                    var elements: [String] = []
                    for _ in 0 ..< Int.random(in: 1 ... 4, using: &generator) {
                        let id = Int.random(in: 0 ..< 30, using: &generator)
                        var shop = pending[id] ?? ShopModel()
                        var members = [#""id": \#(id)"#]
                        if Bool.random(using: &generator) { shop.city = cities.randomElement(using: &generator)!; members.append(#""city": "\#(shop.city)""#) }
                        if Bool.random(using: &generator) { shop.name = "n\(Int.random(in: 0 ..< 5, using: &generator))"; members.append(#""name": "\#(shop.name)""#) }
                        if Bool.random(using: &generator) { shop.visits = Int.random(in: 0 ..< 9, using: &generator); members.append(#""visits": \#(shop.visits)"#) }
                        pending[id] = shop
                        elements.append("{" + members.joined(separator: ", ") + "}")
                    }
                    _ = try coder.decodeArray(Shop.self, from: Data(("[" + elements.joined(separator: ", ") + "]").utf8))
                case 2:
                    // A hand edit of an object that may have just been imported.
                    guard let id = pending.keys.randomElement(using: &generator),
                          let shop = realm.object(ofType: Shop.self, forPrimaryKey: id) else { continue }
                    XCTAssertEqual(shop.name, pending[id]!.name, "round \(round): read before the edit")
                    shop.visits += 1
                    pending[id]!.visits += 1
                    if Bool.random(using: &generator) {
                        shop.city = cities.randomElement(using: &generator)!
                        pending[id]!.city = shop.city
                    }
                case 3:
                    guard let id = pending.keys.randomElement(using: &generator),
                          let shop = realm.object(ofType: Shop.self, forPrimaryKey: id) else { continue }
                    try realm.delete(shop)
                    pending[id] = nil
                case 4:
                    // A failing import changes nothing, even inside an open write.
                    let id = Int.random(in: 0 ..< 30, using: &generator)
                    XCTAssertThrowsError(try coder.decodeArray(Shop.self, from: Data(#"[{"id": \#(id), "name": "bad"}, {"id": 99, "visits": "x"}]"#.utf8)))
                default:
                    // Queries inside the write see the pending rows, through the index.
                    let city = cities.randomElement(using: &generator)!
                    let ids = Set(realm.objects(Shop.self).filter(#Predicate { $0.city == city }).map(\.id))
                    XCTAssertEqual(ids, Set(pending.filter { $0.value.city == city }.keys), "round \(round): in-write query")
                }
            }
            if Int.random(in: 0 ..< 5, using: &generator) == 0 {
                realm.cancelWrite()
            } else {
                try realm.commitWrite()
                model = pending
            }
            // The store matches the model, objects and index alike.
            let stored = Dictionary(uniqueKeysWithValues: realm.objects(Shop.self).map { ($0.id, ShopModel(city: $0.city, name: $0.name, visits: $0.visits)) })
            XCTAssertEqual(stored, model, "round \(round) (seed \(seed))")
            for city in cities {
                let ids = Set(realm.objects(Shop.self).filter(#Predicate { $0.city == city }).map(\.id))
                XCTAssertEqual(ids, Set(model.filter { $0.value.city == city }.keys), "round \(round): index for \(city)")
            }
            if stored != model { return }
        }
    }
}
