// The results controller maps a row when it is first read (issue 24, item 5): a fetch of
// many objects maps none of them, a screen maps what it shows, a change maps what it
// reports, and a row deleted before it was ever read is reported as it was before the
// delete, from the commit's old snapshot. A fetch answered from columns orders no section
// either: a section is ordered when it is read or a commit changes it, and the batches of
// a controller whose sections are partly ordered are the same as a fully ordered one's.

import XCTest
import StrataTestSupport
@testable import Strata

/// Collects the objects the delegate is handed, by change type.
private final class CollectingDelegate: RealmResultsControllerDelegate {
    var objects: [RealmResultsChangeType: [Task]] = [:]
    func willChangeResults(controller: AnyObject) {}
    func didChangeSection<U>(section: RealmSection<U>, controller: AnyObject, index: Int, changeType: RealmResultsChangeType) {}
    func didChangeObject<U>(object: U, controller: AnyObject, oldIndexPath: IndexPath, newIndexPath: IndexPath, changeType: RealmResultsChangeType) {
        objects[changeType, default: []].append(object as! Task)
    }
    func didChangeResults(controller: AnyObject) {}
}

final class ResultsControllerLazyTests: RealmTestCase {
    private func seeded() throws -> Realm {
        let realm = try openRealm(types: [TaskModel.self, Person.self])
        try realm.write {
            for i in 0 ..< 300 {
                let task = TaskModel()
                task.id = i
                task.name = "task \(1000 - i)"
                task.projectID = i % 7
                try realm.add(task)
            }
        }
        return realm
    }

