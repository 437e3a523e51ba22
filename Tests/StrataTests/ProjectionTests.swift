// The column path across commits: a table projection advanced by each commit's change set
// (deleted ordinals dead, inserted ones appended, changed rows re-read) answers every
// translated query exactly as Foundation's own evaluation of the predicate on the objects,
// after random inserts, updates, deletes and re-inserts. Reproducible: STRATA_SEED.

import XCTest
import StrataTestSupport
@testable import Strata

final class ProjectionTests: RealmTestCase {
    func testAnAdvancedProjectionAnswersAsFoundationAfterRandomCommits() throws {
        let realm = try openRealm()
        var generator = SplitMix64(seed: TestEnvironment.seed(default: 24))
        let cities = ["ana", "Ana", "éclair", "e\u{301}clair", "zed", ""]
        func randomUser(_ id: Int) -> User {
            let user = newUser("\(id)", rank: Int.random(in: -5 ... 5, using: &generator),
                               city: cities.randomElement(using: &generator)!, lastName: cities.randomElement(using: &generator)!)
            user.score = [Double.nan, 0, -0.0, 1.5, -2, 7][Int.random(in: 0 ..< 6, using: &generator)]
            user.joined = Bool.random(using: &generator) ? Date(timeIntervalSince1970: Double(Int.random(in: 0 ..< 4, using: &generator))) : nil
            return user
        }
        try realm.write { for id in 0 ..< 200 { try realm.add(randomUser(id)) } }
        let date = Date(timeIntervalSince1970: 2)
        let predicates: [Predicate<User>] = [
            #Predicate { $0.rank > 0 },
            #Predicate { $0.rank <= -2 || $0.rank == 3 },
            #Predicate { $0.lastName < "b" && $0.score >= 0 },
            #Predicate { $0.score != $0.score },
            #Predicate { $0.joined == nil || $0.joined == date },
            #Predicate { !($0.lastName == "éclair") },
        ]
        let sorts: [[SortDescriptor<User>]] = [[SortDescriptor(\User.score, order: .reverse)], [SortDescriptor(\User.lastName), SortDescriptor(\User.rank)]]
        let store = realm.shared
        let buildsBefore = store.projectionBuilds.withLock { $0 }
        var nextID = 200
        for round in 0 ..< 40 {
            try realm.write {
                for _ in 0 ..< Int.random(in: 1 ... 6, using: &generator) {
                    let all = realm.objects(User.self)
                    switch Int.random(in: 0 ..< 4, using: &generator) {
                    case 0:
                        try realm.add(randomUser(nextID))
                        nextID += 1
                    case 1 where all.count > 0:
                        try realm.delete(all[Int.random(in: 0 ..< all.count, using: &generator)])
                    case 2:  // re-insert an id that may have been deleted
                        try realm.add(randomUser(Int.random(in: 0 ..< nextID, using: &generator)), update: .all)
                    default:
                        if all.count > 0 {
                            let user = all[Int.random(in: 0 ..< all.count, using: &generator)]
                            user.rank = Int.random(in: -5 ... 5, using: &generator)
                            user.lastName = cities.randomElement(using: &generator)!
                            user.score = [Double.nan, 1.5, -0.0][Int.random(in: 0 ..< 3, using: &generator)]
                        }
                    }
                }
            }
            let everyone = Array(realm.objects(User.self))
            for (number, predicate) in predicates.enumerated() {
                let results = realm.objects(User.self).filter(predicate)
                XCTAssertTrue(results.explain().contains("column scan"), results.explain())
                let expected = Set(everyone.filter { (try? predicate.evaluate($0)) == true }.map(\.objId))
                XCTAssertEqual(realm.objects(User.self).filter(predicate).count, expected.count, "round \(round), predicate \(number)")
                XCTAssertEqual(Set(results.map(\.objId)), expected, "round \(round), predicate \(number)")
                for sort in sorts {
                    // The same objects, and no neighbours Foundation orders the other way (NaN
                    // is unordered, so an exact order is not defined; neighbours are checked).
                    let sorted = Array(results.sorted(by: sort))
                    XCTAssertEqual(Set(sorted.map(\.objId)), expected, "round \(round), predicate \(number), sort")
                    assertNoNeighboursReversed(sorted, by: sort, "round \(round), predicate \(number)")
                }
            }
        }
        // Advanced, not rebuilt, after each commit (a rebuild when a quarter of the ordinals died).
        let builds = store.projectionBuilds.withLock { $0 } - buildsBefore
        XCTAssertLessThan(builds, 10, "projections built from a scan: \(builds) for 40 commits")
    }
}

