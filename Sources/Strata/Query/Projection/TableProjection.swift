// TableProjection: one table of one snapshot as columns — dense ordinals ↔ keys and a
// typed vector per projected property — so a filter is a tight loop over a column instead
// of a hash-order walk that decodes every row into `FieldValue`s. Built from a scan of the
// snapshot the first time a query needs it, extended one column at a time, and shared by
// every realm of the store reading that snapshot (a snapshot never changes). The column
// evaluator here must answer exactly what `QueryExpression.matches` (the row evaluator)
// answers; `QueryEquivalenceTests` and the differential tests hold both to it.
// docs/ARCHITECTURE.md, "The seam between reads and writes", has where this is going
// (maintained per commit, persisted beside the hints).

import Foundation
import StrataStorage

/// A property's values over a projection's ordinals.
enum ProjectedColumn {
    /// Integers; `nulls[i]` when the value is nil (nil array: none is).
    case int([Int64], nulls: [Bool]?)
    /// Doubles.
    case double([Double], nulls: [Bool]?)
    /// Dates as seconds since the reference date (what `Date` compares).
    case date([Double], nulls: [Bool]?)
    /// Strings as codes into a dictionary of distinct values (-1: nil). Equal strings
    /// (canonically equivalent ones included, as `String` hashes) share one code.
    case string(codes: [Int32], dictionary: [String])
    /// Any other kind, as decoded.
    case values([FieldValue])

    func value(at ordinal: Int) -> FieldValue {
        switch self {
        case .int(let values, let nulls): return nulls?[ordinal] == true ? .null : .int(values[ordinal])
        case .double(let values, let nulls): return nulls?[ordinal] == true ? .null : .double(values[ordinal])
        case .date(let values, let nulls):
            return nulls?[ordinal] == true ? .null : .date(Date(timeIntervalSinceReferenceDate: values[ordinal]))
        case .string(let codes, let dictionary): return codes[ordinal] < 0 ? .null : .string(dictionary[Int(codes[ordinal])])
        case .values(let values): return values[ordinal]
        }
    }

    /// Bytes held, for memory accounting.
    var byteCount: Int {
        switch self {
        case .int(let v, let n): return v.count * 8 + (n?.count ?? 0)
        case .double(let v, let n), .date(let v, let n): return v.count * 8 + (n?.count ?? 0)
        case .string(let codes, let dictionary): return codes.count * 4 + dictionary.reduce(0) { $0 + $1.utf8.count + 16 }
        case .values(let values): return values.count * MemoryLayout<FieldValue>.stride
        }
    }

    /// Collects a column from decoded values, choosing the typed form from what it sees.
    struct Builder {
        private var kind: Kind = .undecided
        private var ints: [Int64] = [], doubles: [Double] = [], nulls: [Bool] = []
        private var anyNull = false
        private var codes: [Int32] = [], dictionary: [String] = [], codeOf: [String: Int32] = [:]
        private var values: [FieldValue] = []
        private var count = 0

        private enum Kind { case undecided, int, double, date, string, values }

        init(capacity: Int) {
            nulls.reserveCapacity(capacity)
        }

