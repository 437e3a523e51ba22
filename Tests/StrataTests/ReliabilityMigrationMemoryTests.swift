// Reliability #13: a migration streams its objects in bounded batches instead of holding
// every old and new object at once, and stays one transaction (a failed one leaves the
// store as it was: MigrationTests). Measured here: the peak resident memory a migration of
// 200,000 small objects adds (read from /proc/self/status VmHWM after resetting it).

import XCTest
@testable import Strata

enum MemoryV1 {
    final class MemItem: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var name: String = ""
        @Persisted(indexed: true) var group: Int = 0
        @Persisted var parent: MemItem?
    }
}

enum MemoryV2 {
    final class MemItem: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var name: String = ""
        @Persisted(indexed: true) var group: Int = 0
        @Persisted var parent: MemItem?
        @Persisted var rank: Int = 0
    }
}


enum StreamV1 {
    final class SAuthor: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var name: String = ""
    }
    final class SBook: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var title: String = ""
        @Persisted var author: SAuthor?
        @Persisted var coauthors: List<SAuthor>
    }
    final class SDraft: Object {
        @Persisted(primaryKey: true) var id: Int = 0
    }
}

enum StreamV2 {
    /// The primary key moves from `id` to `code`: every author gets a new key.
    final class SAuthor: Object {
        @Persisted(primaryKey: true) var code: String = ""
        @Persisted var id: Int = 0
        @Persisted var name: String = ""
    }
    final class SBook: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var title: String = ""
        @Persisted var author: SAuthor?
        @Persisted var coauthors: List<SAuthor>
        @Persisted(indexed: true) var score: Int = 0
    }
    final class SDraft: Object {
        @Persisted(primaryKey: true) var id: Int = 0
    }
    /// New, without a primary key: hidden ids.
    final class SNote: Object {
        @Persisted var text: String = ""
        @Persisted var book: SBook?
    }
}

final class ReliabilityMigrationMemoryTests: RealmTestCase {
    static let count = 200_000

