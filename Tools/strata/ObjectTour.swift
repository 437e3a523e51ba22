// The second half of `strata demo`: objects over the same engine — REST JSON in with a
// partial update that keeps cached details, JSON back out, a sectioned results controller
// reporting writes made by another thread, a primary-key handoff, and compaction.

import Foundation
import Strata

final class DemoTwitterUser: Object {
    override class var className: String { "TwitterUser" }
    @Persisted(primaryKey: true) var id: Int64 = 0
    @Persisted var screenName: String = ""
    @Persisted var followersCount: Int = 0
}

final class DemoStatus: Object {
    override class var className: String { "Status" }
    @Persisted(primaryKey: true) var id: Int64 = 0
    @Persisted var text: String = ""
    @Persisted var createdAt: Date? = nil
    @Persisted var user: DemoTwitterUser?
    @Persisted var entities: String = ""      // kept as raw JSON
    @Persisted var retweetCount: Int = 0

    override class var realmListEnvelope: String? { "statuses" }
    override class var realmCodableRawJsonSubstrings: [String] { ["entities"] }
}

final class DemoRestaurant: Object {
    override class var className: String { "Restaurant" }
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted(indexed: true) var city: String = ""
    @Persisted var phone: String = ""
    @Persisted var rating: Double = 0
    @Persisted var notes: String = ""                 // local only: never sent to the server

    override class var realmObjectEnvelope: String? { "restaurant" }
    override class var realmListEnvelope: String? { "restaurants" }
    override class var realmCodableIgnoredAttributes: [String] { ["notes"] }
}

/// Prints a results controller's callbacks as they arrive, naming sections by their city
/// (old index paths in the sections before the commit, new ones in those after it).
final class PrintingDelegate: RealmResultsControllerDelegate {
    let say: (String) -> Void
    /// Section names before the commit being reported.
    var oldSections: [String] = []
    init(say: @escaping (String) -> Void) { self.say = say }

    private func newSections(_ controller: AnyObject) -> [String] {
        (controller as? RealmResultsController<DemoRestaurant, DemoRestaurant>)?.sections.map(\.keyPath) ?? []
    }

    private func place(_ path: IndexPath, in sections: [String]) -> String {
        "\(sections.indices.contains(path.section) ? sections[path.section] : "section \(path.section)") #\(path.item)"
    }

    func willChangeResults(controller: AnyObject) {}
    func didChangeObject<U>(object: U, controller: AnyObject, oldIndexPath: IndexPath, newIndexPath: IndexPath, changeType: RealmResultsChangeType) {
        let name = (object as? DemoRestaurant)?.name ?? "\(object)"
        let where_: String
        switch changeType {
        case .move: where_ = "from " + place(oldIndexPath, in: oldSections) + " to " + place(newIndexPath, in: newSections(controller))
        case .delete: where_ = "at " + place(oldIndexPath, in: oldSections)
        default: where_ = "at " + place(newIndexPath, in: newSections(controller))
        }
        say("   \(changeType.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)) \(name) \(where_)")
    }
    func didChangeSection<U>(section: RealmSection<U>, controller: AnyObject, index: Int, changeType: RealmResultsChangeType) {
        say("   \(changeType.rawValue) section \"\(section.keyPath)\" at \(index)")
    }
    func didChangeResults(controller: AnyObject) { oldSections = newSections(controller) }
}

struct ObjectTour {
    let path: String
    let say: (String) -> Void

