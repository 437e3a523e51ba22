// Realm's model types (issue 14): what LinkingObjects' hidden inverse index costs and
// saves. Two stores with the same cars and owners, one whose Owner declares
// `LinkingObjects<Car>` on `Car.owner` (so commits keep the inverse index) and one whose
// Owner does not; rounds alternate which goes first; medians, with the per-round range.

import BenchSupport
import Foundation
import Strata

final class LinkedOwner: Object {
    override class var className: String { "Owner" }
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(originProperty: "owner") var cars: LinkingObjects<LinkedCar>
}

final class LinkedCar: Object {
    override class var className: String { "Car" }
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var owner: LinkedOwner?
}

final class PlainOwner: Object {
    override class var className: String { "Owner" }
    @Persisted(primaryKey: true) var id: Int = 0
}

final class PlainCar: Object {
    override class var className: String { "Car" }
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var owner: PlainOwner?
}

struct ModelTypeBenchmarks {
    var cars: Int
    var workDirectory: String
    static let owners = 1000
    static let commits = 1000
    static let lookups = 200

    func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

    private struct Round { var load = 0.0, commits = 0.0, reads = 0.0 }

    private func realm(_ name: String, _ types: [Object.Type]) throws -> Realm {
        try freshRealm(at: workDirectory + "/models-" + name, types: types)
    }

    /// With the inverse index: load, commits that move one car, and reads of
    /// `owner.cars.count` (an index look-up).
    private func linked(_ checksum: inout Int) throws -> Round {
        var round = Round()
        let realm = try realm("linked", [LinkedOwner.self, LinkedCar.self])
        let owners = (0 ..< Self.owners).map { i in let o = LinkedOwner(); o.id = i; return o }
        round.load = try time {
            try realm.write {
                try realm.add(owners)
                for i in 0 ..< cars { let car = LinkedCar(); car.id = i; car.owner = owners[i % Self.owners]; try realm.add(car) }
            }
        }
        round.commits = try time {
            for i in 0 ..< Self.commits {
                try realm.write { realm.object(ofType: LinkedCar.self, forPrimaryKey: i * 7 % cars)!.owner = owners[(i + 1) % Self.owners] }
            }
        }
        round.reads = time {
            for i in 0 ..< Self.lookups { checksum &+= realm.object(ofType: LinkedOwner.self, forPrimaryKey: i * 5)!.cars.count }
        }
        return round
    }

    /// Without it: the same load and commits, and the same answer by a query on Car
    /// (`owner == %@`, a scan of every car).
    private func plain(_ checksum: inout Int) throws -> Round {
        var round = Round()
        let realm = try realm("plain", [PlainOwner.self, PlainCar.self])
        let owners = (0 ..< Self.owners).map { i in let o = PlainOwner(); o.id = i; return o }
        round.load = try time {
            try realm.write {
                try realm.add(owners)
                for i in 0 ..< cars { let car = PlainCar(); car.id = i; car.owner = owners[i % Self.owners]; try realm.add(car) }
            }
        }
        round.commits = try time {
            for i in 0 ..< Self.commits {
                try realm.write { realm.object(ofType: PlainCar.self, forPrimaryKey: i * 7 % cars)!.owner = owners[(i + 1) % Self.owners] }
            }
        }
        let all = realm.objects(PlainCar.self)
        round.reads = time {
            for i in 0 ..< Self.lookups { checksum &+= all.filter("owner == %@", realm.object(ofType: PlainOwner.self, forPrimaryKey: i * 5)!).count }
        }
        return round
    }

    func run(rounds: Int) throws -> [ResultRow] {
        var linkedRounds: [Round] = [], plainRounds: [Round] = []
        var checksum = 0
        for round in 0 ..< rounds {
            log("model types round \(round + 1)/\(rounds)")
            if round % 2 == 0 {
                linkedRounds.append(try linked(&checksum)); plainRounds.append(try plain(&checksum))
            } else {
                plainRounds.append(try plain(&checksum)); linkedRounds.append(try linked(&checksum))
            }
        }
        /// Per round, the time with the index over the time without (`inverted`: without over with).
        func range(_ value: (Round) -> Double, inverted: Bool = false) -> String {
            let ratios = zip(linkedRounds, plainRounds).map { inverted ? value($1) / value($0) : value($0) / value($1) }
            return String(format: "rounds %.2f–%.2f×", ratios.min()!, ratios.max()!)
        }
        let load = (median(linkedRounds.map(\.load)), median(plainRounds.map(\.load)))
        let commits = (median(linkedRounds.map(\.commits)), median(plainRounds.map(\.commits)))
        let reads = (median(linkedRounds.map(\.reads)), median(plainRounds.map(\.reads)))
        if checksum == 42 { log("") }
        return [
            ResultRow(benchmark: "load \(cars / 1000)k cars linked to \(Self.owners) owners, one write",
                      strata: formatRate(Double(cars) / load.0, unit: "cars"), baseline: formatRate(Double(cars) / load.1, unit: "cars"), sqlite: "–",
                      ratios: String(format: "with the inverse index %.2f× the time; %@", load.0 / load.1, range(\.load)),
                      target: "the index's write cost"),
            ResultRow(benchmark: "\(Self.commits) commits each moving one car to another owner",
                      strata: formatRate(Double(Self.commits) / commits.0, unit: "commits"), baseline: formatRate(Double(Self.commits) / commits.1, unit: "commits"),
                      sqlite: "–", ratios: String(format: "with the inverse index %.2f× the time; %@", commits.0 / commits.1, range(\.commits)),
                      target: "the index's write cost"),
            ResultRow(benchmark: "\(Self.lookups) owners' cars counted (\(cars / Self.owners) each)",
                      strata: formatRate(Double(Self.lookups) / reads.0, unit: "owners"), baseline: formatRate(Double(Self.lookups) / reads.1, unit: "owners"),
                      sqlite: "–", ratios: String(format: "owner.cars.count is %.0f× faster than filter(\"owner == %%@\").count; %@", reads.1 / reads.0, range(\.reads, inverted: true)),
                      target: "no scan of the origin type"),
        ]
    }
}