        mutating func append(_ value: FieldValue) {
            if kind == .undecided, value != .null {
                switch value {
                case .int: kind = .int
                case .double: kind = .double
                case .date: kind = .date
                case .string: kind = .string
                default: kind = .values
                }
                // Rows seen so far were all nil.
                switch kind {
                case .int: ints = Array(repeating: 0, count: count)
                case .double, .date: doubles = Array(repeating: 0, count: count)
                case .string: codes = Array(repeating: -1, count: count)
                default: values = Array(repeating: .null, count: count)
                }
            }
            count += 1
            switch (kind, value) {
            case (.undecided, _):
                nulls.append(true)
                anyNull = true
            case (.int, .int(let i)): ints.append(i); nulls.append(false)
            case (.double, .double(let d)): doubles.append(d); nulls.append(false)
            case (.date, .date(let d)): doubles.append(d.timeIntervalSinceReferenceDate); nulls.append(false)
            case (.int, .null): ints.append(0); nulls.append(true); anyNull = true
            case (.double, .null), (.date, .null): doubles.append(0); nulls.append(true); anyNull = true
            case (.string, .string(let s)):
                if let code = codeOf[s] {
                    codes.append(code)
                } else {
                    let code = Int32(dictionary.count)
                    dictionary.append(s)
                    codeOf[s] = code
                    codes.append(code)
                }
            case (.string, .null): codes.append(-1)
            case (.values, _): values.append(value)
            default:
                // Mixed kinds in one column (a damaged or hand-written row): keep every value.
                var all = (0 ..< count - 1).map { ProjectedColumn.Builder.value(at: $0, of: self) }
                all.append(value)
                values = all
                kind = .values
            }
        }

        private static func value(at i: Int, of b: Builder) -> FieldValue {
            switch b.kind {
            case .undecided: return .null
            case .int: return b.nulls[i] ? .null : .int(b.ints[i])
            case .double: return b.nulls[i] ? .null : .double(b.doubles[i])
            case .date: return b.nulls[i] ? .null : .date(Date(timeIntervalSinceReferenceDate: b.doubles[i]))
            case .string: return b.codes[i] < 0 ? .null : .string(b.dictionary[Int(b.codes[i])])
            case .values: return b.values[i]
            }
        }

        func build() -> ProjectedColumn {
            let nulls = anyNull ? self.nulls : nil
            switch kind {
            case .undecided: return .values(Array(repeating: .null, count: count))
            case .int: return .int(ints, nulls: nulls)
            case .double: return .double(doubles, nulls: nulls)
            case .date: return .date(doubles, nulls: nulls)
            case .string: return .string(codes: codes, dictionary: dictionary)
            case .values: return .values(values)
            }
        }
    }
}

/// A set of ordinals as bits.
struct OrdinalSet {
    private(set) var words: [UInt64]
    let count: Int

    init(count: Int, all: Bool) {
        self.count = count
        words = Array(repeating: all ? ~0 : 0, count: (count + 63) / 64)
        if all, count % 64 != 0 { words[words.count - 1] = (1 << UInt64(count % 64)) - 1 }
    }

    subscript(ordinal: Int) -> Bool {
        get { words[ordinal >> 6] & (1 << UInt64(ordinal & 63)) != 0 }
        set {
            if newValue { words[ordinal >> 6] |= 1 << UInt64(ordinal & 63) } else { words[ordinal >> 6] &= ~(1 << UInt64(ordinal & 63)) }
        }
    }

    mutating func formIntersection(_ other: OrdinalSet) { for i in words.indices { words[i] &= other.words[i] } }
    mutating func formUnion(_ other: OrdinalSet) { for i in words.indices { words[i] |= other.words[i] } }
    mutating func subtract(_ other: OrdinalSet) { for i in words.indices { words[i] &= ~other.words[i] } }

    var population: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// The ordinals in the set, ascending.
    var ordinals: [Int32] {
        var result: [Int32] = []
        result.reserveCapacity(population)
        for (w, word) in words.enumerated() {
            var bits = word
            while bits != 0 {
                result.append(Int32(w << 6 + bits.trailingZeroBitCount))
                bits &= bits - 1
            }
        }
        return result
    }

    /// Sets the bit of every ordinal where `test` holds.
    static func matching(count: Int, _ test: (Int) -> Bool) -> OrdinalSet {
        var set = OrdinalSet(count: count, all: false)
        set.words.withUnsafeMutableBufferPointer { words in
            var ordinal = 0
            for w in 0 ..< words.count {
                var word: UInt64 = 0
                let end = min(64, count - ordinal)
                for bit in 0 ..< end where test(ordinal + bit) { word |= 1 << UInt64(bit) }
                words[w] = word
                ordinal += 64
            }
        }
        return set
    }
}

