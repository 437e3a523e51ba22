// RealmResultsController (docs/API.md §4): sections, mapper, filter, and a model-based replay
// test — seeded random commits (inserts, deletes, sort-key, section-key and linked-object
// changes, many per transaction); after each commit the callbacks are applied, in the
// documented order, to a copy of the previous sections, which must then equal a fresh fetch.

import XCTest
import Dispatch
import StrataTestSupport
@testable import Strata

final class Person: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
}

final class TaskModel: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var projectID: Int = 0
    @Persisted var owner: Person?
}

struct Task: Equatable {
    var id: Int
    var name: String
    var owner: String
    init(_ model: TaskModel) {
        id = model.id
        name = model.name
        owner = model.owner?.name ?? ""
    }
}

/// Records callbacks and replays them onto a copy of the previous sections.
final class ReplayingDelegate<U>: RealmResultsControllerDelegate {
    var sections: [(key: String, items: [U])]
    var batches = 0
    var order: [String] = []
    private var deletedRows: [IndexPath] = []
    private var deletedSections: [Int] = []
    private var insertedSections: [(Int, String)] = []
    private var insertedRows: [(IndexPath, U)] = []
    private var updatedRows: [(IndexPath, U)] = []

    init(_ sections: [RealmSection<U>]) {
        self.sections = sections.map { ($0.keyPath, $0.objects) }
    }

    func willChangeResults(controller: AnyObject) {
        order.append("will")
    }

    func didChangeObject<V>(object: V, controller: AnyObject, oldIndexPath: IndexPath, newIndexPath: IndexPath, changeType: RealmResultsChangeType) {
        order.append(changeType.rawValue)
        let object = object as! U
        switch changeType {
        case .delete:
            XCTAssertEqual(oldIndexPath, newIndexPath)
            deletedRows.append(oldIndexPath)
        case .insert:
            XCTAssertEqual(oldIndexPath, newIndexPath)
            insertedRows.append((newIndexPath, object))
        case .move:
            deletedRows.append(oldIndexPath)
            insertedRows.append((newIndexPath, object))
        case .update:
            updatedRows.append((newIndexPath, object))
        }
    }

    func didChangeSection<V>(section: RealmSection<V>, controller: AnyObject, index: Int, changeType: RealmResultsChangeType) {
        order.append("section " + changeType.rawValue)
        switch changeType {
        case .delete: deletedSections.append(index)
        case .insert: insertedSections.append((index, section.keyPath))
        default: XCTFail("sections are only inserted or deleted")
        }
    }

    func didChangeResults(controller: AnyObject) {
        order.append("did")
        batches += 1
        // The documented application order.
        for path in deletedRows.sorted(by: >) { sections[path.section].items.remove(at: path.item) }
        for index in deletedSections.sorted(by: >) {
            XCTAssertTrue(sections[index].items.isEmpty, "a deleted section must have lost all its rows")
            sections.remove(at: index)
        }
        for (index, key) in insertedSections.sorted(by: { $0.0 < $1.0 }) { sections.insert((key, []), at: index) }
        for (path, object) in insertedRows.sorted(by: { $0.0 < $1.0 }) { sections[path.section].items.insert(object, at: path.item) }
        for (path, object) in updatedRows { sections[path.section].items[path.item] = object }
        deletedRows = []; deletedSections = []; insertedSections = []; insertedRows = []; updatedRows = []
    }
}

final class ResultsControllerTests: RealmTestCase {
    let types: [Object.Type] = [TaskModel.self, Person.self]

