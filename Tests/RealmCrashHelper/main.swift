// strata-realm-crash-helper: the child process of the realm SIGKILL test. It opens the
// realm in the directory given and performs RealmWorkload writes forever, printing
// "ack <n>" after each write returns, until the parent kills it.
//
//   strata-realm-crash-helper <directory> [turns]
//
// `turns`: the realm is written in turns with other processes
// (`storeOptions.multiProcessWriting`): each write performs the workload's write number
// ledger.count + 1, read inside the write, whoever wrote the one before.

#if canImport(Glibc)
import Glibc
#endif
import Strata

func emit(_ line: String, to fd: Int32 = 1) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

let inTurns = CommandLine.arguments.count == 3 && CommandLine.arguments[2] == "turns"
guard CommandLine.arguments.count == 2 || inTurns else {
    emit("usage: strata-realm-crash-helper <directory> [turns]", to: 2)
    exit(2)
}
do {
    var config = Realm.Configuration(directory: URL(fileURLWithPath: CommandLine.arguments[1]))
    config.objectTypes = RealmWorkload.types
    config.storeOptions.segmentSize = 32 << 10
    config.storeOptions.durability = .full
    config.storeOptions.multiProcessWriting = inTurns
    config.storeOptions.lockWaitTimeout = 30
    let realm = try Realm(configuration: config)
    try RealmWorkload.prepare(realm)
    var n = realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count
    emit("ready \(n)")
    while inTurns {
        try realm.write {
            n = realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count + 1
            try RealmWorkload.apply(n, in: realm)
        }
        emit("ack \(n)")
    }
    while true {
        n += 1
        try realm.write { try RealmWorkload.apply(n, in: realm) }
        emit("ack \(n)")
    }
} catch {
    emit("strata-realm-crash-helper: \(error)", to: 2)
    exit(1)
}