/// One table of one snapshot, projected.
final class TableProjection: @unchecked Sendable {
    // @unchecked: `columns` and `damage` are guarded by `lock`; the rest never changes.
    let table: UInt32
    /// The snapshot's sequence: the projection answers for that commit only.
    let sequence: UInt64
    /// Ordinal → engine key, for every record of the table that could be read: the keys'
    /// bytes end to end, and where each ends (two arrays, not one array per key).
    private let keyBytes: [UInt8]
    private let keyEnds: [Int]
    private let snapshot: Snapshot
    private let lock = NSLock()
    private var columns: [Int: ProjectedColumn] = [:]
    /// Per property: the ordinals whose field did not decode (left out of filtered results).
    private var damage: [Int: OrdinalSet] = [:]

    private init(table: UInt32, snapshot: Snapshot, keyBytes: [UInt8], keyEnds: [Int]) {
        self.table = table
        self.snapshot = snapshot
        sequence = snapshot.sequence
        self.keyBytes = keyBytes
        self.keyEnds = keyEnds
    }

    /// The number of ordinals.
    var count: Int { keyEnds.count }

    /// The key of `ordinal`.
    func key(_ ordinal: Int) -> [UInt8] {
        Array(keyBytes[(ordinal == 0 ? 0 : keyEnds[ordinal - 1]) ..< keyEnds[ordinal]])
    }

    /// Whether `ordinal`'s key is `key` (no copy).
    private func key(_ ordinal: Int, is key: UnsafeRawBufferPointer) -> Bool {
        let start = ordinal == 0 ? 0 : keyEnds[ordinal - 1]
        return keyEnds[ordinal] - start == key.count && keyBytes[start ..< keyEnds[ordinal]].elementsEqual(key)
    }

    /// Projects `table` of `snapshot` with `properties` (one scan). Unreadable records are
    /// handed to `damaged` and have no ordinal.
    static func build(table: UInt32, snapshot: Snapshot, properties: [Int],
                      damaged: (_ key: [UInt8], _ error: any Error) -> Void) -> TableProjection {
        let expected = snapshot.count(table: table)
        var keyBytes: [UInt8] = [], keyEnds: [Int] = []
        keyEnds.reserveCapacity(expected)
        var builders = properties.map { _ in ProjectedColumn.Builder(capacity: expected) }
        var fieldDamage = properties.map { _ in [Int]() }
        snapshot.scanEntries(table: table, damaged: damaged) { entry in
            let ordinal = keyEnds.count
            entry.withKeyBytes { keyBytes.append(contentsOf: $0) }
            keyEnds.append(keyBytes.count)
            for (position, property) in properties.enumerated() {
                do {
                    builders[position].append(try RowFormat.field(property, of: entry.value))
                } catch {
                    builders[position].append(.null)
                    fieldDamage[position].append(ordinal)
                    damaged(entry.key, error)
                }
            }
        }
        let projection = TableProjection(table: table, snapshot: snapshot, keyBytes: keyBytes, keyEnds: keyEnds)
        for (position, property) in properties.enumerated() {
            projection.store(builders[position].build(), damaged: fieldDamage[position], for: property)
        }
        return projection
    }

    private func store(_ column: ProjectedColumn, damaged: [Int], for property: Int) {
        var set = OrdinalSet(count: count, all: false)
        for ordinal in damaged { set[ordinal] = true }
        lock.withLock {
            columns[property] = column
            damage[property] = set
        }
    }

