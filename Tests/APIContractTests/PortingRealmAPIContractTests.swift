// Realm Swift's realm-level names, as ported code writes them: Realm.Error codes,
// asyncOpen, @ThreadSafe, the asynchronous write API and the value protocol names.

import Foundation
import Strata
import XCTest

final class PortingRealmAPIContractTests: PortingStoreTestCase {
    func testErrorCodes() throws {
        var wrongKey = Realm.Configuration(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-contract-error-codes-\(UUID().uuidString)"))
        directories.append(wrongKey.directory!)
        wrongKey.objectTypes = [Contact.self, Phone.self]
        wrongKey.encryptionKey = Data(repeating: 1, count: 64)
        do { _ = try Realm(configuration: wrongKey) }
        var otherKey = wrongKey
        otherKey.encryptionKey = Data(repeating: 2, count: 64)
        XCTAssertThrowsError(try Realm(configuration: otherKey)) { error in
            XCTAssertEqual((error as? Realm.Error)?.code, .decryptionFailed, "\(error)")
        }
        do {
            _ = try Realm(configuration: otherKey)
        } catch let error as Realm.Error where error.code == .decryptionFailed {
            // Realm Swift's catch pattern
        }
        XCTAssertEqual(RealmError.schemaMismatch(["x"]).code, .schemaMismatch)
        XCTAssertEqual(RealmError.invalidated.code, .fail)
    }

    func testAsyncOpenOnAQueue() throws {
        let config = try configuration("async-open")
        let queue = DispatchQueue(label: "async-open")
        let opened = expectation(description: "opened")
        let counted = LockedValue<Int?>(nil)
        Realm.asyncOpen(configuration: config, callbackQueue: queue) { result in
            dispatchPrecondition(condition: .onQueue(queue))
            if case .success(let realm) = result { counted.set(realm.objects(Contact.self).count) }
            opened.fulfill()
        }
        wait(for: [opened], timeout: 10)
        XCTAssertEqual(counted.get(), 0)

        let cancelled = Realm.asyncOpen(configuration: config, callbackQueue: queue) { _ in XCTFail("a cancelled open calls nothing") }
        cancelled.cancel()
        queue.sync {}
        Thread.sleep(forTimeInterval: 0.05)
        queue.sync {}

        var bad = config
        bad.directory = nil
        let failed = expectation(description: "failed")
        Realm.asyncOpen(configuration: bad, callbackQueue: queue) { result in
            if case .failure(let error) = result { XCTAssertTrue("\(error)".contains("directory"), "\(error)") }
            failed.fulfill()
        }
        wait(for: [failed], timeout: 10)
    }

    func testRealmOpenInAsyncCode() async throws {
        let config = try configuration("realm-open")
        let realm = try await Realm.open(configuration: config)
        try realm.write { try realm.add({ let c = Contact(); c.name = "Ann"; return c }()) }
        XCTAssertEqual(realm.objects(Contact.self).count, 1)
        XCTAssertTrue(realm === (try Realm(configuration: config)), "the caller's own realm, as Realm() gives it")

        var bad = config
        bad.directory = nil
        do {
            _ = try await Realm.open(configuration: bad)
            XCTFail("opened without a location")
        } catch {
            XCTAssertTrue("\(error)".contains("directory"), "\(error)")
        }
    }

    func testWriteCopyMakesACompactedStoreThatOpens() throws {
        let config = try configuration("write-copy")
        let realm = try Realm(configuration: config)
        try realm.write {
            for i in 0..<50 { try realm.add({ let c = Contact(); c.name = "c\(i)"; c.age = i; return c }()) }
            try realm.delete(realm.objects(Contact.self).filter("age >= 40"))
        }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-copies-\(UUID().uuidString)")
        directories.append(base)
        let plain = base.appendingPathComponent("plain.realm")
        try realm.writeCopy(toFile: plain)
        try realm.write { try realm.add({ let c = Contact(); c.name = "after"; return c }()) }

        var copyConfig = Realm.Configuration(fileURL: plain, objectTypes: [Contact.self, Phone.self])
        let copy = try Realm(configuration: copyConfig)
        XCTAssertEqual(copy.objects(Contact.self).count, 40, "the snapshot at the call: deletions applied, later writes absent")
        XCTAssertEqual(copy.objects(Contact.self).filter("age == 7").first?.name, "c7")

        let key = Data((0..<64).map { UInt8($0) })
        let sealed = base.appendingPathComponent("sealed.realm")
        try realm.writeCopy(toFile: sealed, encryptionKey: key)
        copyConfig.fileURL = sealed
        XCTAssertThrowsError(try Realm(configuration: copyConfig), "no key for an encrypted copy")
        copyConfig.encryptionKey = key
        XCTAssertEqual(try Realm(configuration: copyConfig).objects(Contact.self).count, 41)

        XCTAssertThrowsError(try realm.writeCopy(toFile: plain)) { error in
            XCTAssertTrue("\(error)".contains("already holds files"), "\(error)")
        }
        try realm.write {
            XCTAssertThrowsError(try realm.writeCopy(toFile: base.appendingPathComponent("inside.realm"))) { error in
                guard case RealmError.alreadyInWriteTransaction = error else { return XCTFail("\(error)") }
            }
        }
    }

    final class Holder: @unchecked Sendable {
        @ThreadSafe var contact: Contact?
        @ThreadSafe var everyone: Results<Contact>?
    }

    func testThreadSafeWrapperResolvesWhereItIsRead() throws {
        let config = try configuration("thread-safe")
        let realm = try Realm(configuration: config)
        let ann = try realm.write { try realm.create(Contact.self, value: ["name": "Ann", "age": 3]) }
        let holder = Holder()
        XCTAssertNil(holder.contact)
        holder.contact = ann
        holder.everyone = realm.objects(Contact.self)
        let seen = LockedValue<String?>(nil)
        DispatchQueue.global().sync {
            let contact = holder.contact
            seen.set("\(contact?.name ?? "nil") \(contact?.age ?? -1) \(holder.everyone?.count ?? -1)")
        }
        XCTAssertEqual(seen.get(), "Ann 3 1")
        try realm.write { try realm.delete(ann) }
        DispatchQueue.global().sync { seen.set(holder.contact == nil ? "gone" : "still there") }
        XCTAssertEqual(seen.get(), "gone")
        holder.contact = nil
        XCTAssertNil(holder.contact)
    }

    func testAsynchronousWritesOnAQueue() throws {
        let config = try configuration("async-writes")
        let queue = DispatchQueue(label: "async-writes")
        let done = expectation(description: "written")
        let log = LockedValue<[String]>([])
        queue.async {
            do {
                let realm = try Realm(configuration: config, queue: queue)
                realm.writeAsync {
                    let contact = Contact()
                    contact.name = "first"
                    try? realm.add(contact)
                } onComplete: { error in
                    log.update { $0.append("first \(error == nil) \(realm.objects(Contact.self).count)") }
                }
                let cancelled = realm.writeAsync { log.update { $0.append("cancelled ran") } }
                XCTAssertTrue(realm.isPerformingAsynchronousWriteOperations)
                try realm.cancelAsyncWrite(cancelled)
                XCTAssertThrowsError(try realm.cancelAsyncWrite(cancelled), "cancelled already")
                realm.beginAsyncWrite {
                    let contact = Contact()
                    contact.name = "second"
                    try? realm.add(contact)
                    realm.commitAsyncWrite { error in
                        log.update { $0.append("second \(error == nil) \(realm.objects(Contact.self).count)") }
                        XCTAssertFalse(realm.isPerformingAsynchronousWriteOperations)
                        done.fulfill()
                    }
                }
                log.update { $0.append("queued \(realm.objects(Contact.self).count)") }
            } catch {
                XCTFail("\(error)")
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 10)
        // Completions are queued behind the writes already queued: the first one's runs
        // after the second write committed.
        XCTAssertEqual(log.get(), ["queued 0", "first true 2", "second true 2"])
    }

    func testAsynchronousWriteOnAThreadWithoutAQueueRunsAtOnce() throws {
        let config = try configuration("async-writes-thread")
        let log = LockedValue<[String]>([])
        let thread = Thread {
            guard let realm = try? Realm(configuration: config) else { return }
            realm.writeAsync {
                try? realm.add(Contact())
            } onComplete: { error in
                log.update { $0.append("done \(error == nil)") }
            }
            log.update { $0.append("after \(realm.objects(Contact.self).count)") }
        }
        thread.start()
        while !thread.isFinished { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(log.get(), ["done true", "after 1"])
    }

    /// Realm Swift's value protocol names, in generic code.
    private func total<T: AddableType>(_ list: List<T>) -> T { list.sum() }
    private func smallest<T: MinMaxType>(_ list: List<T>) -> T? { list.min() }
    private func count<T: RealmCollectionValue>(_ list: List<T>) -> Int { list.count }

    func testValueProtocolNames() {
        XCTAssertEqual(total(List([1, 2, 3])), 6)
        XCTAssertEqual(smallest(List([2.5, 1.5])), 1.5)
        XCTAssertEqual(count(List(["a"])), 1)
    }
}

/// A value behind a lock, for callbacks on other threads.
final class LockedValue<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ newValue: Value) { lock.lock(); value = newValue; lock.unlock() }
    func update(_ body: (inout Value) -> Void) { lock.lock(); body(&value); lock.unlock() }
}

/// A test case that makes stores of `Contact` and `Phone` and removes them afterwards.
class PortingStoreTestCase: XCTestCase {
    var directories: [URL] = []
    override func tearDown() {
        for directory in directories { try? FileManager.default.removeItem(at: directory) }
        super.tearDown()
    }

