// Results-controller benchmarks (issue 6): the latency of a change batch — from the start
// of the commit to `didChangeResults` — for 1 and 100 changed objects in sectioned results
// of 10k, 100k and 1M objects with 100 sections.

import Foundation
import Strata

final class BenchTask: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var projectID: Int = 0
}

struct BenchTaskRow {
    var id: Int
    var name: String
    init(_ task: BenchTask) { id = task.id; name = task.name }
}

/// Notes when each batch ends.
final class TimingDelegate: RealmResultsControllerDelegate {
    var endedAt = 0.0
    var rows = 0
    func willChangeResults(controller: AnyObject) { rows = 0 }
    func didChangeObject<U>(object: U, controller: AnyObject, oldIndexPath: IndexPath, newIndexPath: IndexPath, changeType: RealmResultsChangeType) {
        rows += 1
    }
    func didChangeSection<U>(section: RealmSection<U>, controller: AnyObject, index: Int, changeType: RealmResultsChangeType) {}
    func didChangeResults(controller: AnyObject) { endedAt = now() }
}

struct ControllerBenchmarks {
    var sizes: [Int]
    var workDirectory: String

    func log(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    /// A realm of `size` tasks in 100 projects, with shuffled names.
    private func loadedRealm(size: Int) throws -> Realm {
        let directory = URL(fileURLWithPath: workDirectory + "/controller-\(size)")
        try? FileManager.default.removeItem(at: directory)
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = [BenchTask.self]
        config.storeOptions.durability = .none
        let realm = try Realm(configuration: config)
        var start = 0
        while start < size {
            let end = min(size, start + 100_000)
            try realm.write {
                for i in start ..< end {
                    let task = BenchTask()
                    task.id = i
                    task.name = "task \((i &* 7919) % size)"
                    task.projectID = i % 100
                    try realm.add(task)
                }
            }
            start = end
        }
        return realm
    }

    private func controller(_ realm: Realm) throws -> RealmResultsController<BenchTask, BenchTaskRow> {
        let request = RealmRequest<BenchTask>(predicate: nil, realm: realm, sortDescriptors: [SortDescriptor(\.name)])
        return try RealmResultsController<BenchTask, BenchTaskRow>(request: request, sectionKeyPath: \.projectID, mapper: BenchTaskRow.init)
    }

    /// `performFetch()` alone, `rounds` times on one realm, for `perf record`.
    func profileFetch(rounds: Int) throws {
        var realm = try loadedRealm(size: sizes[0])
        for _ in 0 ..< rounds {
            let controller = try controller(realm)
            let seconds = try time { try controller.performFetch() }
            log(String(format: "performFetch of %d objects: %.3f s (%.2f µs an object)", sizes[0], seconds, seconds / Double(sizes[0]) * 1e6))
        }
        // The first fetch after opening the store (an app's launch): the projection is built
        // from the segments, without the allocator state a load in the same process leaves.
        let configuration = realm.configuration
        realm.invalidate()
        realm = try Realm(configuration: configuration)
        let controller = try controller(realm)
        let seconds = try time { try controller.performFetch() }
        log(String(format: "performFetch of %d objects, first after reopening: %.3f s", sizes[0], seconds))
    }

    func run() throws -> [ResultRow] {
        var rows: [ResultRow] = []
        for size in sizes {
            log("controller: \(size) objects")
            let realm = try loadedRealm(size: size)
            let controller = try controller(realm)
            let fetch = try time { try controller.performFetch() }
            let delegate = TimingDelegate()
            controller.delegate = delegate
            var figures: [String] = []
            for changed in [1, 100] {
                var latencies: [Double] = []
                var commits: [Double] = []
                for round in 0 ..< 20 {
                    try realm.beginWrite()
                    for j in 0 ..< changed {
                        let id = ((round * 131 + j * 7877) &* 2654435761) % size
                        realm.object(ofType: BenchTask.self, forPrimaryKey: id)!.name = "renamed \(round) \(j)"
                    }
                    let began = now()
                    try realm.commitWrite()
                    latencies.append(delegate.endedAt - began)
                    commits.append(now() - began)
                }
                let median = latencies.sorted()[latencies.count / 2]
                figures.append(String(format: "%d changed: %.2f ms", changed, median * 1e3))
            }
            rows.append(ResultRow(
                benchmark: "change batch, \(size / 1000)k objects in 100 sections (commit start → didChangeResults)",
                strata: figures.joined(separator: "; "),
                baseline: String(format: "initial fetch %.2f s", fetch),
                sqlite: "–",
                ratios: "grows with the changes, not the size",
                target: "≤ 1 ms for 1 change in 100k"))
            controller.delegate = nil
            realm.invalidate()
            try? FileManager.default.removeItem(atPath: workDirectory + "/controller-\(size)")
        }
        return rows
    }
}