    /// Property `property`'s column, projected now if it is not yet (one more scan of the
    /// same snapshot, which visits its records in the same order). Nil if the scan did not
    /// line up (it always does for an unchanged snapshot; checked, not assumed).
    func column(_ property: Int, damaged: (_ key: [UInt8], _ error: any Error) -> Void) -> ProjectedColumn? {
        if let column = lock.withLock({ columns[property] }) { return column }
        var builder = ProjectedColumn.Builder(capacity: count)
        var fieldDamage: [Int] = []
        var ordinal = 0
        var aligned = true
        snapshot.scanEntries(table: table, damaged: { _, _ in }) { entry in
            guard aligned, ordinal < count, entry.withKeyBytes({ self.key(ordinal, is: $0) }) else {
                aligned = false
                return
            }
            do {
                builder.append(try RowFormat.field(property, of: entry.value))
            } catch {
                builder.append(.null)
                fieldDamage.append(ordinal)
                damaged(entry.key, error)
            }
            ordinal += 1
        }
        guard aligned, ordinal == count else { return nil }
        let column = builder.build()
        store(column, damaged: fieldDamage, for: property)
        return column
    }

    /// The ordinals whose field `property` did not decode.
    func damagedOrdinals(_ property: Int) -> OrdinalSet? { lock.withLock { damage[property] } }

    /// Bytes held by the projected columns and keys.
    var byteCount: Int {
        lock.withLock { columns.values.reduce(0) { $0 + $1.byteCount } } + keyBytes.count + keyEnds.count * 8
    }
}

// MARK: The column evaluator

extension TableProjection {
    /// The ordinals matching `expression`, every field it reads decoded (rows with a
    /// damaged field in one of them are left out, as the row path leaves them out); nil if
    /// a column could not be projected.
    func select(_ expression: QueryExpression, damaged: (_ key: [UInt8], _ error: any Error) -> Void) -> OrdinalSet? {
        var columns: [Int: ProjectedColumn] = [:]
        var excluded = OrdinalSet(count: count, all: false)
        for property in expression.properties {
            guard let column = column(property, damaged: damaged) else { return nil }
            columns[property] = column
            if let bad = damagedOrdinals(property) { excluded.formUnion(bad) }
        }
        var result = evaluate(expression, columns)
        result.subtract(excluded)
        return result
    }

    private func evaluate(_ expression: QueryExpression, _ columns: [Int: ProjectedColumn]) -> OrdinalSet {
        switch expression {
        case .constant(let value):
            return OrdinalSet(count: count, all: value)
        case .and(let terms):
            var result = OrdinalSet(count: count, all: true)
            for term in terms { result.formIntersection(evaluate(term, columns)) }
            return result
        case .or(let terms):
            var result = OrdinalSet(count: count, all: false)
            for term in terms { result.formUnion(evaluate(term, columns)) }
            return result
        case .not(let term):
            var result = OrdinalSet(count: count, all: true)
            result.subtract(evaluate(term, columns))
            return result
        case .compare(.property(let index), let op, .constant(let constant)):
            return compare(columns[index]!, op, constant)
        case .compare(let a, let op, let b):
            // Two properties (or two constants): the row evaluator's rule on column values.
            func value(_ operand: QueryOperand, _ ordinal: Int) -> FieldValue {
                switch operand {
                case .property(let index): return columns[index]!.value(at: ordinal)
                case .constant(let value): return value
                }
            }
            return OrdinalSet.matching(count: count) { op.holds(value(a, $0), value(b, $0)) }
        }
    }

    /// `column op constant` over every ordinal, in a loop over the typed values where the
    /// constant is of the column's kind; by the row rule otherwise.
    private func compare(_ column: ProjectedColumn, _ op: QueryComparison, _ constant: FieldValue) -> OrdinalSet {
        switch (column, constant) {
        case (.int(let values, let nulls), .int(let c)):
            return Self.loop(values, nulls, op, c)
        case (.double(let values, let nulls), .double(let c)):
            return Self.loop(values, nulls, op, c)
        case (.date(let values, let nulls), .date(let c)):
            return Self.loop(values, nulls, op, c.timeIntervalSinceReferenceDate)
        case (.string(let codes, let dictionary), .string):
            // Judge each distinct value once, then the codes.
            let accepted = dictionary.map { op.holds(.string($0), constant) }
            let nullAccepted = op.holds(.null, constant)
            return codes.withUnsafeBufferPointer { codes in
                accepted.withUnsafeBufferPointer { accepted in
                    OrdinalSet.matching(count: count) { codes[$0] < 0 ? nullAccepted : accepted[Int(codes[$0])] }
                }
            }
        default:
            return OrdinalSet.matching(count: count) { op.holds(column.value(at: $0), constant) }
        }
    }