    /// The configuration of a new store, opened once (so its schema is written).
    func configuration(_ name: String) throws -> Realm.Configuration {
        let (_, config) = try contractRealm(name, types: [Contact.self, Phone.self])
        directories.append(config.directory!)
        return config
    }
}


/// Realm Swift's file helpers: `schemaVersionAtURL`, `Realm.deleteFiles(for:)`,
/// `Realm.performMigration(for:)`.
final class PortingFileHelperContractTests: PortingStoreTestCase {
    func testSchemaVersionDeleteFilesAndPerformMigration() throws {
        var config = try configuration("file-helpers")
        let url = try XCTUnwrap(config.fileURL)
        XCTAssertEqual(try schemaVersionAtURL(url), 0, "read from the closed store's directory")
        XCTAssertThrowsError(try schemaVersionAtURL(url.appendingPathComponent("nothing-here")))

        config.schemaVersion = 3
        let migrated = LockedValue<UInt64?>(nil)
        config.migrationBlock = { _, old in migrated.set(old) }
        try Realm.performMigration(for: config)
        XCTAssertEqual(migrated.get(), 0, "the migration ran, from version 0")
        XCTAssertEqual(try schemaVersionAtURL(url), 3)

        let realm = try Realm(configuration: config)
        XCTAssertEqual(try schemaVersionAtURL(url), 3, "read from the store open in this process")
        XCTAssertThrowsError(try Realm.deleteFiles(for: config), "a realm of it is open")
        realm.invalidate()
        XCTAssertTrue(try Realm.deleteFiles(for: config))
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.path))
        XCTAssertFalse(try Realm.deleteFiles(for: config), "nothing left to delete")
        XCTAssertFalse(try Realm.deleteFiles(for: Realm.Configuration(inMemoryIdentifier: "none")))
    }
}