    func testSectionsMapperFilterAndRequest() throws {
        let realm = try openRealm(types: types)
        try realm.write {
            for (id, name, project) in [(1, "Alpha", 2), (2, "Beta", 1), (3, "Apex", 1), (4, "Axe", 2), (5, "Zed", 1)] {
                try realm.create(TaskModel.self, value: ["id": id, "name": name, "projectID": project])
            }
        }
        let request = RealmRequest<TaskModel>(predicate: #Predicate { $0.id != 0 }, realm: realm,
                                              sortDescriptors: [SortDescriptor(\.name)])
        XCTAssertEqual(request.execute().map(\.id), [1, 3, 4, 2, 5])
        XCTAssertEqual(realm.execute(request).count, 5)
        let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \.projectID,
                                                              mapper: Task.init, filter: { $0.name.hasPrefix("A") })
        try rrc.performFetch()
        XCTAssertEqual(rrc.numberOfSections, 2)
        XCTAssertEqual(rrc.sections.map(\.keyPath), ["1", "2"], "the section key goes first in the order")
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.id) }, [[3], [1, 4]])   // Apex | Alpha, Axe
        XCTAssertEqual(rrc.numberOfObjects(at: 1), 2)
        XCTAssertEqual(rrc.object(at: IndexPath(item: 1, section: 1)).name, "Axe")
        let silent = ReplayingDelegate(rrc.sections)
        rrc.delegate = silent
        rrc.updateFilter { $0.name.hasPrefix("Z") }
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.id) }, [[5]])
        XCTAssertEqual(silent.order, [], "updateFilter without notifying: true refetches silently (the seed: reload after it)")
        XCTAssertEqual(silent.sections.map(\.key), ["1", "2"], "the delegate's copy is untouched")
        let delegate = ReplayingDelegate(rrc.sections)
        rrc.delegate = delegate
        rrc.updateFilter(notifying: true) { $0.name.hasPrefix("B") || $0.name.hasPrefix("Z") }
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.id) }, [[2, 5]])
        XCTAssertEqual(delegate.sections.map(\.key), ["1"])
        XCTAssertEqual(delegate.sections.map { $0.items.map(\.id) }, [[2, 5]])
        XCTAssertEqual(delegate.order.first, "will")
        XCTAssertEqual(delegate.order.last, "did")

        let copies = try RealmResultsController<TaskModel, TaskModel>(request: request, sectionKeyPath: nil)
        try copies.performFetch()
        XCTAssertEqual(copies.numberOfSections, 1)
        XCTAssertNil(copies.object(at: IndexPath(row: 0, section: 0)).realm, "T == U gives unmanaged copies")
        XCTAssertThrowsError(try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \TaskModel.owner, mapper: Task.init)) {
            XCTAssertTrue("\($0)".contains("sectionKeyPath must be a stored property of TaskModel"), "\($0)")
        }
    }

    /// The seed's own form: a string predicate, sort key paths and a string section key path.
    func testTheSeedsStringRequestAndSectionKeyPath() throws {
        let realm = try openRealm(types: types)
        try realm.write {
            for (id, name, project) in [(0, "Zero", 1), (1, "Alpha", 2), (2, "Beta", 1), (3, "Apex", 1), (4, "Axe", 2)] {
                try realm.create(TaskModel.self, value: ["id": id, "name": name, "projectID": project])
            }
        }
        let request = RealmRequest<TaskModel>(predicate: "id != 0", realm: realm, sortKeyPaths: ["projectID", "name"])
        XCTAssertEqual(request.execute().map(\.id), [3, 2, 1, 4])
        let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: "projectID", mapper: Task.init)
        try rrc.performFetch()
        XCTAssertEqual(rrc.sections.map(\.keyPath), ["1", "2"])
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.id) }, [[3, 2], [1, 4]])
        let delegate = ReplayingDelegate(rrc.sections)
        rrc.delegate = delegate
        try realm.write { try realm.create(TaskModel.self, value: ["id": 5, "name": "Aardvark", "projectID": 2]) }
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.id) }, [[3, 2], [5, 1, 4]])
        XCTAssertEqual(delegate.sections.map { $0.items.map(\.id) }, [[3, 2], [5, 1, 4]])
        // Bad strings are errors when the controller is made, naming what is wrong.
        let bad = RealmRequest<TaskModel>(predicate: "id !! 0", realm: realm)
        XCTAssertThrowsError(try RealmResultsController<TaskModel, Task>(request: bad, sectionKeyPath: "projectID", mapper: Task.init)) {
            guard case RealmError.invalidQuery(_, let offset, _) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(offset, 3)
        }
        // A controller shows every match: a LIMIT is refused, not silently dropped.
        let limited = RealmRequest<TaskModel>(predicate: "id != 0 LIMIT(2)", realm: realm)
        XCTAssertEqual(limited.execute().count, 2)
        XCTAssertThrowsError(try RealmResultsController<TaskModel, Task>(request: limited, sectionKeyPath: "projectID", mapper: Task.init)) {
            guard case RealmError.invalidQuery(_, let offset, let reason) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(offset, 8)
            XCTAssertTrue(reason.contains("LIMIT"), reason)
        }
        let badSort = RealmRequest<TaskModel>(predicate: "id != 0", realm: realm, sortKeyPaths: ["nope"])
        XCTAssertThrowsError(try RealmResultsController<TaskModel, Task>(request: badSort, sectionKeyPath: "projectID", mapper: Task.init))
        XCTAssertThrowsError(try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: "nope", mapper: Task.init)) {
            XCTAssertTrue("\($0)".contains("sectionKeyPath must be a stored property of TaskModel"), "\($0)")
        }
    }

    func testCallbackOrderIsTheDocumentedOne() throws {
        let realm = try openRealm(types: types)
        try realm.write {
            for id in 1 ... 4 { try realm.create(TaskModel.self, value: ["id": id, "name": "t\(id)", "projectID": id <= 2 ? 1 : 2]) }
        }
        let request = RealmRequest<TaskModel>(predicate: nil, realm: realm, sortDescriptors: [SortDescriptor(\.name)])
        let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \.projectID, mapper: Task.init)
        try rrc.performFetch()
        let delegate = ReplayingDelegate(rrc.sections)
        rrc.delegate = delegate
        try realm.write {
            try realm.delete(realm.object(ofType: TaskModel.self, forPrimaryKey: 1)!)   // row delete
            try realm.delete(realm.object(ofType: TaskModel.self, forPrimaryKey: 3)!)   // section 2 empties...
            try realm.delete(realm.object(ofType: TaskModel.self, forPrimaryKey: 4)!)
            try realm.create(TaskModel.self, value: ["id": 5, "name": "t0", "projectID": 3])  // section 3 appears
            realm.object(ofType: TaskModel.self, forPrimaryKey: 2)!.name = "t2b"            // update in place
        }
        XCTAssertEqual(delegate.order, ["will", "section Delete", "Delete", "Delete", "Delete", "section Insert", "Insert", "Update", "did"])
        XCTAssertEqual(delegate.sections.map { $0.items.map(\.id) }, rrc.sections.map { $0.objects.map(\.id) })
        XCTAssertEqual(delegate.sections.map { $0.items.map(\.name) }, [["t2b"], ["t0"]])
    }

    func testNeighboursThatChangeTogetherAreMovedNotUpdatedInPlace() throws {
        // X: n2 → n4 and Y: n5 → n3 each still fit between their old neighbours' old values,
        // but not together: the order must become A, Y, X, B.
        let realm = try openRealm(types: types)
        try realm.write {
            for (id, name) in [(1, "n1"), (2, "n2"), (3, "n5"), (4, "n6")] {
                try realm.create(TaskModel.self, value: ["id": id, "name": name, "projectID": 1])
            }
        }
        let request = RealmRequest<TaskModel>(predicate: nil, realm: realm, sortDescriptors: [SortDescriptor(\.name)])
        let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: nil, mapper: Task.init)
        try rrc.performFetch()
        let delegate = ReplayingDelegate(rrc.sections)
        rrc.delegate = delegate
        try realm.write {
            realm.object(ofType: TaskModel.self, forPrimaryKey: 2)!.name = "n4"
            realm.object(ofType: TaskModel.self, forPrimaryKey: 3)!.name = "n3"
        }
        XCTAssertEqual(rrc.sections.map { $0.objects.map(\.id) }, [[1, 3, 2, 4]])
        XCTAssertEqual(delegate.sections.map { $0.items.map(\.id) }, [[1, 3, 2, 4]])
    }

    func testReplayOfRandomCommitsRebuildsTheSections() throws {
        let scale = TestEnvironment.fuzzScale
        let seed = TestEnvironment.seed(default: 404)
        for (round, sorted) in [(0, true), (1, false)] {
            var generator = SplitMix64(seed: seed &+ UInt64(round))
            try? FileManager.default.removeItem(at: directory)
            let realm = try openRealm(types: types)
            try realm.write {
                for id in 0 ..< 8 { try realm.create(Person.self, value: ["id": id, "name": "p\(id)"]) }
            }
            // Sorted on stored properties (translated, incremental), or on a computed one
            // (not translated: re-evaluated and diffed every commit).
            let descriptors: [SortDescriptor<TaskModel>] = sorted ? [SortDescriptor(\.name), SortDescriptor(\.id, order: .reverse)]
                                                                   : [SortDescriptor(\.nameLength), SortDescriptor(\.id)]
            let request = RealmRequest<TaskModel>(predicate: #Predicate { $0.id % 5 != 0 }, realm: realm, sortDescriptors: descriptors)
            let filter: (TaskModel) -> Bool = { ($0.owner?.name ?? "").hasSuffix("x") == false }
            let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \.projectID, mapper: Task.init, filter: filter)
            try rrc.performFetch()
            let delegate = ReplayingDelegate(rrc.sections)
            rrc.delegate = delegate
            let commits = (sorted ? 1500 : 300) * scale
            // Few distinct names and ids: neighbours change together often.
            let names = sorted ? 6 : 30, ids = sorted ? 30 : 60
            for commit in 0 ..< commits {
                try realm.write {
                    for _ in 0 ..< Int.random(in: 1 ... 10, using: &generator) {
                        let id = Int.random(in: 0 ..< ids, using: &generator)
                        let existing = realm.object(ofType: TaskModel.self, forPrimaryKey: id)
                        switch Int.random(in: 0 ..< 6, using: &generator) {
                        case 0:
                            try realm.create(TaskModel.self, value: [
                                "id": id, "name": "n\(Int.random(in: 0 ..< names, using: &generator))",
                                "projectID": Int.random(in: 0 ..< 5, using: &generator),
                                "owner": Int.random(in: 0 ..< 8, using: &generator),
                            ], update: .modified)
                        case 1: if let existing { try realm.delete(existing) }
                        case 2: existing?.name = "n\(Int.random(in: 0 ..< names, using: &generator))"
                        case 3: existing?.projectID = Int.random(in: 0 ..< 5, using: &generator)
                        case 4:
                            let person = realm.object(ofType: Person.self, forPrimaryKey: Int.random(in: 0 ..< 8, using: &generator))!
                            person.name = "p\(Int.random(in: 0 ..< 8, using: &generator))" + (Bool.random(using: &generator) ? "x" : "")
                        default:
                            existing?.owner = realm.object(ofType: Person.self, forPrimaryKey: Int.random(in: 0 ..< 8, using: &generator))
                        }
                    }
                }
                // A fresh fetch, computed without the controller.
                var expected: [(String, [Task])] = []
                let fresh = request.execute().filter(filter).map { ($0.projectID, Task($0)) }
                for project in Set(fresh.map(\.0)).sorted() {
                    expected.append(("\(project)", fresh.filter { $0.0 == project }.map(\.1)))
                }
                XCTAssertEqual(delegate.sections.map(\.key), expected.map(\.0), "sections after commit \(commit) (seed \(seed), sorted \(sorted))")
                XCTAssertEqual(delegate.sections.map { $0.items }, expected.map(\.1), "rows after commit \(commit) (seed \(seed), sorted \(sorted))")
                XCTAssertEqual(rrc.sections.map { $0.objects }, expected.map(\.1))
                if delegate.sections.map({ $0.items }) != expected.map(\.1) { return }
                if let problem = rrc.checkInvariants() { return XCTFail("after commit \(commit) (seed \(seed), sorted \(sorted)): \(problem)") }
            }
            XCTAssertGreaterThan(delegate.batches, commits / 2)
            rrc.delegate = nil
        }
    }

    func testWritesFromOtherThreadsReachAQueueConfinedController() throws {
        let config = configuration(types: types)
        let queue = DispatchQueue(label: "controller")
        let done = expectation(description: "all inserts seen")
        final class Holder: @unchecked Sendable {
            var rrc: RealmResultsController<TaskModel, Task>?
            var delegate: ReplayingDelegate<Task>?
            var count = 0
        }
        let holder = Holder()
        let total = 40
        queue.sync {
            let realm = try! Realm(configuration: config, queue: queue)
            let request = RealmRequest<TaskModel>(predicate: nil, realm: realm, sortDescriptors: [SortDescriptor(\.id)])
            let rrc = try! RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \.projectID, mapper: Task.init)
            try! rrc.performFetch()
            let delegate = ReplayingDelegate(rrc.sections)
            rrc.delegate = delegate
            holder.rrc = rrc
            holder.delegate = delegate
        }
        let stream = queue.sync { holder.rrc!.changes }
        let reader = Task_ { // consume the async sequence on the side
            var batches = 0
            for await _ in stream { batches += 1; if batches >= 1 { break } }
            return batches
        }
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            let writer = try! Realm(configuration: config)
            for i in 0 ..< total / 4 {
                try! writer.write { try writer.create(TaskModel.self, value: ["id": thread * 100 + i, "name": "t", "projectID": thread]) }
            }
        }
        @Sendable func poll() {
            queue.asyncAfter(deadline: .now() + 0.01) {
                let seen = holder.delegate!.sections.reduce(0) { $0 + $1.items.count }
                if seen == total {
                    XCTAssertEqual(holder.delegate!.sections.map { $0.items.map(\.id) }, holder.rrc!.sections.map { $0.objects.map(\.id) })
                    done.fulfill()
                } else {
                    poll()
                }
            }
        }
        poll()
        wait(for: [done], timeout: 20)
        XCTAssertGreaterThanOrEqual(reader.wait(), 1)
        queue.sync { holder.rrc = nil; holder.delegate = nil }
    }
}

