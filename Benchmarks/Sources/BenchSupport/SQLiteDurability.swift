// Every GRDB baseline promises what Strata's `.full` promises: a commit that returned is on
// disk. SQLite's `synchronous = FULL` does that in WAL mode; NORMAL does not sync commits
// (~28 µs a commit instead of an fsync). GRDB's DatabasePool sets NORMAL on its writer
// *after* `prepareDatabase` runs, so a baseline that sets FULL there silently measures
// NORMAL. Each baseline therefore sets FULL on the writer it commits through and reads it
// back, and the benchmark stops if SQLite did not take it.

import GRDB

/// A GRDB baseline that would not run at the durability its table states.
public struct BaselineDurabilityError: Error, CustomStringConvertible {
    public let description: String
}

/// Sets `PRAGMA synchronous = FULL` on `db` (the writer connection) and reads it back.
///
/// - Throws: ``BaselineDurabilityError`` when SQLite reports another level.
public func requireFullSynchronous(_ db: Database, baseline: String) throws {
    try db.execute(sql: "PRAGMA synchronous = FULL")
    let level = try Int.fetchOne(db, sql: "PRAGMA synchronous")
    guard level == 2 else {
        throw BaselineDurabilityError(description: "\(baseline): SQLite runs at PRAGMA synchronous = \(level.map(String.init) ?? "?") after setting FULL (2); the comparison would not be durable on both sides")
    }
}

/// Sets FULL on the writer connection of `writer` (a DatabaseQueue or DatabasePool) and
/// reads it back there, after every set-up GRDB does on its own.
public func requireFullSynchronous(_ writer: some DatabaseWriter, baseline: String) throws {
    try writer.writeWithoutTransaction { try requireFullSynchronous($0, baseline: baseline) }
}
