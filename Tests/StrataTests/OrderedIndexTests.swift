// Ordered indexes (Layout/OrderedIndex.swift): an indexed Int, Double, Float, Date or String
// property keeps a counted B+tree of its (value, key) entries. Model-based: random inserts,
// changes and deletes against an in-memory model, the tree checked node by node after
// commits and ranges answered as the model answers them (reproducible: STRATA_SEED). Also:
// the encoding's order, a store without trees (as written before them) rebuilt by a
// writable open and not used by a read-only one, and damaged tree records never served.

import XCTest
import StrataTestSupport
@testable import Strata
@testable import StrataStorage

final class Ranked: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var age: Int = 0
    @Persisted(indexed: true) var score: Double? = nil
    @Persisted(indexed: true) var name: String = ""
    @Persisted(indexed: true) var when: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var note: String = ""
}

final class OrderedIndexTests: RealmTestCase {
    private struct Model: Equatable {
        var age: Int
        var score: Double?
        var name: String
        var when: Date
    }

    private let names = ["", "a", "ab", "abc", "b", "éclair", "e\u{301}clair", "zed", "Zed", "a\u{0}b", "日本"]

    private func randomModel(_ generator: inout SplitMix64, longNames: Bool) -> Model {
        let scores: [Double?] = [nil, .nan, 0, -0.0, -1.5, 2.25, .infinity, -.infinity, Double(Int.random(in: -100 ... 100, using: &generator)) / 8]
        var name = names.randomElement(using: &generator)! + String(Int.random(in: 0 ..< 50, using: &generator))
        // Long names make nodes hold few entries, so a few thousand objects build a deep tree.
        if longNames { name += String(repeating: "x", count: Int.random(in: 150 ... 260, using: &generator)) }
        return Model(age: Int.random(in: -40 ... 40, using: &generator) * (Bool.random(using: &generator) ? 1 : 1_000_000_000_000),
                     score: scores.randomElement(using: &generator)!, name: name,
                     when: Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1000 ... 1000, using: &generator))))
    }

    private func apply(_ model: Model, to object: Ranked) {
        object.age = model.age
        object.score = model.score
        object.name = model.name
        object.when = model.when
    }

    /// Ranges on every indexed kind, answered by the realm (count and keys) and by the model.
    private func checkRanges(_ realm: Realm, _ model: [Int: Model], _ generator: inout SplitMix64, context: String) {
        func check(_ results: Results<Ranked>, _ expected: (Model) -> Bool, _ label: String) {
            let want = Set(model.filter { expected($0.value) }.keys)
            // The tree's own answer, whatever the planner chose: exact for numbers and dates
            // (its count too), a superset for strings (the rows judge those).
            if let term = results.query.rangeTerm {
                do {
                    let (count, keys) = try treeAnswer(realm, term)
                    let ids = Set(keys.map(Self.integerKey))
                    XCTAssertEqual(count, keys.count, "\(context): tree count of \(label)")
                    if term.range.isExact {
                        XCTAssertEqual(ids, want, "\(context): the tree's keys for \(label)")
                    } else {
                        XCTAssertTrue(ids.isSuperset(of: want), "\(context): the tree's keys for \(label) miss \(want.subtracting(ids).sorted())")
                    }
                } catch {
                    XCTFail("\(context): the tree for \(label) does not read: \(error)")
                }
            } else {
                XCTFail("\(context): \(label) has no range term")
            }
            XCTAssertEqual(results.count, want.count, "\(context): count of \(label)")
            let got = results.map(\.id)
            XCTAssertEqual(got.count, Set(got).count, "\(context): \(label) lists an object twice")
            XCTAssertEqual(Set(got), want, "\(context): \(label)")
        }
        let a = Int.random(in: -45 ... 45, using: &generator), b = a + Int.random(in: 0 ... 30, using: &generator)
        check(realm.objects(Ranked.self).filter(#Predicate { $0.age >= a && $0.age < b }), { $0.age >= a && $0.age < b }, "\(a) <= age < \(b)")
        let big = a * 1_000_000_000_000
        check(realm.objects(Ranked.self).filter(#Predicate { $0.age > big }), { $0.age > big }, "age > \(big)")
        check(realm.objects(Ranked.self).filter(#Predicate { $0.age <= b && $0.note == "" }), { $0.age <= b }, "age <= \(b) && note")
        let x = Double(Int.random(in: -20 ... 20, using: &generator)) / 4
        check(realm.objects(Ranked.self).filter("score > %@", x), { $0.score.map { $0 > x } ?? false }, "score > \(x)")
        check(realm.objects(Ranked.self).filter("score <= %@ AND score >= %@", x, -x), { $0.score.map { $0 <= x && $0 >= -x } ?? false },
              "\(-x) <= score <= \(x)")
        check(realm.objects(Ranked.self).filter("score >= 0"), { $0.score.map { $0 >= 0 } ?? false }, "score >= 0 (-0.0 included)")
        // Bounds in NFC: Swift's `<` is no total order when the shorter string is decomposed
        // ("\u{e9}clair3" and "e\u{301}clair" are neither <, > nor ==), and the model is Swift's.
        let boundNames = names.filter { Array($0.unicodeScalars) == Array($0.precomposedStringWithCanonicalMapping.unicodeScalars) }
        let low = boundNames.randomElement(using: &generator)!, high = boundNames.randomElement(using: &generator)!
        check(realm.objects(Ranked.self).filter(#Predicate { $0.name >= low && $0.name < high }), { $0.name >= low && $0.name < high },
              "\(low.debugDescription) <= name < \(high.debugDescription)")
        check(realm.objects(Ranked.self).filter(#Predicate { $0.name > low }), { $0.name > low }, "name > \(low.debugDescription)")
        // BEGINSWITH on the indexed name (a prefix range of the tree, then Swift's hasPrefix).
        let prefixes = ["a", "ab", "é", "e\u{301}", "e", "z", "日", "a\u{0}", "x"] + [low, high].filter { !$0.isEmpty }
        let prefix = prefixes.randomElement(using: &generator)!
        check(realm.objects(Ranked.self).filter("name BEGINSWITH %@", prefix), { $0.name.hasPrefix(prefix) }, "name BEGINSWITH \(prefix.debugDescription)")
        let t = Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1000 ... 1000, using: &generator)))
        check(realm.objects(Ranked.self).filter(#Predicate { $0.when < t }), { $0.when < t }, "when < \(t)")
        // Sorts by an indexed number or date (the tree's order when it is chosen: with a
        // limit, or before columns exist), ties in key order, nils first ascending; a NaN
        // score makes the planner sort otherwise (the model has NaNs only sometimes).
        func sortedIDs(_ key: (Model) -> Double?, descending: Bool, where keep: (Model) -> Bool = { _ in true }) -> [Int] {
            model.filter { keep($0.value) }.sorted { a, b in
                let x = key(a.value), y = key(b.value)
                if x != y {
                    guard let x else { return !descending }
                    guard let y else { return descending }
                    return descending ? x > y : x < y
                }
                return a.key < b.key
            }.map(\.key)
        }
        for descending in [false, true] {
            let limit = Int.random(in: 1 ... 40, using: &generator)
            let order = descending ? "DESC" : "ASC"
            XCTAssertEqual(realm.objects(Ranked.self).filter("TRUEPREDICATE SORT(age \(order)) LIMIT(\(limit))").map(\.id),
                           Array(sortedIDs({ Double($0.age) }, descending: descending).prefix(limit)), "\(context): SORT(age \(order)) LIMIT(\(limit))")
            XCTAssertEqual(realm.objects(Ranked.self).filter("age >= \(a) SORT(age \(order)) LIMIT(\(limit))").map(\.id),
                           Array(sortedIDs({ Double($0.age) }, descending: descending, where: { $0.age >= a }).prefix(limit)),
                           "\(context): age >= \(a) SORT(age \(order)) LIMIT(\(limit))")
            XCTAssertEqual(realm.objects(Ranked.self).filter("TRUEPREDICATE SORT(when \(order)) LIMIT(\(limit))").map(\.id),
                           Array(sortedIDs({ $0.when.timeIntervalSinceReferenceDate }, descending: descending).prefix(limit)),
                           "\(context): SORT(when \(order)) LIMIT(\(limit))")
            if !model.values.contains(where: { $0.score?.isNaN ?? false }) {
                XCTAssertEqual(realm.objects(Ranked.self).filter("TRUEPREDICATE SORT(score \(order)) LIMIT(\(limit))").map(\.id),
                               Array(sortedIDs(\.score, descending: descending).prefix(limit)), "\(context): SORT(score \(order)) LIMIT(\(limit))")
            }
            XCTAssertEqual(realm.objects(Ranked.self).sorted(byKeyPath: "age", ascending: !descending).map(\.id),
                           sortedIDs({ Double($0.age) }, descending: descending), "\(context): sorted by age \(order)")
        }
        // Sorted by the range's property: the tree gives candidates, the sort is the query's.
        let sorted = realm.objects(Ranked.self).filter(#Predicate { $0.age >= a }).sorted(by: \.age, ascending: false).map(\.age)
        XCTAssertEqual(sorted, model.values.map(\.age).filter { $0 >= a }.sorted(by: >), "\(context): age >= \(a) sorted")
    }

    /// An integer primary key's value (kind byte, then its order value big-endian).
    private static func integerKey(_ bytes: [UInt8]) -> Int {
        guard bytes.count == 9, bytes[0] == PrimaryKeyValue.integerKind else { return -1 }
        return Int(PrimaryKeyValue.integer(orderValue: bytes[1...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }))
    }

    private func treeAnswer(_ realm: Realm, _ term: RangeTerm) throws -> (count: Int, keys: [[UInt8]]) {
        let bound = try XCTUnwrap(realm.boundTypes.first { $0.className == "Ranked" })
        let table = bound.indexTable(term.property), snapshot = realm.snapshot
        let read: OrderedIndex.Read = { try snapshot.get(table: table, key: $0) }
        let root = try XCTUnwrap(try OrderedIndex.root(read))
        var keys: [[UInt8]] = []
        try OrderedIndex.forEach(in: term.range, root: root, read) { keys.append(try XCTUnwrap(OrderedIndex.primaryKey(of: $0))); return true }
        var reversed: [[UInt8]] = []
        try OrderedIndex.forEach(in: term.range, root: root, reverse: true, read) { reversed.append(try XCTUnwrap(OrderedIndex.primaryKey(of: $0))); return true }
        XCTAssertEqual(reversed.reversed(), keys, "a walk backwards visits the same entries")
        return (try OrderedIndex.count(term.range, root: root, read), keys)
    }

    /// Random writes against a model; after commits the tree of every indexed property is
    /// checked node by node (`checkIndexInvariants`) and ranges answered as the model does.
    func testRandomWritesKeepEveryTreeExactAndRangesAnswerAsTheModel() throws {
        let seed = TestEnvironment.seed(default: 0x0DE_12ED)
        var generator = SplitMix64(seed: seed)
        let realm = try Realm(configuration: configuration(types: [Ranked.self]))
        var model: [Int: Model] = [:]
        // Live ids in an array: a dictionary's order changes from process to process, and the
        // seed must replay the run.
        var live: [Int] = []
        func pick() -> Int { live[Int.random(in: 0 ..< live.count, using: &generator)] }
        func forget(_ id: Int) {
            model[id] = nil
            live.swapAt(live.firstIndex(of: id)!, live.count - 1)
            live.removeLast()
        }
        var nextID = 0
        let rounds = 24 * TestEnvironment.fuzzScale
        for round in 0 ..< rounds {
            try realm.write {
                let operations = round == 0 ? 3000 : Int.random(in: 1 ... 400, using: &generator)
                for _ in 0 ..< operations {
                    let roll = Int.random(in: 0 ..< 10, using: &generator)
                    if roll < 5 || model.isEmpty {
                        let object = Ranked()
                        object.id = nextID
                        let values = randomModel(&generator, longNames: true)
                        apply(values, to: object)
                        try realm.add(object)
                        model[nextID] = values
                        live.append(nextID)
                        nextID += 1
                    } else if roll < 8 {
                        let id = pick()
                        let values = randomModel(&generator, longNames: Bool.random(using: &generator))
                        apply(values, to: try XCTUnwrap(realm.object(ofType: Ranked.self, forPrimaryKey: id)))
                        model[id] = values
                    } else {
                        let id = pick()
                        try realm.delete(XCTUnwrap(realm.object(ofType: Ranked.self, forPrimaryKey: id)))
                        forget(id)
                    }
                }
                if round == rounds / 2 {
                    // Most objects deleted in one write: leaves and branches merge.
                    for _ in 0 ..< live.count * 9 / 10 {
                        let id = pick()
                        try realm.delete(XCTUnwrap(realm.object(ofType: Ranked.self, forPrimaryKey: id)))
                        forget(id)
                    }
                }
            }
            if round % 6 == 0 || round == rounds - 1 || round == rounds / 2 {
                XCTAssertNil(realm.checkIndexInvariants(), "seed \(seed), round \(round)")
            }
            checkRanges(realm, model, &generator, context: "seed \(seed), round \(round)")
        }
    }

    /// A bulk load deep enough for three levels, then the tree's counts answer range counts
    /// without reading a row, and `explain` names the access path.
    func testABulkLoadBuildsADeepTreeThatCountsRanges() throws {
        let realm = try Realm(configuration: configuration(types: [Ranked.self]))
        try realm.write {
            for i in 0 ..< 6000 {
                let object = Ranked()
                object.id = i
                object.age = i - 3000
                object.name = String(format: "%05d", i) + String(repeating: "n", count: 200)
                try realm.add(object)
            }
        }
        XCTAssertNil(realm.checkIndexInvariants())
        let bound = try XCTUnwrap(realm.boundTypes.first { $0.className == "Ranked" })
        let read = { (table: UInt32) -> OrderedIndex.Read in { key in try realm.snapshot.get(table: table, key: key) } }
        let nameRoot = try XCTUnwrap(try OrderedIndex.root(read(bound.indexTable(try XCTUnwrap(bound.schema.index(of: "name"))))))
        XCTAssertGreaterThanOrEqual(nameRoot.height, 3, "6,000 entries of 200 bytes")
        XCTAssertEqual(nameRoot.count, 6000)
        let ranged = realm.objects(Ranked.self).filter(#Predicate { $0.age > -10 && $0.age <= 20 })
        XCTAssertTrue(ranged.explain().contains("ordered index on age, -10 < age <= 20 (30 stored objects"), ranged.explain())
        XCTAssertEqual(ranged.count, 30)
        XCTAssertEqual(ranged.map(\.id), Array(2991 ... 3020))
        let negative = realm.objects(Ranked.self).filter(#Predicate { $0.age < -2990 })
        XCTAssertEqual(negative.count, 10)
        XCTAssertEqual(realm.objects(Ranked.self).filter("age >= -3000 AND age < 3000").count, 6000)
        let named = realm.objects(Ranked.self).filter(#Predicate { $0.name >= "05990" })
        XCTAssertTrue(named.explain().contains("ordered index on name"), named.explain())
        XCTAssertEqual(named.map(\.id), Array(5990 ..< 6000))
        let begun = realm.objects(Ranked.self).filter("name BEGINSWITH '0599'")
        XCTAssertTrue(begun.explain().contains("ordered index on name, name BEGINSWITH \"0599\""), begun.explain())
        XCTAssertEqual(begun.map(\.id), Array(5990 ..< 6000))
        XCTAssertEqual(realm.objects(Ranked.self).filter("name BEGINSWITH '0599' AND age > 2991").map(\.id), Array(5992 ..< 6000))
        XCTAssertEqual(realm.objects(Ranked.self).filter("name BEGINSWITH[c] '0599'").count, 10, "with options: the rows judge")
        // Inside a write, pending objects join the candidates.
        try realm.write {
            let object = Ranked()
            object.id = 10_000
            object.age = 15
            try realm.add(object)
            realm.object(ofType: Ranked.self, forPrimaryKey: 3001)!.age = 99
            XCTAssertTrue(ranged.explain().contains("ordered index"), ranged.explain())
            XCTAssertEqual(Set(ranged.map(\.id)), Set(2991 ... 3020).subtracting([3001]).union([10_000]))
            XCTAssertEqual(ranged.count, 30)
        }
        XCTAssertNil(realm.checkIndexInvariants())
    }

    /// The encoding orders as Swift's `<` does: negative numbers, -0.0, infinities, dates
    /// before the reference date, canonically equivalent strings, a NUL inside a string;
    /// nulls below every value and NaN past every number.
    func testTheEncodingOrdersAsSwiftCompares() throws {
        func encoded(_ value: FieldValue) -> [UInt8] { OrderedValueKey.bytes(for: value)! }
        let ints: [Int64] = [.min, -1_000_000_000_000, -2, -1, 0, 1, 255, 256, .max]
        for (a, b) in zip(ints, ints.dropFirst()) { XCTAssertTrue(encoded(.int(a)).lexicographicallyPrecedes(encoded(.int(b))), "\(a) < \(b)") }
        let doubles: [Double] = [-.infinity, -1e300, -2.5, -Double.leastNonzeroMagnitude, 0, Double.leastNonzeroMagnitude, 1, 1e300, .infinity]
        for (a, b) in zip(doubles, doubles.dropFirst()) {
            XCTAssertTrue(encoded(.double(a)).lexicographicallyPrecedes(encoded(.double(b))), "\(a) < \(b)")
        }
        XCTAssertEqual(encoded(.double(-0.0)), encoded(.double(0)))
        XCTAssertTrue(encoded(.double(.infinity)).lexicographicallyPrecedes(encoded(.double(.nan))))
        XCTAssertTrue(encoded(.null).lexicographicallyPrecedes(encoded(.double(-.infinity))))
        XCTAssertTrue(encoded(.date(Date(timeIntervalSinceReferenceDate: -5))).lexicographicallyPrecedes(encoded(.date(Date(timeIntervalSinceReferenceDate: 3)))))
        let strings = ["", "\u{0}", "a", "a\u{0}", "a\u{0}b", "ab", "b", "e\u{301}", "é\u{0}", "éa", "z", "日本"].sorted()
        for (a, b) in zip(strings, strings.dropFirst()) where a < b {
            XCTAssertTrue(encoded(.string(a)).lexicographicallyPrecedes(encoded(.string(b))), "\(a.debugDescription) < \(b.debugDescription)")
        }
        XCTAssertEqual(encoded(.string("é")), encoded(.string("e\u{301}")))
        for value in [FieldValue.null, .int(-7), .double(.nan), .string("a\u{0}\u{0}b")] {
            let entry = try XCTUnwrap(OrderedIndex.entry(value, primaryKey: [1, 2, 3]))
            XCTAssertEqual(OrderedIndex.primaryKey(of: entry[...]), [1, 2, 3], "\(value)")
        }
        XCTAssertNil(OrderedValueKey.bytes(for: .bool(true)))
        XCTAssertNil(OrderedValueKey.bytes(for: .data(Data([1]))))
    }

    private static func idsAged10or11(below count: Int) -> Set<Int> {
        Set((0 ..< count).filter { (id: Int) -> Bool in id % 100 == 10 || id % 100 == 11 })
    }

    /// The engine store (closed by the caller), `Ranked.age`'s index table, a snapshot and
    /// the tree's root, which has branches.
    private func openAgeTree() throws -> (Store, UInt32, Snapshot, OrderedIndex.Root) {
        let store = try Store(directory: directory)
        let table = try ageIndexTable(store)
        let snapshot = store.snapshot()
        let root = try XCTUnwrap(OrderedIndex.Root(try XCTUnwrap(snapshot.get(table: table, key: OrderedIndex.rootKey))))
        XCTAssertGreaterThan(root.height, 1)
        return (store, table, snapshot, root)
    }

    /// A read-only realm answers `10 <= age < 12` without the tree (a scan), `count` objects.
    private func assertReadOnlyRangeScans(expecting count: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        var readOnly = configuration(types: [Ranked.self])
        readOnly.readOnly = true
        let realm = try Realm(configuration: readOnly)
        let ranged = realm.objects(Ranked.self).filter(#Predicate { $0.age >= 10 && $0.age < 12 })
        XCTAssertFalse(ranged.explain().contains("ordered index"), ranged.explain(), file: file, line: line)
        XCTAssertEqual(ranged.count, count, file: file, line: line)
    }

    /// The index table of `Ranked.age` in `store`.
    private func ageIndexTable(_ store: Store) throws -> UInt32 {
        let type = try XCTUnwrap(try SharedStore.loadSchema(store)?["Ranked"])
        return StoreLayout.indexTable(type.tableNumber, property: try XCTUnwrap(type.index(of: "age")))
    }

    private func removeTrees(_ directory: URL) throws {
        let store = try Store(directory: directory)
        let snapshot = store.snapshot()
        try store.write { transaction in
            for table in snapshot.tables where StoreLayout.decode(table: table)?.property != nil {
                for key in try snapshot.keys(table: table) where OrderedIndex.isTreeKey(key) { try transaction.delete(table: table, key: key) }
            }
        }
        try store.close()
    }

    private func fillForReopen(_ count: Int) throws {
        let realm = try Realm(configuration: configuration(types: [Ranked.self]))
        try realm.write {
            for i in 0 ..< count {
                let object = Ranked()
                object.id = i
                object.age = i % 100
                object.name = "n\(i)"
                try realm.add(object)
            }
        }
    }

    /// A store without trees (as every store written before ordered indexes is): a
    /// read-only open answers ranges without one; a writable open builds them.
    func testAStoreWithoutTreesIsAnsweredWithoutThemAndRebuiltByAWritableOpen() throws {
        try fillForReopen(2000)
        try removeTrees(directory)
        var readOnly = configuration(types: [Ranked.self])
        readOnly.readOnly = true
        do {
            let realm = try Realm(configuration: readOnly)
            let ranged = realm.objects(Ranked.self).filter(#Predicate { $0.age >= 10 && $0.age < 12 })
            XCTAssertFalse(ranged.explain().contains("ordered index"), ranged.explain())
            XCTAssertEqual(ranged.count, 40)
            XCTAssertNotNil(realm.checkIndexInvariants(), "no tree: the checker says so")
        }
        let realm = try Realm(configuration: configuration(types: [Ranked.self]))
        XCTAssertNil(realm.checkIndexInvariants())
        let ranged = realm.objects(Ranked.self).filter(#Predicate { $0.age >= 10 && $0.age < 12 })
        XCTAssertTrue(ranged.explain().contains("ordered index"), ranged.explain())
        XCTAssertEqual(ranged.count, 40)
        XCTAssertEqual(Set(ranged.map(\.id)), Self.idsAged10or11(below: 2000))
    }

    /// A damaged tree record (a node cut short, a root overwritten) is never served: the
    /// range is answered by a scan, the next commit drops the tree instead of failing, and
    /// the next writable open rebuilds it.
    func testADamagedTreeIsNeverServedDroppedByTheNextCommitAndRebuilt() throws {
        try fillForReopen(3000)
        do {
            let (store, table, snapshot, _) = try openAgeTree()
            // Every leaf cut short: whatever part of the tree a query reads, it meets damage.
            try store.write { transaction in
                for key in try snapshot.keys(table: table) where OrderedIndex.isTreeKey(key) && key != OrderedIndex.rootKey {
                    let bytes = try XCTUnwrap(snapshot.get(table: table, key: key))
                    if bytes.first == 0 { try transaction.put(table: table, key: key, value: Array(bytes.dropLast(3))) }
                }
            }
            try store.close()
        }
        let realm = try Realm(configuration: configuration(types: [Ranked.self]))
        // The writable open left the tree (its root reads): queries meet the damage and scan.
        let ranged = realm.objects(Ranked.self).filter(#Predicate { $0.age >= 10 && $0.age < 12 })
        XCTAssertFalse(ranged.explain().contains("ordered index"), ranged.explain())
        XCTAssertEqual(ranged.count, 60)
        XCTAssertEqual(Set(ranged.map(\.id)), Self.idsAged10or11(below: 3000))
        XCTAssertNotNil(realm.checkIndexInvariants())
        // A commit touching the tree drops it rather than failing.
        try realm.write { realm.object(ofType: Ranked.self, forPrimaryKey: 5)!.age = 11 }
        XCTAssertEqual(ranged.count, 61)
        let bound = try XCTUnwrap(realm.boundTypes.first { $0.className == "Ranked" })
        let table = bound.indexTable(try XCTUnwrap(bound.schema.index(of: "age")))
        XCTAssertNil(try realm.snapshot.get(table: table, key: OrderedIndex.rootKey), "the damaged tree's root is gone")
        XCTAssertFalse(ranged.explain().contains("ordered index"), ranged.explain())
    }

    /// The same, then reopened: the missing tree is rebuilt, and its leftovers removed.
    func testADroppedTreeIsRebuiltWithoutLeftovers() throws {
        try testADamagedTreeIsNeverServedDroppedByTheNextCommitAndRebuilt()
        let realm = try Realm(configuration: configuration(types: [Ranked.self]))
        XCTAssertNil(realm.checkIndexInvariants())
        let ranged = realm.objects(Ranked.self).filter(#Predicate { $0.age >= 10 && $0.age < 12 })
        XCTAssertTrue(ranged.explain().contains("ordered index"), ranged.explain())
        XCTAssertEqual(ranged.count, 61)
    }

    /// An import that meets one object twice (its first version inserted, then changed by
    /// the second) leaves each index holding the second version only: the hash postings
    /// kept the first value too (a defect older than the trees: an equality answered from
    /// the index alone listed the object under both values), and so did the tree.
    func testAnImportThatMeetsAnObjectTwiceIndexesItsLastVersionOnly() throws {
        try fillForReopen(100)
        do {
            let store = try Store(directory: directory)
            defer { try? store.close() }
            let importer = try XCTUnwrap(try StoreImporter(store: store))
            let json = #"[{"id": 500, "age": 1005, "name": "first"}, {"id": 500, "age": 1077, "name": "second"}, {"id": 3, "age": 1060}, {"id": 3, "age": 1061}]"#
            _ = try importer.importObjects(ofType: "Ranked", from: Data(json.utf8))
        }
        let realm = try Realm(configuration: configuration(types: [Ranked.self]))
        XCTAssertNil(realm.checkIndexInvariants())
        XCTAssertEqual(realm.objects(Ranked.self).filter(#Predicate { $0.age == 1005 }).map(\.id), [])
        XCTAssertEqual(realm.objects(Ranked.self).filter(#Predicate { $0.age == 1060 }).count, 0)
        XCTAssertEqual(realm.objects(Ranked.self).filter(#Predicate { $0.age >= 1000 }).map(\.id).sorted(), [3, 500])
        XCTAssertEqual(realm.objects(Ranked.self).filter(#Predicate { $0.age >= 1000 }).count, 2)
        XCTAssertEqual(realm.objects(Ranked.self).filter(#Predicate { $0.name >= "s" && $0.name < "t" }).map(\.id), [500])
    }

    /// Tree records that decode but lie (a node claiming more items than it has bytes for,
    /// counts that overflow) are damage: no trap, the range answered by a scan.
    func testATreeWhoseNodesLieIsDamageNotATrap() throws {
        try fillForReopen(3000)
        do {
            let (store, table, snapshot, root) = try openAgeTree()
            let top = try XCTUnwrap(snapshot.get(table: table, key: OrderedIndex.nodeKey(root.rootID)))
            // The root branch's first child count set to Int.max: its counts overflow.
            var lying = top
            withUnsafeBytes(of: UInt64(Int.max).littleEndian) { lying.replaceSubrange(13 ..< 21, with: $0) }
            try store.write { try $0.put(table: table, key: OrderedIndex.nodeKey(root.rootID), value: lying) }
            try store.close()
        }
        try assertReadOnlyRangeScans(expecting: 60)
        // A leaf claiming four billion items in a few bytes.
        do {
            let store = try Store(directory: directory)
            let table = try ageIndexTable(store)
            try store.write { transaction in
                // Root: format 1, node 9, height 1, next id 10, one entry.
                let root: [UInt8] = [1] + [9, 0, 0, 0, 0, 0, 0, 0] + [1] + [10, 0, 0, 0, 0, 0, 0, 0] + [1, 0, 0, 0, 0, 0, 0, 0]
                XCTAssertNotNil(OrderedIndex.Root(root))
                try transaction.put(table: table, key: OrderedIndex.rootKey, value: root)
                try transaction.put(table: table, key: OrderedIndex.nodeKey(9), value: [0, 0xFF, 0xFF, 0xFF, 0xFF])
            }
            try store.close()
        }
        try assertReadOnlyRangeScans(expecting: 60)
    }

    /// An object whose stored row fails its checksum, written over (or deleted): its old
    /// values cannot be read, so their entries cannot be removed — the commit drops the
    /// tree rather than leave a stale entry that an answer from the tree alone would list,
    /// and the next writable open rebuilds it.
    func testWritingOverAnUnreadableRowDropsTheTreeInsteadOfLeavingAStaleEntry() throws {
        var config = configuration(types: [Ranked.self])
        config.storeOptions.autoCompaction = .disabled
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                for i in 0 ..< 300 {
                    let object = Ranked()
                    object.id = i
                    object.age = 1000 + i
                    object.note = "row-\(i)-end"
                    try realm.add(object)
                }
            }
        }
        XCTAssertTrue(try flipFirstByte(of: "row-150-end"), "object 150's row")
        do {
            let realm = try Realm(configuration: config)
            XCTAssertNil(realm.object(ofType: Ranked.self, forPrimaryKey: 150), "the row fails its checksum")
            try realm.write {
                let object = Ranked()
                object.id = 150
                object.age = 5
                try realm.add(object, update: .all)
            }
            let old = realm.objects(Ranked.self).filter(#Predicate { $0.age >= 1150 && $0.age <= 1150 })
            XCTAssertEqual(old.count, 0, old.explain())
            XCTAssertEqual(old.map(\.id), [], old.explain())
            XCTAssertEqual(realm.objects(Ranked.self).filter("TRUEPREDICATE SORT(age DESC) LIMIT(3)").map(\.id), [299, 298, 297])
        }
        let realm = try Realm(configuration: config)
        // The rebuilt tree holds exactly the rows' values. (The hash postings keep the stale
        // key under 1150 — lookups re-check each candidate's row — so the whole checker would
        // report that first.)
        let bound = try XCTUnwrap(realm.boundTypes.first { $0.className == "Ranked" })
        let table = bound.indexTable(try XCTUnwrap(bound.schema.index(of: "age")))
        let expected = realm.objects(Ranked.self).compactMap { OrderedIndex.entry(.int(Int64($0.age)), primaryKey: PrimaryKeyValue.int(Int64($0.id)).keyBytes) }
            .sorted { $0.lexicographicallyPrecedes($1) }
        let treeKeys = Set(try realm.snapshot.keys(table: table).filter(OrderedIndex.isTreeKey))
        XCTAssertNil(OrderedIndex.verify(expected: expected, treeKeys: treeKeys) { try realm.snapshot.get(table: table, key: $0) })
        let ranged = realm.objects(Ranked.self).filter(#Predicate { $0.age >= 1149 && $0.age <= 1151 })
        XCTAssertTrue(ranged.explain().contains("ordered index"), ranged.explain())
        XCTAssertEqual(ranged.map(\.id), [149, 151])
    }

    final class LongKeyed: Object {
        @Persisted(primaryKey: true) var key: String = ""
        @Persisted(indexed: true) var rank: Int = 0
    }

    /// Entries end with the primary key, and a string key may be 64 KiB: entries larger than
    /// a node. A branch then still takes two children at least, so the tree narrows level by
    /// level (with one child a branch, the root never formed: levels grew without end).
    func testEntriesLargerThanANodeStillMakeATree() throws {
        let realm = try Realm(configuration: configuration(types: [LongKeyed.self]))
        try realm.write {
            for i in 0 ..< 40 {
                let object = LongKeyed()
                object.key = String(format: "%03d", i) + String(repeating: "k", count: 6000)
                object.rank = i % 7
                try realm.add(object)
            }
        }
        XCTAssertNil(realm.checkIndexInvariants())
        let ranked = realm.objects(LongKeyed.self).filter(#Predicate { $0.rank >= 5 })
        XCTAssertEqual(ranked.count, 10)
        XCTAssertEqual(realm.objects(LongKeyed.self).filter("TRUEPREDICATE SORT(rank DESC) LIMIT(3)").map { String($0.key.prefix(3)) },
                       ["006", "013", "020"])
        try realm.write { try realm.delete(realm.objects(LongKeyed.self).filter(#Predicate { $0.rank < 6 })) }
        XCTAssertNil(realm.checkIndexInvariants())
        XCTAssertEqual(realm.objects(LongKeyed.self).filter(#Predicate { $0.rank >= 5 }).count, 5)
    }
}
