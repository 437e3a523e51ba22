// Table projections persisted beside the store (docs/ARCHITECTURE.md, "Projections"): the
// last release of a store writes each table's newest projection; the next open's first
// column scan reads it instead of scanning every row, and answers exactly as a scan does.
// A file for another state (a later commit, a compaction), a damaged or cut file, or a file
// whose structure does not fit is never read into an answer; a projection that met damage
// is not persisted, so the damage is read and reported again. Reproducible: STRATA_SEED.

import XCTest
import StrataTestSupport
@testable import Strata
@testable import StrataStorage

final class PersistedProjectionTests: RealmTestCase {
    private let objectCount = 5000
    private let lastNames = ["ana", "Ana", "éclair", "e\u{301}clair", "zed", ""]

    /// `objectCount` users with seeded values (NaN, -0.0, nil dates and repeated strings
    /// included), then 300 deleted, so the projection the close persists has dead ordinals.
    private func fill(_ realm: Realm, seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        try realm.write {
            for id in 0 ..< objectCount {
                let user = newUser("\(id)", rank: Int.random(in: -50 ... 50, using: &generator),
                                   city: "c\(id % 7)", lastName: lastNames.randomElement(using: &generator)!)
                user.score = [Double.nan, 0, -0.0, 1.5, -2, 7, Double(id)][Int.random(in: 0 ..< 7, using: &generator)]
                user.joined = Bool.random(using: &generator) ? Date(timeIntervalSince1970: Double(Int.random(in: 0 ..< 9, using: &generator))) : nil
                user.active = Bool.random(using: &generator)
                try realm.add(user)
            }
        }
        _ = realm.objects(User.self).filter(#Predicate { $0.rank > 0 && $0.lastName < "b" }).count   // projects rank, lastName
        try realm.write {
            for id in stride(from: 0, to: objectCount, by: objectCount / 300) {
                try realm.delete(XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "\(id)")))
            }
        }
    }

    private let date = Date(timeIntervalSince1970: 4)
    private var predicates: [Predicate<User>] {
        let date = date
        return [
            #Predicate { $0.rank > 10 },
            #Predicate { $0.rank <= -20 || $0.lastName == "zed" },
            #Predicate { $0.lastName < "b" && $0.score >= 0 },
            #Predicate { $0.score != $0.score },
            #Predicate { $0.joined == nil || $0.joined! > date },
            #Predicate { $0.active && $0.rank < 0 },
        ]
    }

    /// Each predicate's answer (sorted ids) and its answer sorted by score then rank.
    private func answers(_ realm: Realm) -> [[String]] {
        predicates.flatMap { predicate -> [[String]] in
            let results = realm.objects(User.self).filter(predicate)
            return [results.map(\.objId).sorted(),
                    results.sorted(by: [SortDescriptor(\User.rank), SortDescriptor(\User.objId)]).map(\.objId)]
        }
    }

    /// The same answers from Foundation's evaluation of each predicate on every object.
    private func expected(_ realm: Realm) -> [[String]] {
        let everyone = Array(realm.objects(User.self))
        return predicates.flatMap { predicate -> [[String]] in
            let matches = everyone.filter { (try? predicate.evaluate($0)) == true }
            return [matches.map(\.objId).sorted(),
                    matches.sorted { ($0.rank, $0.objId) < ($1.rank, $1.objId) }.map(\.objId)]
        }
    }

    private var projectionFile: URL {
        get throws {
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".derived") }
            XCTAssertEqual(files.count, 1, "one table projected: \(files)")
            return directory.appendingPathComponent(try XCTUnwrap(files.first))
        }
    }

    func testAProjectionPersistedAtCloseIsReadByTheNextOpenAndAnswersAsFoundation() throws {
        let seed = TestEnvironment.seed(default: 27)
        var expectedAnswers: [[String]] = []
        do {
            let realm = try openRealm()
            try fill(realm, seed: seed)
            expectedAnswers = expected(realm)
            XCTAssertEqual(answers(realm), expectedAnswers, "before the close")
            realm.invalidate()
        }
        _ = try projectionFile
        let realm = try openRealm()
        defer { realm.invalidate() }
        XCTAssertEqual(answers(realm), expectedAnswers, "read from the file")
        XCTAssertTrue(realm.objects(User.self).filter(predicates[0]).explain().contains("column scan"))
        XCTAssertEqual(realm.shared.projectionReads.withLock { $0 }, 1)
        XCTAssertEqual(realm.shared.projectionBuilds.withLock { $0 }, 0, "no scan of every row")
        XCTAssertEqual(answers(realm), expected(realm))

        // Commits advance the projection read from the file like any other.
        var generator = SplitMix64(seed: seed &+ 1)
        for _ in 0 ..< 3 {
            try realm.write {
                for _ in 0 ..< 20 {
                    let id = "\(Int.random(in: 0 ..< objectCount + 100, using: &generator))"
                    if let user = realm.object(ofType: User.self, forPrimaryKey: id) {
                        if Bool.random(using: &generator) { user.rank = Int.random(in: -50 ... 50, using: &generator) } else { try realm.delete(user) }
                    } else {
                        try realm.add(newUser(id, rank: 11, city: "c0", lastName: "zed"))
                    }
                }
            }
            XCTAssertEqual(answers(realm), expected(realm), "after a commit")
        }
        XCTAssertEqual(realm.shared.projectionBuilds.withLock { $0 }, 0, "advanced, not rebuilt")
    }

    /// Commits no query saw since the projection was made: a few changes are applied at the
    /// close, so the file is for the last commit; a change of every object is not (the next
    /// open scans, as bringing the projection forward would cost as much).
    func testAProjectionBehindTheLastCommitIsBroughtForwardAtCloseWhenFewObjectsChanged() throws {
        do {
            let realm = try openRealm()
            try fill(realm, seed: 21)
            _ = answers(realm)
            for id in 1 ... 3 {
                try realm.write { try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "\(id)")).rank = 2_000 + id }
            }
            realm.invalidate()
        }
        do {
            let realm = try openRealm()
            XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.rank > 1_000 }).map(\.objId).sorted(), ["1", "2", "3"])
            XCTAssertEqual(answers(realm), expected(realm))
            XCTAssertEqual(realm.shared.projectionReads.withLock { $0 }, 1, "the close brought it to the last commit")
            XCTAssertEqual(realm.shared.projectionBuilds.withLock { $0 }, 0)
            try realm.write { for user in realm.objects(User.self) { user.rank = -user.rank } }
            realm.invalidate()
        }
        let realm = try openRealm()
        defer { realm.invalidate() }
        XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.rank < -1_000 }).count, 3)
        XCTAssertEqual(answers(realm), expected(realm))
        XCTAssertEqual(realm.shared.projectionReads.withLock { $0 }, 0, "every object changed: not brought forward")
    }

    func testAFileForAnotherStateIsNotRead() throws {
        do {
            let realm = try openRealm()
            try fill(realm, seed: 5)
            realm.invalidate()
        }
        // A commit no query saw: the file is for the state before it.
        do {
            let realm = try openRealm()
            try realm.write { try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "1")).rank = 1_000 }
            realm.invalidate()
        }
        /// Opens the realm again: the changed object found, every answer Foundation's, the
        /// projection read from its file `reads` times; then `then`, and the close.
        func reopen(reads: Int, _ message: String, then: (Realm) throws -> Void = { _ in }) throws {
            let realm = try openRealm()
            defer { realm.invalidate() }
            XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.rank > 500 }).map(\.objId), ["1"], message)
            XCTAssertEqual(answers(realm), expected(realm), message)
            XCTAssertEqual(realm.shared.projectionReads.withLock { $0 }, reads, message)
            try then(realm)
        }
        try reopen(reads: 0, "the file is for an older commit")
        // `compact()` seals the active segment first: a roll, after which the file is stale.
        try reopen(reads: 1, "written by the last close") { _ = try $0.store.compact() }
        // The background compaction moves sealed records and leaves the active segment: the
        // file the last close wrote still answers, exactly.
        try reopen(reads: 0, "the file is for the active segment before the roll") { _ = try $0.store.runCompaction(manual: false) }
        try reopen(reads: 1, "read after a compaction")
    }

    func testADamagedOrCutFileIsRefusedAndTheTableScanned() throws {
        for damage in ["flip", "cut"] {
            do {
                let realm = try openRealm()
                if realm.isEmpty { try fill(realm, seed: 9) }
                _ = answers(realm)   // the projection at the last commit, which the close writes
                realm.invalidate()
            }
            let file = try projectionFile
            var bytes = try Data(contentsOf: file)
            if damage == "flip" { bytes[bytes.count / 3] ^= 0x01 } else { bytes.removeLast(bytes.count / 2) }
            try bytes.write(to: file)
            let realm = try openRealm()
            XCTAssertEqual(answers(realm), expected(realm), damage)
            XCTAssertEqual(realm.shared.projectionReads.withLock { $0 }, 0, damage)
            XCTAssertEqual(realm.shared.projectionBuilds.withLock { $0 }, 1, damage)
            realm.invalidate()
        }
    }

    /// A file whose checksum holds but whose structure does not (a bug, or a hand-made
    /// file): every cut and thousands of changed bytes are refused or read without a trap.
    func testAProjectionFileThatDoesNotFitIsRefusedWithoutATrap() throws {
        let realm = try openRealm()
        defer { realm.invalidate() }
        try fill(realm, seed: 13)
        _ = answers(realm)
        let projection = try XCTUnwrap(realm.shared.keptProjection(table: StoreLayout.objectTable(try XCTUnwrap(realm.schema["User"]).tableNumber)))
        let bytes = try XCTUnwrap(projection.fileBytes())
        let snapshot = realm.store.snapshot()
        let whole = try XCTUnwrap(TableProjection.read(bytes[...], table: projection.table, snapshot: snapshot))
        XCTAssertEqual(whole.count, projection.count)
        XCTAssertNil(TableProjection.read(bytes[...], table: projection.table + 1, snapshot: snapshot), "another table's file")
        for cut in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 500)) {
            XCTAssertNil(TableProjection.read(bytes.prefix(cut), table: projection.table, snapshot: snapshot), "cut at \(cut)")
        }
        var generator = SplitMix64(seed: TestEnvironment.seed(default: 31))
        var refused = 0
        for _ in 0 ..< 800 * TestEnvironment.fuzzScale {
            var changed = bytes
            for _ in 0 ..< Int.random(in: 1 ... 4, using: &generator) {
                // Mostly the header and the first arrays' ends, where lengths and counts lie.
                let at = Bool.random(using: &generator) ? Int.random(in: 0 ..< min(64, changed.count), using: &generator)
                                                        : Int.random(in: 0 ..< changed.count, using: &generator)
                changed[at] = UInt8.random(in: 0 ... 255, using: &generator)
            }
            guard let read = TableProjection.read(changed[...], table: projection.table, snapshot: snapshot) else {
                refused += 1
                continue
            }
            // Whatever reads must be usable: every column evaluated, every key read.
            for property in 0 ..< 16 { _ = read.projectedColumn(property).map { column in (0 ..< read.count).map { column.value(at: $0) } } }
            _ = (0 ..< read.count).map { read.key($0) }
        }
        XCTAssertGreaterThan(refused, 0)
    }

    func testAProjectionThatMetADamagedRowIsNotPersisted() throws {
        do {
            let realm = try openRealm()
            try fill(realm, seed: 17)
            let table = StoreLayout.objectTable(try XCTUnwrap(realm.schema["User"]).tableNumber)
            try realm.store.write { try $0.put(table: table, key: PrimaryKeyValue.string("7").keyBytes, value: [0xFF, 0x00, 0x13, 0x37]) }
            realm.refresh()
            XCTAssertFalse(realm.objects(User.self).filter(#Predicate { $0.rank > 10 }).map(\.objId).contains("7"))
            XCTAssertFalse(realm.readErrors.isEmpty)
            realm.invalidate()
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".derived") }
        XCTAssertEqual(files, [], "nothing persisted from a projection that met damage")
        let realm = try openRealm()
        defer { realm.invalidate() }
        XCTAssertFalse(realm.objects(User.self).filter(#Predicate { $0.rank > 10 }).map(\.objId).contains("7"))
        XCTAssertFalse(realm.readErrors.isEmpty, "the damage is read, and reported, again")
    }

    func testAnEncryptedRealmsProjectionIsSealedAndReadBack() throws {
        var config = configuration()
        config.encryptionKey = Data((0 ..< 64).map { UInt8($0 &* 3) })
        let markedOne = (0 ..< objectCount).filter { $0 % 3 == 1 }.count
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                for id in 0 ..< objectCount { try realm.add(newUser("\(id)", rank: id, city: "c", lastName: "plaintext-marker-\(id % 3)")) }
            }
            XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.lastName == "plaintext-marker-1" }).count, markedOne)
            realm.invalidate()
        }
        let bytes = try Data(contentsOf: try projectionFile)
        XCTAssertNil(bytes.range(of: Data("plaintext-marker".utf8)), "the file holds no value in clear")
        let realm = try Realm(configuration: config)
        defer { realm.invalidate() }
        XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.lastName == "plaintext-marker-1" }).count, markedOne)
        XCTAssertEqual(realm.shared.projectionReads.withLock { $0 }, 1)
    }
}
