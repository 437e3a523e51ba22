// The README's object example (its "Thirty lines"), as a user writes it against
// `import Strata`: if it stops compiling or behaving as the README says, this fails.

import Foundation
import Strata
import StrataTestSupport
import XCTest

final class ReadmeRestaurant: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var city: String = ""
    @Persisted var name: String = ""
    @Persisted var phone: String = ""              // only the detail endpoint sends it
    @Persisted var rating: Double = 0
}

final class ReadmeObjectExampleTests: XCTestCase {
    func testTheReadmeObjectExampleRuns() throws {
        let directory = TemporaryDirectory("readme-objects", create: false)
        var changes: [[Int]] = []

        // --- from README.md (the class is above; the model is renamed here) ---
        var config = Realm.Configuration(directory: directory.url)
        config.objectTypes = [ReadmeRestaurant.self]
        let realm = try Realm(configuration: config)
        let coder = RealmCoder(realm: realm)

        // REST JSON in: a detail, then the list. Keys a payload leaves out keep their cached values.
        _ = try coder.decode(ReadmeRestaurant.self, from: Data(#"{"id": 1, "name": "Poole's", "city": "Raleigh", "phone": "919-832-4477"}"#.utf8))
        let list = #"[{"id": 1, "name": "Poole's Diner", "city": "Raleigh", "rating": 4.5}, {"id": 2, "name": "Beasley's", "city": "Raleigh"}]"#
        _ = try coder.decodeArray(ReadmeRestaurant.self, from: Data(list.utf8))

        // Live typed queries (an equality on an indexed property reads the index).
        let raleigh = realm.objects(ReadmeRestaurant.self)
            .filter(#Predicate { $0.city == "Raleigh" })
            .sorted(by: [SortDescriptor(\ReadmeRestaurant.rating, order: .reverse)])
        print(raleigh.map(\.name), raleigh[0].phone)      // ["Poole's Diner", "Beasley's"] 919-832-4477

        // Told exactly what each commit changed, as table-view batch updates.
        let token = raleigh.observe { change in
            if case .update(_, let deletions, let insertions, let modifications) = change { print(deletions, insertions, modifications); changes = [deletions, insertions, modifications] }
        }
        try realm.write { realm.object(ofType: ReadmeRestaurant.self, forPrimaryKey: 2)!.rating = 4.8 }   // [1] [0] [] … moved to the top
        print(String(decoding: try coder.encode(raleigh[0]), as: UTF8.self))                        // and back out as JSON
        token.invalidate()
        // --- end of the README's example ---

        XCTAssertEqual(raleigh.map(\.name), ["Beasley's", "Poole's Diner"])
        XCTAssertEqual(raleigh[1].phone, "919-832-4477", "the list did not wipe the detail")
        XCTAssertEqual(changes, [[1], [0], []])
    }
}

/// The README's "In async code" handler, compiled and run from 32 tasks at once.
final class ReadmeAsyncExampleTests: XCTestCase {
    func testTheReadmeAsyncHandlerRunsConcurrently() async throws {
        let directory = TemporaryDirectory("readme-async", create: false)
        var settings = Realm.Configuration(directory: directory.url)
        settings.objectTypes = [ReadmeRestaurant.self]
        let config = settings

        // --- from README.md (the model is renamed here) ---
        func handle(_ id: Int, _ body: Data) async throws -> Frozen<ReadmeRestaurant>? {
            let realm = try Realm(configuration: config)           // ~2 µs on an open store: one per request
            try await realm.asyncWrite {                           // returns once durable
                _ = try RealmCoder(realm: realm).decode(ReadmeRestaurant.self, from: body)
            }
            try await Task.sleep(for: .milliseconds(1))            // resumes anywhere: still fine
            return realm.object(ofType: ReadmeRestaurant.self, forPrimaryKey: id)?.frozen()   // Sendable
        }
        // --- end ---

        let names = try await withThrowingTaskGroup(of: String?.self) { group in
            for id in 0..<32 {
                group.addTask { try await handle(id, Data(#"{"id": \#(id), "name": "R\#(id)"}"#.utf8))?.name }
            }
            return try await group.reduce(into: Set<String>()) { if let name = $1 { $0.insert(name) } }
        }
        XCTAssertEqual(names, Set((0..<32).map { "R\($0)" }))
    }
}
