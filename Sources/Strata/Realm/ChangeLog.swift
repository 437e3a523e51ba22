// ChangeLog: what each commit of a shared store changed, by sequence number, so every
// realm can advance from its snapshot to a newer one and learn exactly which objects
// were inserted, deleted or modified in between — the input of every notification.

import Foundation

/// The changes of one table (object type) in one commit or a run of commits.
struct TableChanges: Sendable {
    var inserted: Set<[UInt8]> = []
    var deleted: Set<[UInt8]> = []
    /// Modified objects and the positions of the properties that changed.
    var modified: [[UInt8]: Set<Int>] = [:]

    var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && modified.isEmpty }
    var count: Int { inserted.count + deleted.count + modified.count }

    /// Appends the changes of a later commit.
    mutating func merge(_ later: TableChanges, propertyCount: Int) {
        for key in later.deleted {
            if inserted.remove(key) == nil {
                modified[key] = nil
                deleted.insert(key)
            }
        }
        for key in later.inserted {
            if deleted.remove(key) != nil {
                modified[key] = Set(0 ..< propertyCount)
            } else {
                inserted.insert(key)
            }
        }
        for (key, properties) in later.modified where !inserted.contains(key) {
            modified[key, default: []].formUnion(properties)
        }
    }
}

/// The changes of one commit or a run of commits, by table.
struct CommitChanges: Sendable {
    var tables: [UInt32: TableChanges] = [:]
    /// Properties per table, to merge delete-then-insert into "everything modified".
    var propertyCounts: [UInt32: Int] = [:]

    var isEmpty: Bool { tables.values.allSatisfy(\.isEmpty) }

    mutating func merge(_ later: CommitChanges) {
        for (table, changes) in later.tables {
            let count = later.propertyCounts[table] ?? propertyCounts[table] ?? 0
            propertyCounts[table] = count
            tables[table, default: TableChanges()].merge(changes, propertyCount: count)
        }
    }
}

/// Commit change sets of one store, kept for the most recent commits.
final class ChangeLog: @unchecked Sendable {
    private let condition = NSCondition()
    /// nil: the commit happened but what it changed is unknown (made outside the object layer).
    private var entries: [UInt64: CommitChanges?] = [:]
    /// Every sequence up to this one has been recorded (or is older than the log).
    private var recordedThrough: UInt64
    private var oldest: UInt64
    private let capacity = 4096

    init(startingAt sequence: UInt64) {
        recordedThrough = sequence
        oldest = sequence
    }

    /// Records what commit `sequence` changed; nil when unknown.
    func record(_ sequence: UInt64, _ changes: CommitChanges?) {
        condition.lock()
        defer { condition.unlock() }
        entries[sequence] = .some(changes)
        while entries[recordedThrough + 1] != nil { recordedThrough += 1 }
        while entries.count > capacity {
            entries[oldest + 1] = nil
            oldest += 1
        }
        condition.broadcast()
    }

    /// Marks every sequence through `sequence` as recorded, unknown where missing.
    func markUnknown(through sequence: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        while recordedThrough < sequence {
            recordedThrough += 1
            if entries[recordedThrough] == nil { entries[recordedThrough] = .some(nil) }
        }
        condition.broadcast()
    }

    /// The merged changes of the commits after `from` through `to`, or nil when some of them
    /// are unknown or too old (the caller then recomputes in full). Waits briefly for a
    /// commit that is visible but not yet recorded.
    func changes(after from: UInt64, through to: UInt64) -> CommitChanges? {
        guard to > from else { return CommitChanges() }
        condition.lock()
        defer { condition.unlock() }
        // A committer records right after its commit returns; a sequence that stays missing
        // was written outside the object layer and is marked unknown, so nobody waits again.
        let deadline = Date().addingTimeInterval(2)
        while recordedThrough < to {
            if !condition.wait(until: deadline) {
                while recordedThrough < to {
                    recordedThrough += 1
                    if entries[recordedThrough] == nil { entries[recordedThrough] = .some(nil) }
                }
                return nil
            }
        }
        guard from >= oldest else { return nil }
        var merged = CommitChanges()
        var sequence = from + 1
        while sequence <= to {
            guard let entry = entries[sequence], let changes = entry else { return nil }
            merged.merge(changes)
            sequence += 1
        }
        return merged
    }
}