    func run() throws {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: path))
        config.objectTypes = [DemoRestaurant.self, DemoStatus.self, DemoTwitterUser.self]
        config.storeOptions.segmentSize = 256 << 10
        config.storeOptions.autoCompaction = .disabled
        let realm = try Realm(configuration: config)
        let coder = RealmCoder(realm: realm)

        say("6. REST JSON in: a list (summaries), one detail, then the list again.")
        let list = #"{"restaurants": [{"id": 1, "name": "Poole's", "city": "Raleigh", "rating": 4.6}, {"id": 2, "name": "Beasley's", "city": "Raleigh", "rating": 4.2}, {"id": 3, "name": "Tasca", "city": "Lisbon", "rating": 4.8}]}"#
        let detail = #"{"restaurant": {"id": 1, "name": "Poole's Diner", "phone": "+1-919-832-4477"}}"#
        _ = try coder.decodeArray(DemoRestaurant.self, from: Data(list.utf8))
        _ = try coder.decode(DemoRestaurant.self, from: Data(detail.utf8))
        _ = try coder.decodeArray(DemoRestaurant.self, from: Data(list.utf8))
        let poole = realm.object(ofType: DemoRestaurant.self, forPrimaryKey: 1)!
        say("   after list → detail → list: \(poole.name), phone \(poole.phone) (the list does not carry phones; the cached one survived)")
        let bad = #"{"restaurants": [{"id": 4, "name": "Ok"}, {"id": 5, "rating": "five stars"}]}"#
        do {
            _ = try coder.decodeArray(DemoRestaurant.self, from: Data(bad.utf8))
        } catch {
            say("   a bad payload is refused whole: \(error); still \(realm.objects(DemoRestaurant.self).count) restaurants")
        }
        say("   Twitter search results: statuses with their users, upserted by primary key.")
        let twitterDates = DateFormatter()
        twitterDates.locale = Locale(identifier: "en_US_POSIX")
        twitterDates.dateFormat = "EEE MMM dd HH:mm:ss Z yyyy"
        let twitter = RealmCoder(realm: realm, dateFormatter: twitterDates, keyStrategy: .convertFromSnakeCase)
        let statuses = try twitter.decodeArray(DemoStatus.self, from: Data(DemoPayloads.twitterSearch.utf8))
        let first = statuses[0]
        say("   \(statuses.count) statuses, \(realm.objects(DemoTwitterUser.self).count) users; first id \(first.id) (64 bits, exact), by @\(first.user?.screenName ?? "?")")
        say("   entities kept as raw JSON: \(first.entities.prefix(60))…")
        say("")

        say("7. Objects out: edit, then encode for the server (local notes are not sent).")
        try realm.write {
            poole.rating = 4.7
            poole.notes = "ask for the booth"
        }
        say("   " + String(decoding: try coder.encode(poole, useEnvelope: true), as: UTF8.self))
        say("")

        say("8. A results controller: restaurants by city, sorted by name; another thread writes.")
        let request = RealmRequest<DemoRestaurant>(predicate: nil, realm: realm, sortDescriptors: [SortDescriptor(\.name)])
        let controller = try RealmResultsController<DemoRestaurant, DemoRestaurant>(request: request, sectionKeyPath: \.city)
        try controller.performFetch()
        let delegate = PrintingDelegate(say: say)
        delegate.oldSections = controller.sections.map(\.keyPath)
        controller.delegate = delegate
        say("   sections: " + controller.sections.map { "\($0.keyPath) (\($0.objects.count))" }.joined(separator: ", "))
        let shared = config
        let finished = DispatchSemaphore(value: 0)
        let writer = Thread {
            let other = try! Realm(configuration: shared)
            try! other.write {
                try other.create(DemoRestaurant.self, value: ["id": 6, "name": "Sushi Kanesaka", "city": "Tokyo", "rating": 4.9])
                other.object(ofType: DemoRestaurant.self, forPrimaryKey: 2)!.name = "The Beasley's"
                other.object(ofType: DemoRestaurant.self, forPrimaryKey: 3)!.city = "Porto"
            }
            finished.signal()
        }
        writer.start()
        finished.wait()
        realm.refresh()   // this thread's realm advances; the controller reports the commit
        say("   sections now: " + controller.sections.map { "\($0.keyPath) (\($0.objects.count))" }.joined(separator: ", "))
        controller.delegate = nil
        say("")

        say("9. Handing an object to another thread by primary key.")
        let key = poole.primaryKeyValue
        let seen = Locked("")
        let read = DispatchSemaphore(value: 0)
        let reader = Thread {
            let other = try! Realm(configuration: shared)
            let same = other.object(ofType: DemoRestaurant.self, forPrimaryKeyValue: key)
            seen.set("\(same?.name ?? "nil"), rated \(same?.rating ?? 0)")
            read.signal()
        }
        reader.start()
        read.wait()
        say("   the other thread found \(seen.get()) from PrimaryKeyValue \(key)")
        say("")

        say("10. Updating many objects, then compacting:")
        try realm.write {
            for id in 100 ..< 3_100 {
                try realm.create(DemoRestaurant.self, value: ["id": id, "name": "place \(id)", "city": "Raleigh"], update: .modified)
            }
        }
        for round in 0 ..< 5 {
            try realm.write {
                for restaurant in realm.objects(DemoRestaurant.self).filter(#Predicate { $0.city == "Raleigh" }) { restaurant.rating = Double(round) }
            }
        }
        let before = realm.store.stats
        let report = try realm.store.compact()
        say("   \(realm.objects(DemoRestaurant.self).count) restaurants; disk \(before.diskBytes / 1024) KiB (\(before.deadBytes / 1024) KiB dead) → \(report.diskBytesAfter / 1024) KiB after compaction")
        let verified = try realm.store.verify()
        say("   verify: \(verified.isClean ? "ok" : "DAMAGED"); stats: \(realm.store.stats.keys) keys, schema version \(realm.schema.version)")
        realm.invalidate()
    }
}

/// A value shared with a helper thread.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}
