// docs/API.md §4 as a user writes it (`import Strata` only), and the text-mode list of
// docs/results-controller.md, run against real commits.

import Strata
import XCTest

final class TaskModel: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var projectID: Int = 0
}

struct Task {
    var id: Int
    var name: String
    init(_ model: TaskModel) { id = model.id; name = model.name }
}

/// docs/results-controller.md's example, verbatim apart from its output going to `log`.
final class TextList: RealmResultsControllerDelegate {
    private(set) var sections: [(title: String, rows: [String])] = []
    private var deletes: [IndexPath] = [], inserts: [(IndexPath, String)] = []
    private var sectionDeletes: [Int] = [], sectionInserts: [(Int, String)] = []
    private var updates: [(IndexPath, String)] = []
    var log: [String] = []

    init(_ controller: RealmResultsController<TaskModel, Task>) {
        reload(controller)
    }

    /// Reads every section again (after `updateFilter`, as `tableView.reloadData()` would).
    func reload(_ controller: RealmResultsController<TaskModel, Task>) {
        sections = controller.sections.map { ($0.keyPath, $0.objects.map(\.name)) }
    }

    func willChangeResults(controller: AnyObject) {}

    func didChangeSection<U>(section: RealmSection<U>, controller: AnyObject, index: Int, changeType: RealmResultsChangeType) {
        if changeType == .delete { sectionDeletes.append(index) } else { sectionInserts.append((index, section.keyPath)) }
    }

    func didChangeObject<U>(object: U, controller: AnyObject, oldIndexPath: IndexPath, newIndexPath: IndexPath,
                            changeType: RealmResultsChangeType) {
        let name = (object as! Task).name
        switch changeType {
        case .delete: deletes.append(oldIndexPath)
        case .insert: inserts.append((newIndexPath, name))
        case .move: deletes.append(oldIndexPath); inserts.append((newIndexPath, name))
        case .update: updates.append((newIndexPath, name))
        }
        log.append("\(changeType.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)) \(name)  \(oldIndexPath) → \(newIndexPath)")
    }

    func didChangeResults(controller: AnyObject) {
        for path in deletes.sorted(by: >) { sections[path.section].rows.remove(at: path.item) }
        for index in sectionDeletes.sorted(by: >) { sections.remove(at: index) }
        for (index, title) in sectionInserts.sorted(by: { $0.0 < $1.0 }) { sections.insert((title, []), at: index) }
        for (path, name) in inserts.sorted(by: { $0.0 < $1.0 }) { sections[path.section].rows.insert(name, at: path.item) }
        for (path, name) in updates { sections[path.section].rows[path.item] = name }
        deletes = []; inserts = []; sectionDeletes = []; sectionInserts = []; updates = []
    }
}

final class ResultsControllerContractTests: XCTestCase {
    func testRequestSectionsFilterUpdatesAndTheTextList() throws {
        var config = Realm.Configuration(inMemoryIdentifier: "contract-\(UUID().uuidString)")
        config.objectTypes = [TaskModel.self]
        let realm = try Realm(configuration: config)
        try realm.write {
            for (id, name, project) in [(1, "Alpha", 1), (2, "Apex", 2), (3, "Bravo", 1)] {
                try realm.create(TaskModel.self, value: ["id": id, "name": name, "projectID": project])
            }
        }
        let request = RealmRequest<TaskModel>(predicate: #Predicate { $0.id != 0 }, realm: realm,
                                              sortDescriptors: [SortDescriptor(\.projectID), SortDescriptor(\.name)])
        let objects: Results<TaskModel> = request.execute()          // also realm.execute(request)
        XCTAssertEqual(objects.count, realm.execute(request).count)

        let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \.projectID,
                                                              mapper: Task.init, filter: { $0.name.hasPrefix("A") })
        let same = try RealmResultsController<TaskModel, TaskModel>(request: request, sectionKeyPath: nil) // T == U: unmanaged copies
        try same.performFetch()
        try rrc.performFetch()
        let list = TextList(rrc)
        rrc.delegate = list
        _ = rrc.sections            // [RealmSection<Task>]: .keyPath (the section's value as String), .objects
        _ = rrc.numberOfSections; _ = rrc.numberOfObjects(at: 0); _ = rrc.object(at: IndexPath(item: 0, section: 0))
        XCTAssertEqual(list.sections.map(\.title), ["1", "2"])

        try realm.write {
            try realm.create(TaskModel.self, value: ["id": 4, "name": "Aardvark", "projectID": 3])
            realm.object(ofType: TaskModel.self, forPrimaryKey: 2)!.name = "Axe"
            try realm.delete(realm.object(ofType: TaskModel.self, forPrimaryKey: 1)!)
        }
        XCTAssertEqual(list.sections.map(\.title), ["2", "3"])
        XCTAssertEqual(list.sections.map(\.rows), [["Axe"], ["Aardvark"]])
        XCTAssertEqual(list.sections.map(\.rows), rrc.sections.map { $0.objects.map(\.name) })
        list.log.removeAll()
        rrc.updateFilter { $0.name.hasPrefix("B") }                   // refetch, no delegate calls: the caller reloads (as the seed says)
        XCTAssertEqual(list.log, [], "without notifying: true the delegate hears nothing")
        XCTAssertEqual(list.sections.map(\.rows), [["Axe"], ["Aardvark"]], "the list still shows the old filter until it reloads")
        list.reload(rrc)
        XCTAssertEqual(list.sections.map(\.rows), [["Bravo"]])
        rrc.updateFilter(notifying: true) { $0.name.hasPrefix("A") }   // refetch and send the diff to the delegate
        XCTAssertFalse(list.log.isEmpty)
        XCTAssertEqual(list.sections.map(\.rows), [["Axe"], ["Aardvark"]])
        XCTAssertEqual(list.sections.map(\.rows), rrc.sections.map { $0.objects.map(\.name) })
        _ = RealmResultsChangeType.move.rawValue
        XCTAssertEqual(RealmResultsChangeType.insert.rawValue, "Insert")
    }
}
