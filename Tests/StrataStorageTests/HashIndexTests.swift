// The persistent hash index against a Dictionary model: random updates and removals of
// short (inline) and long (boxed) keys, old copies that must not change, page growth and
// splits, and the structure's invariants after every phase.

import XCTest
import StrataTestSupport
@testable import StrataStorage

final class HashIndexTests: XCTestCase {
    private func makeKey(_ n: Int) -> IndexKey {
        n % 4 == 0 ? IndexKey(Array("long-key-spilling-into-a-box-\(n)".utf8)) : IndexKey(Array("k\(n)".utf8))
    }

    private func location(_ n: Int, _ version: Int) -> Location {
        Location(segment: UInt32(version), offset: UInt32(n), size: UInt32(n &+ version))
    }

    func testRandomOperationsAndFrozenCopies() throws {
        var rng = SplitMix64(seed: baseSeed &+ 11)
        var index = HashIndex(seed: rng.next())
        var model: [IndexKey: Location] = [:]
        var copies: [(HashIndex, [IndexKey: Location])] = []
        for step in 0 ..< 40_000 * TestEnvironment.fuzzScale {
            let n = Int(rng.next() % 3000)
            let key = makeKey(n)
            if rng.next() % 4 == 0 {
                XCTAssertEqual(index.remove(key), model.removeValue(forKey: key), "remove at step \(step)")
            } else {
                let loc = location(n, step)
                XCTAssertEqual(index.update(key, to: loc), model.updateValue(loc, forKey: key), "update at step \(step)")
            }
            if step % 997 == 0 {
                copies.append((index, model))
                if copies.count > 5 { copies.removeFirst() }
            }
            if step % 5000 == 0 { XCTAssertNil(index.checkInvariants()) }
        }
        XCTAssertNil(index.checkInvariants())
        XCTAssertEqual(index.count, model.count)
        for (key, loc) in model { XCTAssertEqual(index.lookup(key), loc) }
        for n in 0 ..< 3000 where model[makeKey(n)] == nil { XCTAssertNil(index.lookup(makeKey(n))) }
        for (copy, expected) in copies {
            XCTAssertNil(copy.checkInvariants())
            XCTAssertEqual(copy.count, expected.count)
            var seen: [IndexKey: Location] = [:]
            try copy.forEach { seen[$0] = $1 }
            XCTAssertEqual(seen, expected, "a copy changed after later writes")
        }
    }

    func testPagesSplitAndStayCorrect() {
        // Enough keys that pages under the root fill up and split into branches.
        var index = HashIndex(seed: baseSeed)
        let count = 300_000
        for n in 0 ..< count { index.update(makeKey(n), to: location(n, 1)) }
        let snapshot = index
        XCTAssertNil(index.checkInvariants())
        for n in stride(from: 0, to: count, by: 2) { XCTAssertEqual(index.remove(makeKey(n)), location(n, 1)) }
        for n in stride(from: 1, to: count, by: 4) { index.update(makeKey(n), to: location(n, 2)) }
        XCTAssertNil(index.checkInvariants())
        XCTAssertEqual(index.count, count / 2)
        XCTAssertEqual(snapshot.count, count)
        for n in stride(from: 0, to: count, by: 7) {
            XCTAssertEqual(snapshot.lookup(makeKey(n)), location(n, 1))
            let expected: Location? = n % 2 == 0 ? nil : (n % 4 == 1 ? location(n, 2) : location(n, 1))
            XCTAssertEqual(index.lookup(makeKey(n)), expected)
        }
        let perKey = Double(index.memoryBytes) / Double(index.count)
        XCTAssertLessThan(perKey, 150, "memory per key (with long keys) stays bounded")
    }

    /// The index an open builds whole (IndexBuilder) is the one inserting the same entries in
    /// replay order gives: same keys at the same locations, deletes applied, the structure's
    /// invariants kept (pages at their final size, branches where pages would have split),
    /// and each segment's live bytes those of the surviving records. Sizes from a few keys
    /// to enough for branches below the root's children.
    func testTheIndexBuiltWholeAtOpenMatchesOneBuiltByInsertions() throws {
        var rng = SplitMix64(seed: baseSeed &+ 12)
        // 450k keys in one table: ~1,200 live per root child, more than a page holds.
        for keys in [1, 40, 5_000, 450_000] {
            let tables = UInt64(keys > 100_000 ? 1 : 3)
            let seed = rng.next()
            var builder = IndexBuilder(seed: seed)
            var incremental: [UInt32: HashIndex] = [:]
            for step in 0 ..< keys * 2 {
                let n = Int(rng.next() % UInt64(keys)), table = UInt32(rng.next() % tables)
                let delete = rng.next() % 5 == 0
                let loc = location(n, step % 7 + 1)
                let kind: RecordKind = delete ? .delete : .put
                makeKey(n).withBytes { bytes in
                    builder.add(ScannedEntry(kind: kind, table: table, key: bytes, location: loc, sequence: UInt64(step)))
                }
                if delete { incremental[table]?.remove(makeKey(n)) } else { incremental[table, default: HashIndex(seed: seed)].update(makeKey(n), to: loc) }
            }
            let built = builder.build()
            var expectedLive: [UInt32: Int] = [:]
            for table in UInt32(0) ..< 3 {
                var expected: [IndexKey: Location] = [:], got: [IndexKey: Location] = [:]
                try incremental[table]?.forEach { expected[$0] = $1 }
                try built.tables[table]?.forEach { got[$0] = $1 }
                XCTAssertEqual(got, expected, "table \(table), \(keys) keys")
                XCTAssertEqual(built.tables[table]?.count ?? 0, expected.count)
                XCTAssertNil(built.tables[table]?.checkInvariants(), "table \(table), \(keys) keys")
                for location in expected.values { expectedLive[location.segment, default: 0] += Int(location.size) }
                // The built index takes later writes like any other.
                var index = built.tables[table] ?? HashIndex(seed: seed)
                for n in 0 ..< min(keys, 500) { index.update(makeKey(n), to: location(n, 99)) }
                XCTAssertNil(index.checkInvariants())
            }
            XCTAssertEqual(built.liveBytes.filter { $0.value != 0 }, expectedLive.filter { $0.value != 0 }, "\(keys) keys")
        }
    }
}
