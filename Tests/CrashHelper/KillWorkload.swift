// The workload of the SIGKILL crash test, shared by the child (which runs it) and the
// test (which rebuilds the expected state of any sequence from it). Transaction `s`
// writes values derived from `s` alone, so the state after commit m is a pure function of m.

import Foundation
import StrataStorage

enum KillWorkload {
    static let keys = 37
    /// The key of the encrypted rounds.
    static let encryptionKey = Data((0 ..< 64).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) })

    /// The operations of transaction `sequence`: (table, key, value or nil for delete).
    static func operations(of sequence: UInt64) -> [(UInt32, [UInt8], [UInt8]?)] {
        let s = Int(sequence)
        var ops: [(UInt32, [UInt8], [UInt8]?)] = [
            (1, Array("k\(s % keys)".utf8), Array("v\(s)-".utf8) + [UInt8](repeating: UInt8(s % 251), count: (s * 13) % 900)),
            (1, Array("k\((s * 7) % keys)".utf8), Array("w\(s)".utf8)),
            (2, Array("last".utf8), Array("\(s)".utf8)),
        ]
        if s % 5 == 0 { ops.append((1, Array("k\((s * 3) % keys)".utf8), nil)) }
        return ops
    }

    /// The expected content of table 1 and 2 after commits 1 ... upTo.
    static func model(upTo: UInt64) -> [UInt32: [[UInt8]: [UInt8]]] {
        var model: [UInt32: [[UInt8]: [UInt8]]] = [:]
        guard upTo > 0 else { return model }
        for s in 1 ... upTo {
            for (table, key, value) in operations(of: s) {
                if let value { model[table, default: [:]][key] = value } else { model[table]?[key] = nil }
            }
        }
        return model.filter { !$0.value.isEmpty }
    }
}