    /// Resident set size now, and the peak since the last reset, in bytes (nil off Linux).
    static func residentMemory() -> (current: Int, peak: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return line.split(separator: " ").compactMap { Int($0) }.first.map { $0 * 1024 }
        }
        guard let current = field("VmRSS"), let peak = field("VmHWM") else { return nil }
        return (current, peak)
    }

    /// Resets VmHWM to the current RSS (Linux 4.0+); false if the kernel refuses.
    static func resetPeak() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        do { try handle.write(contentsOf: Data("5".utf8)) } catch { return false }
        return true
    }

    private func seed() throws {
        let realm = try Realm(configuration: configuration(types: [MemoryV1.MemItem.self], version: 1))
        let batch = 20_000
        for start in stride(from: 0, to: Self.count, by: batch) {
            try realm.write {
                for id in start ..< start + batch {
                    let item = MemoryV1.MemItem()
                    item.id = id
                    item.name = "item \(id)"
                    item.group = id % 100
                    try realm.add(item)
                }
            }
        }
        // A few links, so the rewrite relinks.
        try realm.write {
            for id in 1 ..< 100 {
                realm.object(ofType: MemoryV1.MemItem.self, forPrimaryKey: id)!.parent =
                    realm.object(ofType: MemoryV1.MemItem.self, forPrimaryKey: id - 1)
            }
        }
    }

    func testMigrationOf200kObjectsRunsInBoundedMemory() throws {
        try seed()
        var config = configuration(types: [MemoryV2.MemItem.self], version: 2)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "MemItem") { old, new in
                new!["rank"] = (old!["id"] as! Int) * 2
            }
        }
        let canMeasure = Self.resetPeak()
        let before = Self.residentMemory()
        let started = Date()
        var realm: Realm? = try Realm(configuration: config)
        let elapsed = Date().timeIntervalSince(started)
        let after = Self.residentMemory()
        let added = canMeasure ? (after?.peak ?? 0) - (before?.current ?? 0) : nil
        print("migration of \(Self.count) objects: \(String(format: "%.1f", elapsed)) s, peak RSS added \(added.map { "\($0 >> 20) MiB" } ?? "unmeasured")"
              + (after.map { ", RSS after \(($0.current - (before?.current ?? 0)) >> 20) MiB above before" } ?? ""))

        let objects = realm!.objects(MemoryV2.MemItem.self)
        XCTAssertEqual(objects.count, Self.count)
        let item = try XCTUnwrap(realm!.object(ofType: MemoryV2.MemItem.self, forPrimaryKey: 77_777))
        XCTAssertEqual(item.rank, 155_554)
        XCTAssertEqual(item.name, "item 77777")
        XCTAssertEqual(realm!.object(ofType: MemoryV2.MemItem.self, forPrimaryKey: 50)?.parent?.id, 49)
        XCTAssertEqual(objects.filter(#Predicate { $0.group == 42 }).count, Self.count / 100, "the index is rewritten")
        realm = nil

        if let added {
            // The store's own index (every key, in memory) and mapped segment pages the
            // migration touches count here too; the objects themselves must not.
            XCTAssertLessThan(added, 96 << 20, "a migration of \(Self.count) small objects added \(added >> 20) MiB of peak RSS")
        }
    }

    // MARK: Streaming semantics, over several spilled batches

    static let streamCount = 3 * Migration.spillBatch / 2

    private func seedStream() throws {
        let realm = try Realm(configuration: configuration(types: [StreamV1.SAuthor.self, StreamV1.SBook.self, StreamV1.SDraft.self], version: 1))
        try realm.write {
            for id in 1 ... Self.streamCount {
                let author = StreamV1.SAuthor()
                author.id = id
                author.name = "author \(id)"
                try realm.add(author)
                let draft = StreamV1.SDraft()
                draft.id = id
                try realm.add(draft)
            }
            for id in 1 ... Self.streamCount {
                let book = StreamV1.SBook()
                book.id = id
                book.title = "book \(id)"
                book.author = realm.object(ofType: StreamV1.SAuthor.self, forPrimaryKey: id)
                book.coauthors.append(realm.object(ofType: StreamV1.SAuthor.self, forPrimaryKey: id)!)
                book.coauthors.append(realm.object(ofType: StreamV1.SAuthor.self, forPrimaryKey: 10)!)
                try realm.add(book)
            }
        }
    }

    private var scratchExists: Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent(Migration.scratchName).path)
    }

    func testStreamedMigrationKeepsEveryOperationsMeaningAcrossBatches() throws {
        try seedStream()
        let count = Self.streamCount
        var config = configuration(types: [StreamV2.SAuthor.self, StreamV2.SBook.self, StreamV2.SDraft.self, StreamV2.SNote.self], version: 2)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "SAuthor") { old, new in
                let id = old!["id"] as! Int
                new!["code"] = "A\(id)"
                if id % 10 == 0 { migration.delete(new!) }
            }
            var kept: [MigrationObject] = []
            var sawSpilledAuthors = 0
            migration.enumerateObjects(ofType: "SBook") { old, new in
                let id = old!["id"] as! Int
                new!["score"] = id * 3
                // The author was changed (and spilled) above: read back as changed.
                if let author = new!["author"] as? MigrationObject, author["code"] as? String == "A\(id)" { sawSpilledAuthors += 1 }
                let note = migration.create("SNote", value: ["text": "note \(id)", "book": new!])
                if id % 1000 == 0 { kept.append(note) }
            }
            XCTAssertEqual(sawSpilledAuthors, count, "links read the changed authors back (a deleted one too, as before)")
            // Objects held across spills stay the ones the migration writes.
            for note in kept { note["text"] = "late \(note["text"] as! String)" }
            // Drafts: some changed and spilled, then all dropped; one created afterwards stays.
            migration.enumerateObjects(ofType: "SDraft") { _, new in new!["id"] = (new!["id"] as! Int) + 1_000_000 }
            XCTAssertTrue(migration.deleteData(forType: "SDraft"))
            var remaining = 0
            migration.enumerateObjects(ofType: "SDraft") { _, _ in remaining += 1 }
            XCTAssertEqual(remaining, 0)
            migration.create("SDraft", value: ["id": 1])
        }
        let realm = try Realm(configuration: config)
        XCTAssertFalse(scratchExists, "the scratch store is removed")
        XCTAssertEqual(realm.objects(StreamV2.SAuthor.self).count, count - count / 10)
        XCTAssertEqual(realm.object(ofType: StreamV2.SAuthor.self, forPrimaryKey: "A7")?.name, "author 7")
        XCTAssertNil(realm.object(ofType: StreamV2.SAuthor.self, forPrimaryKey: "A10"))
        XCTAssertEqual(realm.objects(StreamV2.SBook.self).count, count)
        let book7 = try XCTUnwrap(realm.object(ofType: StreamV2.SBook.self, forPrimaryKey: 7))
        XCTAssertEqual(book7.score, 21)
        XCTAssertEqual(book7.author?.code, "A7", "links follow the new primary key")
        XCTAssertEqual(book7.coauthors.map(\.code), ["A7"], "a list drops a deleted author")
        XCTAssertNil(realm.object(ofType: StreamV2.SBook.self, forPrimaryKey: 20)?.author, "a link to a deleted object is cut")
        XCTAssertEqual(realm.objects(StreamV2.SBook.self).filter(#Predicate { $0.score == 3_000 }).first?.id, 1_000, "the new index")
        let notes = realm.objects(StreamV2.SNote.self)
        XCTAssertEqual(notes.count, count)
        XCTAssertEqual(Set(notes.map { $0.book!.id }).count, count, "each note links its book")
        XCTAssertEqual(notes.filter { $0.text.hasPrefix("late ") }.map(\.text).sorted(), ["late note 1000", "late note 2000", "late note 3000", "late note 4000", "late note 5000", "late note 6000"].filter { Int($0.dropFirst(10))! <= count })
        XCTAssertEqual(realm.objects(StreamV2.SDraft.self).map(\.id), [1])
    }

    func testStreamedMigrationThatFailsLateLeavesTheStoreAsItWas() throws {
        try seedStream()
        let count = Self.streamCount
        var config = configuration(types: [StreamV2.SAuthor.self, StreamV2.SBook.self, StreamV2.SDraft.self, StreamV2.SNote.self], version: 2)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "SAuthor") { old, new in
                let id = old!["id"] as! Int
                new!["code"] = "A\(id == count ? 1 : id)"      // the last one collides, after several spills
            }
        }
        XCTAssertThrowsError(try Realm(configuration: config)) { error in
            XCTAssertEqual("\(error)", "migration failed: Primary key property 'SAuthor.code' has duplicate values after migration: 'A1'")
        }
        XCTAssertFalse(scratchExists, "the scratch store is removed")
        let old = try Realm(configuration: configuration(types: [StreamV1.SAuthor.self, StreamV1.SBook.self, StreamV1.SDraft.self], version: 1))
        XCTAssertEqual(old.objects(StreamV1.SAuthor.self).count, count, "a failed migration writes nothing")
        XCTAssertEqual(old.object(ofType: StreamV1.SBook.self, forPrimaryKey: 5)?.author?.id, 5)
        XCTAssertEqual(old.schema.version, 1)
    }

    func testARewriteTooLargeForOneTransactionNamesTheMigration() {
        let error = Migration.tooLarge("the transaction exceeds 4 GiB in one segment; split it", from: 3, to: 4)
        XCTAssertEqual("\(error)", "migration failed: the migration from schema version 3 to 4 does not fit in one transaction: it rewrites every object of the migrated types, with their indexes, in one engine transaction, and the transaction exceeds 4 GiB in one segment; split it (a transaction may not exceed 4 GiB in one segment); the store is unchanged")
    }
}