    /// A typed loop with the row rule's meaning: nil equals only nil, differs from every
    /// value, and is never ordered; the value's own operators otherwise.
    private static func loop<T: Comparable>(_ values: [T], _ nulls: [Bool]?, _ op: QueryComparison, _ c: T) -> OrdinalSet {
        let count = values.count
        var set: OrdinalSet = values.withUnsafeBufferPointer { v in
            switch op {
            case .equal: return OrdinalSet.matching(count: count) { v[$0] == c }
            case .notEqual: return OrdinalSet.matching(count: count) { v[$0] != c }
            case .less: return OrdinalSet.matching(count: count) { v[$0] < c }
            case .lessOrEqual: return OrdinalSet.matching(count: count) { v[$0] <= c }
            case .greater: return OrdinalSet.matching(count: count) { v[$0] > c }
            case .greaterOrEqual: return OrdinalSet.matching(count: count) { v[$0] >= c }
            }
        }
        if let nulls {
            for ordinal in 0 ..< count where nulls[ordinal] { set[ordinal] = op == .notEqual }
        }
        return set
    }
}

// MARK: Sorting on columns

extension TableProjection {
    /// `ordinals` in the order of `sortKeys` (then the engine key, as every sort ends), by
    /// the columns' own values: no `FieldValue` is made per comparison. Nil first, as
    /// `SortDescriptor` orders; NaN as `QueryCompiler.order` orders it (neither before nor
    /// after a number: equal to it, so the key decides).
    func sorted(_ ordinals: [Int32], by sortKeys: [(column: ProjectedColumn, reverse: Bool)]) -> [Int32] {
        var ordinals = ordinals
        keyBytes.withUnsafeBufferPointer { bytes in
            keyEnds.withUnsafeBufferPointer { ends in
                func keyPrecedes(_ a: Int, _ b: Int) -> Bool {
                    let x = UnsafeBufferPointer(rebasing: bytes[(a == 0 ? 0 : ends[a - 1]) ..< ends[a]])
                    let y = UnsafeBufferPointer(rebasing: bytes[(b == 0 ? 0 : ends[b - 1]) ..< ends[b]])
                    return x.lexicographicallyPrecedes(y)
                }
                ordinals.sort { a, b in
                    let a = Int(a), b = Int(b)
                    for (column, reverse) in sortKeys {
                        let order = Self.order(column, a, b)
                        if order != .orderedSame { return (order == .orderedAscending) != reverse }
                    }
                    return keyPrecedes(a, b)
                }
            }
        }
        return ordinals
    }

    private static func order(_ column: ProjectedColumn, _ a: Int, _ b: Int) -> ComparisonResult {
        func typed<T: Comparable>(_ values: [T], _ nulls: [Bool]?) -> ComparisonResult {
            if let nulls, nulls[a] || nulls[b] {
                return nulls[a] == nulls[b] ? .orderedSame : nulls[a] ? .orderedAscending : .orderedDescending
            }
            let x = values[a], y = values[b]
            return x < y ? .orderedAscending : y < x ? .orderedDescending : .orderedSame
        }
        switch column {
        case .int(let values, let nulls): return typed(values, nulls)
        case .double(let values, let nulls), .date(let values, let nulls): return typed(values, nulls)
        default: return QueryCompiler.order(column.value(at: a), column.value(at: b))
        }
    }
}
