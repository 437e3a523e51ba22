// The workload of the realm SIGKILL test, shared by the child (which runs it) and the test
// (which rebuilds the expected state after any number of writes). Write `n` moves money
// between two accounts, bumps the ledger and records a transfer: after a crash, balances
// must still sum to the opening total and match exactly `ledger.count` writes.

import Strata

final class Account: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var balance: Int = 0
}

final class Ledger: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var count: Int = 0
}

final class Transfer: Object {
    @Persisted var number: Int = 0
    @Persisted(indexed: true) var parity: Int = 0
    @Persisted var note: String = ""
}

enum RealmWorkload {
    static let accounts = 20
    static let openingBalance = 1000
    static let types: [Object.Type] = [Account.self, Ledger.self, Transfer.self]

    /// Write `n` (1-based): (from, to, amount).
    static func transfer(_ n: Int) -> (from: Int, to: Int, amount: Int) {
        (n * 7 % accounts, (n * 13 + 1) % accounts, n % 50 + 1)
    }

    /// Balances after writes 1 ... n.
    static func balances(after n: Int) -> [Int] {
        var balances = Array(repeating: openingBalance, count: accounts)
        guard n > 0 else { return balances }
        for i in 1 ... n {
            let (from, to, amount) = transfer(i)
            balances[from] -= amount
            balances[to] += amount
        }
        return balances
    }

    /// Performs write `n` in `realm` (inside a write transaction).
    static func apply(_ n: Int, in realm: Realm) throws {
        let (from, to, amount) = transfer(n)
        realm.object(ofType: Account.self, forPrimaryKey: from)!.balance -= amount
        realm.object(ofType: Account.self, forPrimaryKey: to)!.balance += amount
        realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count = n
        let record = Transfer()
        record.number = n
        record.parity = n % 2
        record.note = String(repeating: "x", count: n % 300)
        try realm.add(record)
    }

    /// Creates the accounts and the ledger if the store is new.
    static func prepare(_ realm: Realm) throws {
        guard realm.object(ofType: Ledger.self, forPrimaryKey: 0) == nil else { return }
        try realm.write {
            for id in 0 ..< accounts { try realm.create(Account.self, value: ["id": id, "balance": openingBalance]) }
            try realm.create(Ledger.self, value: ["id": 0, "count": 0])
        }
    }
}
