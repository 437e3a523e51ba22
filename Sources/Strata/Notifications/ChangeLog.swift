// ChangeLog: what each commit of a shared store changed, by sequence number, so every
// realm can advance from its snapshot to a newer one and learn exactly which objects
// were inserted, deleted or modified in between — the input of every notification.

import Foundation
import StrataStorage

/// An object's engine key, hashed as one block of bytes (an `[UInt8]` hashes byte by byte).
struct ObjectKey: Hashable, Sendable {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// A set of property positions (at most 256), without allocating.
struct PropertyMask: Sendable, Hashable {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    init() {}

    /// Every position below `count`.
    init(all count: Int) {
        for index in 0 ..< count { insert(index) }
    }

    static func == (a: PropertyMask, b: PropertyMask) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0); hasher.combine(words.1); hasher.combine(words.2); hasher.combine(words.3)
    }

    var isEmpty: Bool { words.0 | words.1 | words.2 | words.3 == 0 }

    mutating func insert(_ index: Int) {
        let bit: UInt64 = 1 << UInt64(index & 63)
        switch index >> 6 {
        case 0: words.0 |= bit
        case 1: words.1 |= bit
        case 2: words.2 |= bit
        default: words.3 |= bit
        }
    }

    func contains(_ index: Int) -> Bool {
        let bit: UInt64 = 1 << UInt64(index & 63)
        switch index >> 6 {
        case 0: return words.0 & bit != 0
        case 1: return words.1 & bit != 0
        case 2: return words.2 & bit != 0
        default: return words.3 & bit != 0
        }
    }

    mutating func formUnion(_ other: PropertyMask) {
        words = (words.0 | other.words.0, words.1 | other.words.1, words.2 | other.words.2, words.3 | other.words.3)
    }

    /// Whether no position is in both.
    func isDisjoint(with other: PropertyMask) -> Bool {
        words.0 & other.words.0 | words.1 & other.words.1 | words.2 & other.words.2 | words.3 & other.words.3 == 0
    }

    /// The positions, ascending.
    var indices: [Int] { (0 ..< 256).filter(contains) }
}

/// The changes of one table (object type) in one commit or a run of commits.
struct TableChanges: Sendable {
    var inserted: Set<ObjectKey> = []
    var deleted: Set<ObjectKey> = []
    /// Modified objects and the positions of the properties that changed.
    var modified: [ObjectKey: PropertyMask] = [:]

    var isEmpty: Bool { inserted.isEmpty && deleted.isEmpty && modified.isEmpty }
    var count: Int { inserted.count + deleted.count + modified.count }

    /// Whether the commit inserted, deleted or modified `key`.
    func touches(_ key: [UInt8]) -> Bool {
        let key = ObjectKey(key)
        return modified[key] != nil || deleted.contains(key) || inserted.contains(key)
    }

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
                modified[key] = PropertyMask(all: propertyCount)
            } else {
                inserted.insert(key)
            }
        }
        for (key, properties) in later.modified where !inserted.contains(key) {
            modified[key, default: PropertyMask()].formUnion(properties)
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

extension CommitChanges {
    /// What a commit read from a writer in another process changed (a following store's
    /// note, `Store.refresh()`), as the writer's own change set would say it: objects
    /// inserted, deleted, and modified with the properties whose stored fields differ.
    /// Records of other tables (indexes, metadata) are not objects and are left out.
    init(tailed: TailedCommit, schema: Schema) {
        self.init()
        var counts: [UInt32: Int] = [:]
        for object in schema.objectSchemas { counts[StoreLayout.objectTable(object.tableNumber)] = object.properties.count }
        for change in tailed.changes {
            guard let count = counts[change.table] else { continue }
            propertyCounts[change.table] = count
            let key = ObjectKey(change.key)
            var table = tables[change.table] ?? TableChanges()
            if change.isDelete {
                if table.inserted.remove(key) == nil, change.existed {
                    table.modified[key] = nil
                    table.deleted.insert(key)
                }
            } else if table.deleted.remove(key) != nil {
                table.modified[key] = PropertyMask(all: count)   // deleted, then put again
            } else if !change.existed {
                table.inserted.insert(key)
            } else if !table.inserted.contains(key) {
                let modified = change.old.flatMap { old in change.new.map { RowFormat.modifiedFields(from: old, to: $0, propertyCount: count) } }
                    ?? PropertyMask(all: count)   // a value that did not read: say every property
                if !modified.isEmpty { table.modified[key, default: PropertyMask()].formUnion(modified) }
            }
            tables[change.table] = table
        }
    }
}

/// Commit change sets of one store, kept for the most recent commits.
final class ChangeLog: @unchecked Sendable {
    private let lock = NSLock()
    /// nil: the commit happened but what it changed is unknown (made through the engine API).
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
        lock.lock()
        defer { lock.unlock() }
        entries[sequence] = .some(changes)
        while entries[recordedThrough + 1] != nil { recordedThrough += 1 }
        while entries.count > capacity {
            entries[oldest + 1] = nil
            oldest += 1
        }
    }

    /// Marks every sequence through `sequence` as recorded, unknown where missing.
    func markUnknown(through sequence: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        while recordedThrough < sequence {
            recordedThrough += 1
            if entries[recordedThrough] == nil { entries[recordedThrough] = .some(nil) }
        }
    }

    /// How many objects of `table` the commits after `from` through `to` changed, counted
    /// per commit (an object changed twice counts twice) without merging them; nil when
    /// some of them are unknown or too old.
    func changedCount(table: UInt32, after from: UInt64, through to: UInt64) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard from >= oldest, recordedThrough >= to else { return nil }
        var total = 0
        var sequence = from + 1
        while sequence <= to {
            guard let entry = entries[sequence], let changes = entry else { return nil }
            total += changes.tables[table]?.count ?? 0
            sequence += 1
        }
        return total
    }

    /// The merged changes of the commits after `from` through `to`, or nil when some of them
    /// are unknown or too old (the caller then recomputes in full). Never waits: every
    /// commit is recorded by the store's commit observer while the committer still holds
    /// the write gate, before any reader can see it.
    func changes(after from: UInt64, through to: UInt64) -> CommitChanges? {
        guard to > from else { return CommitChanges() }
        lock.lock()
        defer { lock.unlock() }
        if recordedThrough < to {
            // Only a commit made before this log existed can be missing: unknown.
            while recordedThrough < to {
                recordedThrough += 1
                if entries[recordedThrough] == nil { entries[recordedThrough] = .some(nil) }
            }
            return nil
        }
        guard from >= oldest else { return nil }
        if to == from + 1, let entry = entries[to], let changes = entry { return changes }
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
