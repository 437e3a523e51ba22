// strata-crash-helper: the child process of the SIGKILL crash test. It opens the store
// given on the command line and commits KillWorkload transactions forever, printing
// "ack <sequence>" after each commit returns, until the parent kills it.
//
//   strata-crash-helper <directory> <full|normal|none> <segment-size> [compact] [encrypted] [turns]
//   strata-crash-helper <directory> follow
//
// `follow`: opens the store read-only beside its writer (the test) and prints "at <sequence>";
// then, for each line "refresh" on its input, refreshes and prints "at <sequence>" again;
// "quit" (or the end of its input) closes the store and exits.
//
// With `compact`, automatic compaction runs at every opportunity, so kills land in it; with
// `encrypted`, the store is encrypted with KillWorkload.encryptionKey; with `turns`, the store
// is written in turns with other processes (StoreOptions.multiProcessWriting): each
// transaction writes the operations of the sequence it commits as, whoever wrote the one
// before, so the store is always KillWorkload.model(upTo: its last sequence).

#if canImport(Glibc)
import Glibc
#endif
import StrataStorage

/// Writes a line straight to a descriptor: no buffering, so the parent sees every ack before a kill.
func emit(_ line: String, to fd: Int32 = 1) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[2] == "follow" {
    do {
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(path: arguments[1], options: options)
        emit("at \(store.lastSequence) \(store.isFollowingAWriter ? "following" : "alone")")
        while let line = readLine(), line != "quit" {
            if line == "refresh" { try store.refresh() }
            emit("at \(store.lastSequence)")
        }
        try store.close()
        exit(0)
    } catch {
        emit("strata-crash-helper: \(error)", to: 2)
        exit(1)
    }
}
let flags = Set(arguments.dropFirst(4))
guard arguments.count >= 4, let segmentSize = Int(arguments[3]), flags.isSubset(of: ["compact", "encrypted", "turns"]) else {
    emit("usage: strata-crash-helper <directory> <full|normal|none> <segment-size> [compact] [encrypted] [turns]", to: 2)
    exit(2)
}
var options = StoreOptions()
options.segmentSize = segmentSize
options.durability = ["full": .full, "normal": .normal, "none": .none][arguments[2]] ?? .full
if flags.contains("encrypted") { options.encryptionKey = KillWorkload.encryptionKey }
if flags.contains("compact") {
    var policy = CompactionPolicy()
    policy.minimumDeadBytes = 0
    policy.triggerDeadFraction = 0.05
    options.autoCompaction = .custom(policy)
} else {
    options.autoCompaction = .disabled
}
options.multiProcessWriting = flags.contains("turns")
do {
    let store = try Store(path: arguments[1], options: options)
    emit("ready \(store.lastSequence)")
    while options.multiProcessWriting {
        let sequence = try store.write { txn in
            for (table, key, value) in KillWorkload.operations(of: txn.sequence) {
                if let value { try txn.put(table: table, key: key, value: value) } else { try txn.delete(table: table, key: key) }
            }
        }
        emit("ack \(sequence)")
    }
    while true {
        let next = store.lastSequence + 1
        let sequence = try store.write { txn in
            for (table, key, value) in KillWorkload.operations(of: next) {
                if let value { try txn.put(table: table, key: key, value: value) } else { try txn.delete(table: table, key: key) }
            }
        }
        guard sequence == next else {
            emit("unexpected sequence \(sequence), wanted \(next)", to: 2)
            exit(1)
        }
        emit("ack \(sequence)")
    }
} catch {
    emit("strata-crash-helper: \(error)", to: 2)
    exit(1)
}