    /// The seeded realm and a controller over it (7 sections by project, sorted by name)
    /// whose mapper counts its calls.
    private func countingController() throws -> (Realm, RealmResultsController<TaskModel, Task>, Locked<Int>) {
        let realm = try seeded()
        let mapped = Locked(0)
        let request = RealmRequest<TaskModel>(predicate: nil, realm: realm, sortDescriptors: [SortDescriptor(\.name)])
        let controller = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \.projectID, mapper: {
            mapped.withLock { $0 += 1 }
            return Task($0)
        })
        return (realm, controller, mapped)
    }

    func testAFetchMapsNothingAndAScreenMapsWhatItShows() throws {
        let (_, controller, mapped) = try countingController()   // (the controller's request keeps the realm)
        try controller.performFetch()
        XCTAssertEqual(mapped.withLock { $0 }, 0, "the fetch mapped objects nobody read")
        XCTAssertEqual(controller.numberOfSections, 7)
        XCTAssertEqual((0 ..< 7).map(controller.numberOfObjects(at:)).reduce(0, +), 300)
        // The first row of section 3: projectID 3, the smallest name there.
        let expected = (0 ..< 300).filter { $0 % 7 == 3 }.map { "task \(1000 - $0)" }.min()!
        XCTAssertEqual(controller.object(at: IndexPath(item: 0, section: 3)).name, expected)
        XCTAssertEqual(controller.object(at: IndexPath(item: 0, section: 3)).name, expected)
        XCTAssertEqual(mapped.withLock { $0 }, 1, "one row read twice maps once")
        // Everything, in order, as a fetch that mapped eagerly showed it.
        let all = controller.sections
        XCTAssertEqual(all.map(\.objects.count).reduce(0, +), 300)
        for section in all {
            XCTAssertEqual(section.objects.map(\.name), section.objects.map(\.name).sorted())
            XCTAssertTrue(section.objects.allSatisfy { "\($0.id % 7)" == section.keyPath })
        }
        XCTAssertEqual(mapped.withLock { $0 }, 300)
    }

    /// Inside a write that deleted an object the controller still shows (it hears of the
    /// delete at commit), reading that row maps the object as last committed.
    func testARowDeletedInAnOpenWriteMapsAsLastCommitted() throws {
        let realm = try seeded()
        let request = RealmRequest<TaskModel>(predicate: nil, realm: realm, sortDescriptors: [SortDescriptor(\.id)])
        let controller = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: nil, mapper: Task.init)
        try controller.performFetch()
        try realm.write {
            try realm.delete(realm.object(ofType: TaskModel.self, forPrimaryKey: 5)!)
            let shown = controller.object(at: IndexPath(item: 5, section: 0))
            XCTAssertEqual(shown.id, 5)
            XCTAssertEqual(shown.name, "task 995", "mapped from zero values instead of the last commit")
        }
        XCTAssertEqual(controller.numberOfObjects(at: 0), 299)
    }

    func testChangesMapWhatTheyReportAndADeletedUnreadRowAsItWas() throws {
        let (realm, controller, mapped) = try countingController()
        let delegate = CollectingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        // One object deleted (never read), one renamed, one added: three rows reported.
        try realm.write {
            try realm.delete(realm.object(ofType: TaskModel.self, forPrimaryKey: 10)!)
            realm.object(ofType: TaskModel.self, forPrimaryKey: 20)!.name = "renamed"
            let task = TaskModel()
            task.id = 999
            task.name = "new"
            try realm.add(task)
        }
        XCTAssertEqual(delegate.objects[.delete]?.map(\.name), ["task 990"], "the deleted row, as it was before the delete")
        XCTAssertEqual(delegate.objects[.delete]?.map(\.id), [10])
        let reported = (delegate.objects[.insert] ?? []) + (delegate.objects[.move] ?? []) + (delegate.objects[.update] ?? [])
        XCTAssertEqual(Set(reported.map(\.name)), ["renamed", "new"])
        XCTAssertLessThanOrEqual(mapped.withLock { $0 }, 4, "a change mapped rows it did not report")
        XCTAssertNil(controller.checkInvariants())
        // A change to a linked type rebuilds by key: a row deleted in the same commit is still
        // reported as it was.
        delegate.objects = [:]
        try realm.write {
            let person = Person()
            person.id = 1
            person.name = "owner"
            try realm.add(person)
            realm.object(ofType: TaskModel.self, forPrimaryKey: 30)!.owner = person
            try realm.delete(realm.object(ofType: TaskModel.self, forPrimaryKey: 40)!)
        }
        XCTAssertEqual(delegate.objects[.delete]?.map(\.name), ["task 960"])
        XCTAssertEqual(((delegate.objects[.update] ?? []) + (delegate.objects[.move] ?? [])).first { $0.id == 30 }?.owner, "owner")
        XCTAssertNil(controller.checkInvariants())
    }

    /// Random commits to a controller that was fetched from columns and whose sections are
    /// read only now and then: each batch, applied to the previous sections (built here
    /// from plain `Results`, never from the controller), gives the sections of a fresh
    /// query; the controller's own invariants hold; some sections stay unordered across
    /// commits. Sectioned by an integer (of a narrow range, grouped through an array, and
    /// of a wide one, through a hash table) and by a string, with and without a predicate.
    func testPartlyOrderedSectionsReportWhatAFullyOrderedControllerReports() throws {
        let seed = TestEnvironment.seed(default: 2411)
        let commits = 120 * TestEnvironment.fuzzScale
        for round in 0 ..< 4 {
            var generator = SplitMix64(seed: seed &+ UInt64(round))
            // Project numbers: 0–11, or spread over ±6e12 in round 3.
            func project(_ number: Int) -> Int { round == 3 ? (number - 6) * 1_000_000_000_000 : number }
            try? FileManager.default.removeItem(at: directory)
            let realm = try openRealm(types: [TaskModel.self, Person.self])
            try realm.write {
                for id in 0 ..< 400 {
                    try realm.create(TaskModel.self, value: ["id": id, "name": "n\(Int.random(in: 0 ..< 40, using: &generator))",
                                                             "projectID": project(Int.random(in: 0 ..< 12, using: &generator))])
                }
            }
            let byName = round == 2
            let predicate: Predicate<TaskModel>? = round == 1 ? #Predicate { $0.id >= 30 } : nil
            let request = RealmRequest<TaskModel>(predicate: predicate, realm: realm,
                                                  sortDescriptors: byName ? [SortDescriptor(\.id, order: .reverse)]
                                                                          : [SortDescriptor(\.name), SortDescriptor(\.id, order: .reverse)])
            let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: byName ? \TaskModel.name : \TaskModel.projectID,
                                                                  mapper: Task.init)
            func expected() -> [(key: String, items: [Task])] {
                let fresh = request.execute().map { (byName ? $0.name : "\($0.projectID)", Task($0)) }
                var sections: [(key: String, items: [Task])] = []
                let keys = byName ? Set(fresh.map(\.0)).sorted() : Set(fresh.map { Int($0.0)! }).sorted().map { "\($0)" }
                for key in keys { sections.append((key, fresh.filter { $0.0 == key }.map(\.1))) }
                return sections
            }
            try rrc.performFetch()
            XCTAssertEqual(rrc.unorderedSectionCount, rrc.numberOfSections, "the fetch from columns ordered sections (round \(round))")
            let delegate = ReplayingDelegate<Task>([])
            delegate.sections = expected()
            rrc.delegate = delegate
            var stayedUnordered = 0
            for commit in 0 ..< commits {
                try realm.write {
                    for _ in 0 ..< Int.random(in: 1 ... 6, using: &generator) {
                        let id = Int.random(in: 0 ..< 440, using: &generator)
                        let existing = realm.object(ofType: TaskModel.self, forPrimaryKey: id)
                        switch Int.random(in: 0 ..< 4, using: &generator) {
                        case 0:
                            try realm.create(TaskModel.self, value: ["id": id, "name": "n\(Int.random(in: 0 ..< 40, using: &generator))",
                                                                     "projectID": project(Int.random(in: 0 ..< 12, using: &generator))], update: .modified)
                        case 1: if let existing { try realm.delete(existing) }
                        case 2: existing?.name = "n\(Int.random(in: 0 ..< 40, using: &generator))"
                        default: existing?.projectID = project(Int.random(in: 0 ..< 12, using: &generator))
                        }
                    }
                }
                let want = expected()
                XCTAssertEqual(delegate.sections.map(\.key), want.map(\.key), "sections after commit \(commit) (seed \(seed), round \(round))")
                XCTAssertEqual(delegate.sections.map(\.items), want.map(\.items), "rows after commit \(commit) (seed \(seed), round \(round))")
                XCTAssertEqual((0 ..< rrc.numberOfSections).map(rrc.numberOfObjects(at:)), want.map(\.items.count))
                if let problem = rrc.checkInvariants() { return XCTFail("after commit \(commit) (seed \(seed), round \(round)): \(problem)") }
                if delegate.sections.map(\.items) != want.map(\.items) { return }
                stayedUnordered = max(stayedUnordered, rrc.unorderedSectionCount)
                // Now and then a screen reads one row of one section (which orders it).
                if Int.random(in: 0 ..< 5, using: &generator) == 0, rrc.numberOfSections > 0 {
                    let section = Int.random(in: 0 ..< rrc.numberOfSections, using: &generator)
                    let item = Int.random(in: 0 ..< rrc.numberOfObjects(at: section), using: &generator)
                    XCTAssertEqual(rrc.object(at: IndexPath(item: item, section: section)), want[section].items[item])
                }
            }
            XCTAssertGreaterThan(stayedUnordered, 0, "no section stayed unordered across a commit (round \(round))")
            XCTAssertEqual(rrc.sections.map(\.objects), expected().map(\.items))
            rrc.delegate = nil
        }
    }
}
