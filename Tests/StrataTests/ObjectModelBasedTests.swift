// Model-based random test of the object layer: seeded random writes (add/upsert, partial
// create, property sets, list edits, deletes, cancelled writes), reopens, migrations that
// rewrite every object (a raised schema version whose block bumps every rank) and compactions,
// checked after every transaction against an in-memory model — including the secondary
// index, which must answer exactly what a scan answers.
//
// STRATA_FUZZ_SCALE multiplies the number of steps; STRATA_SEED replays a run.

import XCTest
import StrataTestSupport
@testable import Strata

final class ObjectModelBasedTests: RealmTestCase {
    struct ModelUser: Equatable {
        var rank: Int
        var city: String
        var tags: [String]
        var car: String?
    }

    private var seed: UInt64 { TestEnvironment.seed(default: 20261122) }

    func testRandomOperationsMatchTheModel() throws {
        var generator = SplitMix64(seed: seed)
        var model: [String: ModelUser] = [:]
        var cars: Set<String> = []
        let cities = ["Raleigh", "Durham", "Cary", "Apex", ""]
        var config = configuration()
        config.storeOptions.segmentSize = 64 << 10
        config.storeOptions.autoCompaction = .disabled
        var realm = try Realm(configuration: config)
        let steps = 400 * TestEnvironment.fuzzScale
        for step in 0 ..< steps {
            let choice = Int.random(in: 0 ..< 100, using: &generator)
            if choice < 3 {
                realm.invalidate()
                realm = try Realm(configuration: config)
            } else if choice < 5 {
                _ = try realm.store.compact()
            } else if choice < 7 {
                realm.invalidate()
                config.schemaVersion += 1
                config.migrationBlock = { migration, _ in
                    migration.enumerateObjects(ofType: "User") { old, new in
                        new?["rank"] = (old?["rank"] as? Int ?? 0) + 1
                    }
                }
                realm = try Realm(configuration: config)
                for id in model.keys { model[id]!.rank += 1 }
            } else {
                var pending = model
                var pendingCars = cars
                let cancel = Int.random(in: 0 ..< 10, using: &generator) == 0
                try realm.write {
                    for _ in 0 ..< Int.random(in: 1 ... 6, using: &generator) {
                        let id = "u\(Int.random(in: 0 ..< 40, using: &generator))"
                        let existing = realm.object(ofType: User.self, forPrimaryKey: id)
                        switch Int.random(in: 0 ..< 6, using: &generator) {
                        case 0:
                            let user = newUser(id, rank: Int.random(in: 0 ..< 20, using: &generator), city: cities.randomElement(using: &generator)!)
                            user.tags.append("t\(step)")
                            var carVin: String?
                            if Bool.random(using: &generator) {
                                let car = Car()
                                car.vin = "c\(Int.random(in: 0 ..< 10, using: &generator))"
                                user.car = car
                                carVin = car.vin
                                pendingCars.insert(car.vin)
                            }
                            try realm.add(user, update: .modified)
                            pending[id] = ModelUser(rank: user.rank, city: user.city, tags: ["t\(step)"], car: carVin)
                        case 1:
                            let rank = Int.random(in: 0 ..< 20, using: &generator)
                            try realm.create(User.self, value: ["objId": id, "rank": rank], update: .modified)
                            if pending[id] != nil { pending[id]!.rank = rank } else { pending[id] = ModelUser(rank: rank, city: "", tags: [], car: nil) }
                        case 2:
                            guard let existing else { continue }
                            let city = cities.randomElement(using: &generator)!
                            existing.city = city
                            pending[id]!.city = city
                        case 3:
                            guard let existing else { continue }
                            existing.tags.append("x\(step)")
                            pending[id]!.tags.append("x\(step)")
                            if existing.tags.count > 3 {
                                existing.tags.remove(at: 0)
                                pending[id]!.tags.removeFirst()
                            }
                        case 4:
                            guard let existing else { continue }
                            try realm.delete(existing)
                            pending[id] = nil
                        default:
                            guard let existing else { continue }
                            existing.rank += 1
                            pending[id]!.rank += 1
                        }
                    }
                    if cancel { realm.cancelWrite() }
                }
                if !cancel {
                    model = pending
                    cars = pendingCars
                }
            }
            try check(realm, model: model, cars: cars, step: step, cities: cities)
        }
    }

    private func check(_ realm: Realm, model: [String: ModelUser], cars: Set<String>, step: Int, cities: [String]) throws {
        let users = realm.objects(User.self)
        XCTAssertEqual(users.map(\.objId), model.keys.sorted(), "step \(step) (seed \(seed))")
        for user in users {
            let expected = model[user.objId]!
            let actual = ModelUser(rank: user.rank, city: user.city, tags: Array(user.tags), car: user.car?.vin)
            XCTAssertEqual(actual, expected, "\(user.objId) at step \(step) (seed \(seed))")
        }
        XCTAssertEqual(Set(realm.objects(Car.self).map(\.vin)), cars)
        for city in cities {
            let indexed = realm.objects(User.self).filter(#Predicate { $0.city == city }).map(\.objId)
            let expected = model.filter { $0.value.city == city }.keys.sorted()
            XCTAssertEqual(indexed, expected, "index for '\(city)' at step \(step) (seed \(seed))")
        }
        XCTAssertNil(realm.checkIndexInvariants(), "step \(step) (seed \(seed))")
        let ranked = realm.objects(User.self).filter(#Predicate { $0.rank > 10 }).sorted(by: [SortDescriptor(\User.rank)]).map(\.rank)
        XCTAssertEqual(ranked, model.values.map(\.rank).filter { $0 > 10 }.sorted())
    }
}