extension TaskModel {
    /// A computed sort key: descriptors on it cannot be translated to stored fields.
    var nameLength: Int { name.count }
}

/// Runs an async closure on the side and waits for its result (tests only).
final class Task_<R: Sendable>: @unchecked Sendable {
    private var result: R?
    private let done = DispatchSemaphore(value: 0)
    init(_ body: @escaping @Sendable () async -> R) {
        Swift.Task {
            self.result = await body()
            self.done.signal()
        }
    }
    func wait() -> R {
        done.wait()
        return result!
    }
}

final class ChunkedOrderTests: XCTestCase {
    func testMatchesAnArrayThroughRandomInsertsAndRemovals() {
        var generator = SplitMix64(seed: 77)
        var model: [Int] = []
        var chunked = ChunkedOrder()
        func key(_ value: Int) -> Int32 { Int32(value) }
        for step in 0 ..< 12000 {
            if model.isEmpty || Int.random(in: 0 ..< 3, using: &generator) > 0 {
                let value = Int.random(in: 0 ..< 1_000_000, using: &generator)
                // Keep both sorted: find the place by lowerBound, as the controller does.
                let position = chunked.lowerBound { $0 < key(value) }
                XCTAssertEqual(position, model.firstIndex { $0 >= value } ?? model.count, "step \(step)")
                chunked.insert(key(value), at: position)
                model.insert(value, at: position)
            } else {
                let position = Int.random(in: 0 ..< model.count, using: &generator)
                chunked.remove(at: position)
                model.remove(at: position)
            }
            XCTAssertEqual(chunked.count, model.count)
            if step % 500 == 0, let problem = chunked.checkInvariants() { return XCTFail("step \(step): \(problem)") }
        }
        XCTAssertNil(chunked.checkInvariants())
        XCTAssertGreaterThan(chunked.chunks.count, 4, "the test must split chunks")
        XCTAssertEqual(chunked.all, model.map(key))
        XCTAssertEqual(chunked.keys(in: 100 ..< 700), model[100 ..< 700].map(key))
        XCTAssertEqual(chunked[1234], key(model[1234]))
        XCTAssertEqual(ChunkedOrder(model.map(key)).all, model.map(key))
    }
}