/// A realm opened on the main thread advances by itself, from the main queue, when another
/// thread commits (Realm's autorefresh on Apple's main run loop): a test that waits for an
/// expectation sees the notification without calling `refresh()`.
final class PortingMainThreadAutorefreshContractTests: PortingStoreTestCase {
    func testAMainThreadRealmAdvancesWhenTheMainRunLoopRuns() throws {
        XCTAssertTrue(Thread.isMainThread)
        let config = try configuration("main-autorefresh")
        let realm = try Realm(configuration: config)
        let updated = expectation(description: "notified")
        var counts: [Int] = []
        let token = realm.objects(Contact.self).observe { change in
            switch change {
            case .initial(let results): counts.append(results.count)
            case .update(let results, _, _, _):
                counts.append(results.count)
                updated.fulfill()
            case .error(let error): XCTFail("\(error)")
            }
        }
        defer { token.invalidate() }
        DispatchQueue.global().async {
            let other = try! Realm(configuration: config)
            try! other.write { try other.create(Contact.self, value: ["name": "Ann"]) }
        }
        wait(for: [updated], timeout: 10)
        XCTAssertEqual(counts, [0, 1])
        XCTAssertEqual(realm.objects(Contact.self).count, 1, "no refresh() called")

        realm.autorefresh = false
        let written = expectation(description: "written")
        DispatchQueue.global().async {
            let other = try! Realm(configuration: config)
            try! other.write { try other.create(Contact.self, value: ["name": "Bob"]) }
            written.fulfill()
        }
        wait(for: [written], timeout: 10)
        RunLoop.main.run(until: Date().addingTimeInterval(0.1))
        XCTAssertEqual(realm.objects(Contact.self).count, 1, "autorefresh off: it waits for refresh()")
        realm.refresh()
        XCTAssertEqual(realm.objects(Contact.self).count, 2)
    }
}