/// A string column advanced by a commit keeps one code per value: a re-read row whose
/// string did not change keeps its code, and a value the (small) dictionary holds reuses
/// its code. Before, every re-read row took a new entry: after a few hundred commits that
/// changed other properties, a 100-value column looked unique to the planner and one value
/// had several codes.
final class StringColumnCodeTests: XCTestCase {
    func testReReadAndKnownStringsKeepTheirCodes() {
        var dictionary = StringDictionary()
        for value in ["a", "b"] { dictionary.append(value) }
        var column = ProjectedColumn.string(codes: [0, 1, 0, -1], dictionary: dictionary)
        column.set([(0, .string("a")), (1, .string("a")), (2, .string("c")), (3, .string("e\u{301}"))])
        column.set([(3, .string("é")), (0, .null)])
        guard case .string(let codes, let after) = column else { return XCTFail("\(column)") }
        XCTAssertEqual(codes, [-1, 0, 2, 3], "a kept, b's row took a's code, c and é appended once")
        XCTAssertEqual(after.count, 4)
        XCTAssertEqual((0 ..< 4).map { column.value(at: $0) }, [.null, .string("a"), .string("c"), .string("e\u{301}")])
    }
}

/// A scan builds a string column's codes by the values' UTF-8 bytes (`DictionaryCodes`):
/// equal bytes share a code, each spelling reads back as itself, a crowded column keeps one
/// code per value however long, and a column unique in its first 16,384 rows stops looking
/// values up (a value seen again then takes a new code, and still reads back right).
final class DictionaryCodesTests: XCTestCase {
    private func built(_ values: [FieldValue]) -> (codes: [Int32], dictionary: StringDictionary, column: ProjectedColumn)? {
        var builder = ProjectedColumn.Builder(capacity: values.count)
        for value in values { builder.append(value) }
        let column = builder.build()
        guard case .string(let codes, let dictionary) = column else { return nil }
        return (codes, dictionary, column)
    }

    func testEqualBytesShareACodeAndEachSpellingReadsBack() throws {
        let values: [FieldValue] = [.string("caf\u{E9}"), .string("cafe\u{301}"), .null, .string("caf\u{E9}"), .string(""), .string("")]
        let (codes, dictionary, column) = try XCTUnwrap(built(values))
        XCTAssertEqual(codes, [0, 1, -1, 0, 2, 2])
        XCTAssertEqual(dictionary.count, 3, "two spellings of one value: two entries")
        XCTAssertEqual(values.indices.map { column.value(at: $0) }, values)
        XCTAssertEqual(Array(dictionary[1].unicodeScalars), Array("cafe\u{301}".unicodeScalars))
    }

    func testACrowdedColumnKeepsOneCodePerValueAndAUniqueOneAppends() throws {
        // 50,000 rows of 37 values (names longer than eight bytes: the hash's tail path too).
        let crowded = (0 ..< 50_000).map { FieldValue.string("city number \($0 % 37)") }
        let (crowdedCodes, crowdedDictionary, crowdedColumn) = try XCTUnwrap(built(crowded))
        XCTAssertEqual(crowdedDictionary.count, 37)
        XCTAssertEqual(Set(crowdedCodes).count, 37)
        XCTAssertEqual(crowdedColumn.value(at: 49_999), crowded[49_999])

        // Unique for 20,000 rows, then the first 100 values again.
        let unique = (0 ..< 20_000).map { FieldValue.string("name\($0)") } + (0 ..< 100).map { FieldValue.string("name\($0)") }
        let (uniqueCodes, uniqueDictionary, uniqueColumn) = try XCTUnwrap(built(unique))
        XCTAssertEqual(Array(uniqueCodes.prefix(16_384)), (0 ..< 16_384).map(Int32.init), "looked up until judged unique")
        XCTAssertEqual(uniqueDictionary.count, unique.count, "appended past the judgement, repeats included")
        XCTAssertEqual(unique.indices.map { uniqueColumn.value(at: $0) }, unique)
    }
}
