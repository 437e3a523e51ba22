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
    /// Strings as codes into a dictionary of values (-1: nil). A scan gives equal bytes one
    /// code; a value can still sit under several codes (two canonically equivalent
    /// spellings, or a large dictionary extended by commits without looking values up), so
    /// readers compare entries as `String`s and never assume one code per value.
    case string(codes: [Int32], dictionary: StringDictionary)
    /// Any other kind, as decoded.
    case values([FieldValue])

    /// Whether the column holds one kind of value (with nils): false for `.values`, where a
    /// property's rows held several kinds (a damaged or hand-made row) or none.
    var isTyped: Bool {
        if case .values = self { return false }
        return true
    }

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

    /// Makes room for ordinals up to `count`, the new ones nil (set by the caller).
    mutating func grow(to count: Int) {
        func grown<T>(_ values: inout [T], _ nulls: [Bool]?, _ zero: T) -> [Bool] {
            let old = values.count
            values.append(contentsOf: repeatElement(zero, count: Swift.max(0, count - old)))
            var marks = nulls ?? Array(repeating: false, count: old)
            marks.append(contentsOf: repeatElement(true, count: Swift.max(0, count - old)))
            return marks
        }
        switch self {
        case .int(var values, let nulls):
            let marks = grown(&values, nulls, 0)
            self = .int(values, nulls: marks)
        case .double(var values, let nulls):
            let marks = grown(&values, nulls, 0)
            self = .double(values, nulls: marks)
        case .date(var values, let nulls):
            let marks = grown(&values, nulls, 0)
            self = .date(values, nulls: marks)
        case .string(var codes, let dictionary):
            codes.append(contentsOf: repeatElement(-1, count: Swift.max(0, count - codes.count)))
            self = .string(codes: codes, dictionary: dictionary)
        case .values(var values):
            values.append(contentsOf: repeatElement(.null, count: Swift.max(0, count - values.count)))
            self = .values(values)
        }
    }

    /// Sets the values of some ordinals, in one pass: the column's arrays are taken out of
    /// the enum first, so they are changed in place (copied at most once, when another
    /// projection shares them). A value of another kind than the column's turns the column
    /// into plain values; a changed string gets a new dictionary entry (judging a query
    /// reads each entry once, whatever repeats).
    mutating func set(_ updates: [(ordinal: Int, value: FieldValue)]) {
        guard !updates.isEmpty else { return }
        switch self {
        case .int(var values, var nulls):
            self = .values([])  // the arrays' only holders are now these bindings (and older projections)
            let typed = Self.apply(updates, to: &values, &nulls) { if case .int(let i) = $0 { return i } else { return nil } }
            self = typed ? .int(values, nulls: nulls) : Self.plain(.int(values, nulls: nulls), updates)
        case .double(var values, var nulls):
            self = .values([])
            let typed = Self.apply(updates, to: &values, &nulls) { if case .double(let d) = $0 { return d } else { return nil } }
            self = typed ? .double(values, nulls: nulls) : Self.plain(.double(values, nulls: nulls), updates)
        case .date(var values, var nulls):
            self = .values([])
            let typed = Self.apply(updates, to: &values, &nulls) { if case .date(let d) = $0 { return d.timeIntervalSinceReferenceDate } else { return nil } }
            self = typed ? .date(values, nulls: nulls) : Self.plain(.date(values, nulls: nulls), updates)
        case .string(var codes, var dictionary):
            self = .values([])
            // A value already in a small dictionary keeps its one code (equalities on a
            // crowded column judge one code, and read its postings); a large dictionary
            // takes a new entry rather than a map of every string.
            var known: [String: Int32]?
            for (ordinal, value) in updates {
                switch value {
                case .string(let string) where codes[ordinal] >= 0 && dictionary[Int(codes[ordinal])] == string:
                    continue  // (the row changed elsewhere)
                case .string(let string) where dictionary.count <= Self.reusedCodesLimit
                    && Self.code(of: string, in: dictionary, &known) != nil:
                    codes[ordinal] = known![string]!
                case .string(let string) where dictionary.canAppend(string):
                    codes[ordinal] = Int32(dictionary.count)
                    known?[string] = Int32(dictionary.count)
                    dictionary.append(string)
                case .null:
                    codes[ordinal] = -1
                default:
                    self = Self.plain(.string(codes: codes, dictionary: dictionary), updates)
                    return
                }
            }
            self = .string(codes: codes, dictionary: dictionary)
        case .values(var values):
            self = .values([])
            for (ordinal, value) in updates { values[ordinal] = value }
            self = .values(values)
        }
    }

    /// Dictionaries up to this many strings are searched for a changed row's value.
    static let reusedCodesLimit = 4096

    /// The code of `string` in `dictionary` (the first, if it is there twice), the map of
    /// codes made on first use.
    private static func code(of string: String, in dictionary: StringDictionary, _ known: inout [String: Int32]?) -> Int32? {
        if known == nil {
            var map: [String: Int32] = [:]
            for (code, value) in dictionary.map({ $0 }).enumerated() where map[value] == nil { map[value] = Int32(code) }
            known = map
        }
        return known![string]
    }

    /// Typed updates; false (some applied) if one is of another kind than the column's.
    private static func apply<T>(_ updates: [(ordinal: Int, value: FieldValue)], to values: inout [T], _ nulls: inout [Bool]?,
                                 _ typed: (FieldValue) -> T?) -> Bool {
        for (ordinal, value) in updates {
            if let typedValue = typed(value) {
                values[ordinal] = typedValue
                nulls?[ordinal] = false
            } else if value == .null {
                if nulls == nil { nulls = Array(repeating: false, count: values.count) }
                nulls![ordinal] = true
            } else {
                return false
            }
        }
        return true
    }

    private static func plain(_ column: ProjectedColumn, _ updates: [(ordinal: Int, value: FieldValue)]) -> ProjectedColumn {
        var values = (0 ..< column.count).map { column.value(at: $0) }
        for (ordinal, value) in updates { values[ordinal] = value }
        return .values(values)
    }

    /// The number of ordinals the column covers.
    var count: Int {
        switch self {
        case .int(let v, _): return v.count
        case .double(let v, _), .date(let v, _): return v.count
        case .string(let codes, _): return codes.count
        case .values(let v): return v.count
        }
    }

    /// Bytes held, for memory accounting.
    var byteCount: Int {
        switch self {
        case .int(let v, let n): return v.count * 8 + (n?.count ?? 0)
        case .double(let v, let n), .date(let v, let n): return v.count * 8 + (n?.count ?? 0)
        case .string(let codes, let dictionary): return codes.count * 4 + dictionary.byteCount
        case .values(let values): return values.count * MemoryLayout<FieldValue>.stride
        }
    }

    /// Collects a column from decoded values, choosing the typed form from what it sees.
    struct Builder {
        private var kind: Kind = .undecided
        private var ints: [Int64] = [], doubles: [Double] = [], nulls: [Bool] = []
        private var anyNull = false
        private var codes: [Int32] = [], dictionary = StringDictionary(), codeOf = DictionaryCodes()
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
            case (.string, .string(let s)) where dictionary.canAppend(s):
                var s = s
                codes.append(s.withUTF8 { codeOf.code(of: UnsafeRawBufferPointer($0), in: &dictionary) })
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
    private(set) var count: Int

    /// The set whose bits are `words` (as `words` holds them), for `count` ordinals; bits
    /// past `count` are cleared. Nil when `words` is not the length `count` needs.
    init?(words: [UInt64], count: Int) {
        guard count >= 0, words.count == (count + 63) / 64 else { return nil }
        self.count = count
        self.words = words
        if count % 64 != 0 { self.words[words.count - 1] &= (1 << UInt64(count % 64)) - 1 }
    }

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

    /// Makes room for ordinals up to `newCount` (the new ones not in the set).
    mutating func grow(to newCount: Int) {
        guard newCount > count else { return }
        count = newCount
        let needed = (newCount + 63) / 64
        if words.count < needed { words.append(contentsOf: repeatElement(0, count: needed - words.count)) }
    }

    /// Adds one ordinal at the end.
    mutating func append(_ member: Bool) {
        grow(to: count + 1)
        self[count - 1] = member
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

    /// The ordinals whose code is `code`: eight codes compared at once (SIMD), each
    /// comparison's mask folded into a byte of the set's word.
    static func equal(_ codes: [Int32], _ code: Int32) -> OrdinalSet {
        var set = OrdinalSet(count: codes.count, all: false)
        let wanted = SIMD8<Int32>(repeating: code)
        let weights = SIMD8<Int32>(1, 2, 4, 8, 16, 32, 64, 128), zero = SIMD8<Int32>(repeating: 0)
        codes.withUnsafeBufferPointer { codes in
            set.words.withUnsafeMutableBufferPointer { words in
                let whole = codes.count / 64
                for w in 0 ..< whole {
                    var word: UInt64 = 0
                    for part in 0 ..< 8 {
                        let base = w * 64 + part * 8
                        let lanes = SIMD8<Int32>(codes[base], codes[base + 1], codes[base + 2], codes[base + 3],
                                                 codes[base + 4], codes[base + 5], codes[base + 6], codes[base + 7])
                        let byte = zero.replacing(with: weights, where: lanes .== wanted).wrappedSum()
                        word |= UInt64(byte) << UInt64(part * 8)
                    }
                    words[w] = word
                }
                for ordinal in whole * 64 ..< codes.count where codes[ordinal] == code {
                    words[ordinal >> 6] |= 1 << UInt64(ordinal & 63)
                }
            }
        }
        return set
    }

    /// Sets the bit of every ordinal where `test` holds. Inlined into each caller, so the
    /// test is a plain comparison in a branch-free loop, not a call per ordinal.
    @inline(__always)
    static func matching(count: Int, _ test: (Int) -> Bool) -> OrdinalSet {
        var set = OrdinalSet(count: count, all: false)
        set.words.withUnsafeMutableBufferPointer { words in
            var ordinal = 0
            for w in 0 ..< words.count {
                var word: UInt64 = 0
                let end = Swift.min(64, count - ordinal)
                for bit in 0 ..< end {
                    word |= UInt64(test(ordinal + bit) ? 1 : 0) &<< UInt64(bit)
                }
                words[w] = word
                ordinal += 64
            }
        }
        return set
    }
}

/// One table of one snapshot, projected.
///
/// A projection is immutable once made (columns are added, never changed): a newer
/// commit gets a new projection, *advanced* from the previous one by the commit's change
/// set when it is known (the changed rows re-read, deleted ordinals marked dead, inserted
/// ones appended; the arrays copied once, not rebuilt from a scan), else built again.
final class TableProjection: @unchecked Sendable {
    // @unchecked: `columns`, `damage` and `ordinalTable` are guarded by `lock`; the rest
    // never changes after init.
    let table: UInt32
    /// The snapshot's sequence: the projection answers for that commit only.
    let sequence: UInt64
    /// Ordinal → engine key: the keys' bytes end to end, and where each ends (two arrays,
    /// not one array per key). Dead ordinals keep their key.
    let keyBytes: [UInt8]
    let keyEnds: [Int]
    /// The ordinals whose object exists at `sequence` (nil: all of them).
    let live: OrdinalSet?
    let snapshot: Snapshot
    /// Whether a scan of `snapshot` visits the records in ordinal order (a fresh build), so
    /// a column can be added by a scan rather than a look-up per key.
    let scanOrdered: Bool
    /// The columns the persisted file this projection was read from holds (nil: not read
    /// from one): closing the store need not write the same file again.
    let persistedColumns: Set<Int>?
    private let lock = NSLock()
    /// Whether a record or field did not read while building or advancing this projection
    /// (or one it was advanced from): such a projection is never persisted, so that the
    /// next open reads the damage again and reports it.
    private var sawDamage = false
    private var columns: [Int: ProjectedColumn] = [:]
    /// Per property: the ordinals whose field did not decode (left out of filtered results).
    private var damage: [Int: OrdinalSet] = [:]
    /// Key → ordinal, made when the projection is first advanced.
    private var ordinalTable: KeyOrdinalTable?
    /// Ordinals whose row was found missing while advancing to this projection.
    private var missing: [Int] = []
    /// Per crowded string property an equality was asked on: each code's ordinals (live,
    /// undamaged) in key order, carried to newer commits' projections …
    private var postings: [Int: Postings] = [:]
    /// … and its dictionary's codes by value (nil when a value has two codes: then each
    /// entry is judged), so an equality finds its code without decoding every entry.
    private var codesByValue: [Int: [String: Int32]?] = [:]

    /// A string property's matches per value, kept like a covering index, in key order:
    /// each code's integer primary keys when the table's keys are integers (`map(\.id)`
    /// copies them; reading 10k keys scattered through the arena cost three cache misses
    /// each), else each code's ordinals.
    enum Postings {
        case integerKeys([[Int64]])
        case ordinals([[Int32]])

        var byteCount: Int {
            switch self {
            case .integerKeys(let lists): return lists.reduce(0) { $0 + $1.count * 8 }
            case .ordinals(let lists): return lists.reduce(0) { $0 + $1.count * 4 }
            }
        }
    }

    /// One value's entry of a property's postings.
    enum Posting {
        case integerKeys([Int64])
        case ordinals([Int32])
    }

    init(table: UInt32, snapshot: Snapshot, keyBytes: [UInt8], keyEnds: [Int], live: OrdinalSet?, scanOrdered: Bool,
         persistedColumns: Set<Int>? = nil) {
        self.table = table
        self.snapshot = snapshot
        sequence = snapshot.sequence
        self.keyBytes = keyBytes
        self.keyEnds = keyEnds
        self.live = live
        self.scanOrdered = scanOrdered
        self.persistedColumns = persistedColumns
    }

    /// Sets the columns a persisted file held (none of them damaged: such columns are never
    /// persisted).
    func restore(_ restored: [Int: ProjectedColumn]) {
        let clean = OrdinalSet(count: count, all: false)
        lock.withLock {
            for (property, column) in restored {
                columns[property] = column
                damage[property] = clean
            }
        }
    }

    /// Notes that a record or field did not read (see `sawDamage`).
    private func noteDamage() { lock.withLock { sawDamage = true } }

    /// The typed columns, when nothing in this projection's making failed to read: what a
    /// persisted file holds (columns of other kinds are projected again on demand).
    var persistableColumns: [Int: ProjectedColumn]? {
        lock.withLock {
            guard !sawDamage, missing.isEmpty, damage.values.allSatisfy({ $0.population == 0 }) else { return nil }
            return columns.filter { $0.value.isTyped }
        }
    }

    /// The number of ordinals (dead ones included).
    var count: Int { keyEnds.count }
    /// The number of dead ordinals.
    var deadCount: Int { live.map { count - $0.population } ?? 0 }

    /// The key of `ordinal`.
    func key(_ ordinal: Int) -> [UInt8] {
        Array(keySlice(ordinal))
    }

    /// The integer primary keys of `ordinals`, read from the arena; nil unless every one
    /// is an integer key.
    func integerKeys(_ ordinals: ArraySlice<Int32>) -> [Int64]? {
        keyBytes.withUnsafeBytes { bytes in
            keyEnds.withUnsafeBufferPointer { ends in
                var values = [Int64](repeating: 0, count: ordinals.count)
                let ok = values.withUnsafeMutableBufferPointer { values -> Bool in
                    for (position, ordinal) in ordinals.enumerated() {
                        let o = Int(ordinal), start = o == 0 ? 0 : ends[o - 1]
                        // (Checked: an integer key is its kind byte and eight bytes.)
                        guard ends[o] - start == 9, bytes[start] == PrimaryKeyValue.integerKind else { return false }
                        let raw = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: start + 1, as: UInt64.self))
                        values[position] = PrimaryKeyValue.integer(orderValue: raw)
                    }
                    return true
                }
                return ok ? values : nil
            }
        }
    }

    /// The ordinal of `key`, live or dead; nil when the projection never held it. Builds
    /// the key → ordinal table on first use (an advance builds it too, and passes it on).
    func ordinal(of key: [UInt8]) -> Int? {
        keyOrdinalTable.find(key, keyBytes: keyBytes, keyEnds: keyEnds)
    }

    /// The key → ordinal table, built on first use.
    private var keyOrdinalTable: KeyOrdinalTable {
        lock.withLock {
            if let built = ordinalTable { return built }
            let built = KeyOrdinalTable(keyBytes: keyBytes, keyEnds: keyEnds)
            ordinalTable = built
            return built
        }
    }

    /// `ordinal`'s key in the arena (no copy).
    func keySlice(_ ordinal: Int) -> ArraySlice<UInt8> {
        keyBytes[(ordinal == 0 ? 0 : keyEnds[ordinal - 1]) ..< keyEnds[ordinal]]
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
        var sawDamage = false
        snapshot.scanRecords(table: table, damaged: { key, error in sawDamage = true; damaged(key, error) }) { key, value in
            let ordinal = keyEnds.count
            keyBytes.append(contentsOf: key)
            keyEnds.append(keyBytes.count)
            for position in properties.indices {
                do {
                    builders[position].append(try RowFormat.field(properties[position], of: value))
                } catch {
                    builders[position].append(.null)
                    fieldDamage[position].append(ordinal)
                    damaged(Array(key), error)
                }
            }
        }
        let projection = TableProjection(table: table, snapshot: snapshot, keyBytes: keyBytes, keyEnds: keyEnds,
                                         live: nil, scanOrdered: true)
        if sawDamage { projection.noteDamage() }
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

    /// Property `property`'s column, projected now if it is not yet: by one more scan of
    /// the same snapshot when it visits the records in ordinal order (checked, not
    /// assumed: a projection read from its file may have been ordered by another index),
    /// else by a look-up per ordinal. Nil if a record vanished (it cannot for an unchanged
    /// snapshot).
    func column(_ property: Int, damaged: (_ key: [UInt8], _ error: any Error) -> Void) -> ProjectedColumn? {
        if let column = lock.withLock({ columns[property] }) { return column }
        var builder = ProjectedColumn.Builder(capacity: count)
        var fieldDamage: [Int] = []
        var noted: [(key: [UInt8], error: any Error)] = []
        func add(_ ordinal: Int, _ row: some ContiguousBytes) {
            do {
                builder.append(try RowFormat.field(property, of: row))
            } catch {
                builder.append(.null)
                fieldDamage.append(ordinal)
                noted.append((key(ordinal), error))
            }
        }
        var scanned = false
        if scanOrdered {
            var ordinal = 0
            var aligned = true
            snapshot.scanRecords(table: table, damaged: { _, _ in }) { key, value in
                guard aligned, ordinal < count, self.key(ordinal, is: key) else {
                    aligned = false
                    return
                }
                add(ordinal, value)
                ordinal += 1
            }
            scanned = aligned && ordinal == count
            if !scanned {
                builder = ProjectedColumn.Builder(capacity: count)
                fieldDamage = []
                noted = []
            }
        }
        if !scanned {
            for ordinal in 0 ..< count {
                guard live?[ordinal] ?? true else {
                    builder.append(.null)
                    continue
                }
                let row: StoredValue?
                do {
                    row = try snapshot.storedValue(table: table, key: key(ordinal))
                } catch {
                    builder.append(.null)
                    fieldDamage.append(ordinal)
                    noted.append((key(ordinal), error))
                    continue
                }
                guard let row else { return nil }
                add(ordinal, row)
            }
        }
        if !noted.isEmpty { noteDamage() }
        for (key, error) in noted { damaged(key, error) }
        let column = builder.build()
        store(column, damaged: fieldDamage, for: property)
        return column
    }

    /// Property `property`'s column if it is already projected (never projects it).
    func projectedColumn(_ property: Int) -> ProjectedColumn? { lock.withLock { columns[property] } }

    /// The ordinals whose field `property` did not decode.
    func damagedOrdinals(_ property: Int) -> OrdinalSet? { lock.withLock { damage[property] } }

    /// The live ordinals (all of them when none is dead).
    var liveOrdinals: OrdinalSet { live ?? OrdinalSet(count: count, all: true) }

    /// Bytes held by each projected column (nil-flags and string dictionaries included).
    var columnByteCounts: [Int: Int] {
        lock.withLock {
            columns.mapValues(\.byteCount).merging(postings.mapValues(\.byteCount), uniquingKeysWith: +)
        }
    }

    /// Bytes held by the ordinal → key arena (the keys' bytes and where each ends).
    var keyByteCount: Int { keyBytes.count + keyEnds.count * MemoryLayout<Int>.stride }

    /// Bytes held by the projected columns and keys.
    var byteCount: Int {
        lock.withLock { columns.values.reduce(0) { $0 + $1.byteCount } + postings.values.reduce(0) { $0 + $1.byteCount } }
            + keyBytes.count + keyEnds.count * 8
    }
}

// MARK: Advancing to a newer commit

extension TableProjection {
    /// This projection moved to `snapshot` (newer), given what happened to the table in
    /// between: rows deleted are marked dead, rows inserted appended, rows changed re-read.
    /// Nil when a fresh build is the better answer (a quarter of the ordinals dead, a string
    /// column's dictionary past twice the ordinals, or a change set that does not fit this
    /// projection).
    func advanced(to snapshot: Snapshot, changes: TableChanges,
                  damaged: (_ key: [UInt8], _ error: any Error) -> Void) -> TableProjection? {
        guard snapshot.sequence > sequence else { return nil }
        var index = keyOrdinalTable
        let (columns, damage, postings) = lock.withLock { (self.columns, self.damage, self.postings) }
        var keyBytes = self.keyBytes, keyEnds = self.keyEnds
        var live = liveOrdinals
        var reread: [Int] = [], deleted: [Int] = []
        for key in changes.deleted {
            guard let ordinal = index.find(key.bytes, keyBytes: keyBytes, keyEnds: keyEnds), live[ordinal] else { return nil }
            live[ordinal] = false
            deleted.append(ordinal)
        }
        for key in changes.modified.keys {
            guard let ordinal = index.find(key.bytes, keyBytes: keyBytes, keyEnds: keyEnds), live[ordinal] else { return nil }
            reread.append(ordinal)
        }
        for key in changes.inserted {
            if let ordinal = index.find(key.bytes, keyBytes: keyBytes, keyEnds: keyEnds) {
                guard !live[ordinal] else { return nil }
                live[ordinal] = true
                reread.append(ordinal)
            } else {
                keyBytes.append(contentsOf: key.bytes)
                keyEnds.append(keyBytes.count)
                live.append(true)
                index.insert(keyEnds.count - 1, keyBytes: keyBytes, keyEnds: keyEnds)
                reread.append(keyEnds.count - 1)
            }
        }
        guard (keyEnds.count - live.population) * 4 <= keyEnds.count else { return nil }
        let next = TableProjection(table: table, snapshot: snapshot, keyBytes: keyBytes, keyEnds: keyEnds,
                                   live: live.population == keyEnds.count ? nil : live, scanOrdered: false)
        next.ordinalTable = index
        if lock.withLock({ sawDamage }) { next.noteDamage() }
        // Each projected column: copied once, grown to the new ordinals, the changed rows re-read.
        for (property, column) in columns {
            var column = column
            var bad = damage[property] ?? OrdinalSet(count: count, all: false)
            column.grow(to: keyEnds.count)
            bad.grow(to: keyEnds.count)
            var updates: [(ordinal: Int, value: FieldValue)] = []
            updates.reserveCapacity(reread.count)
            for ordinal in reread {
                let key = next.key(ordinal)
                do {
                    guard let row = try snapshot.storedValue(table: table, key: key) else {
                        next.markDead(ordinal)
                        continue
                    }
                    updates.append((ordinal, try RowFormat.field(property, of: row)))
                    bad[ordinal] = false
                } catch {
                    updates.append((ordinal, .null))
                    bad[ordinal] = true
                    next.noteDamage()
                    damaged(key, error)
                }
            }
            column.set(updates)
            // A changed string takes a new dictionary entry: past twice the ordinals, start over.
            if case .string(_, let dictionary) = column, dictionary.count > 2 * keyEnds.count + 1024 { return nil }
            next.lock.withLock {
                next.columns[property] = column
                next.damage[property] = bad
            }
        }
        let advanced = next.deadsFixed()
        // Postings follow the changed ordinals (each moved between its old and new value's
        // list at its key's place), so the next equality reads them at once.
        for (property, kept) in postings {
            guard case .string(let oldCodes, _)? = columns[property],
                  let moved = advanced.postings(kept, property: property, oldCodes: oldCodes, oldLive: liveOrdinals,
                                                oldDamage: damage[property], changed: Array(Set(reread + deleted))) else { continue }
            advanced.lock.withLock { advanced.postings[property] = moved }
        }
        return advanced
    }

    /// `kept`, the postings of `property` in the projection this one advanced from, with each
    /// `changed` ordinal taken out of its old value's list and put in its new one's at its
    /// key's place; nil when this projection's column is not a crowded string column.
    private func postings(_ kept: Postings, property: Int, oldCodes: [Int32], oldLive: OrdinalSet, oldDamage: OrdinalSet?,
                          changed: [Int]) -> Postings? {
        guard case .string(let codes, let dictionary)? = projectedColumn(property),
              SharedStore.isCrowded(distinctValues: dictionary.count, rowsPerHit: SharedStore.scanRowsPerIndexHit) else { return nil }
        let newLive = liveOrdinals, newDamage = damagedOrdinals(property)
        func member(_ o: Int, _ codes: [Int32], _ live: OrdinalSet, _ damage: OrdinalSet?) -> Int? {
            guard o < codes.count, o < live.count, live[o], damage.map({ o < $0.count && $0[o] }) != true, codes[o] >= 0 else { return nil }
            return Int(codes[o])
        }
        // The ordinals that change lists (same value and still there: same place).
        let moves = changed.compactMap { o -> (ordinal: Int, before: Int?, after: Int?)? in
            let before = member(o, oldCodes, oldLive, oldDamage), after = member(o, codes, newLive, newDamage)
            return before == after ? nil : (o, before, after)
        }
        // Each move shifts about one list's entries: past the rows' count in all, building
        // the postings again at the next equality costs less (a bulk update of the property).
        guard moves.count * (count / Swift.max(1, dictionary.count)) <= count else { return nil }
        /// Moves each changed ordinal's entry (`entry(o)`, ordered by `precedes`) between lists.
        func moved<T: Equatable>(_ lists: [[T]], _ entry: (Int) -> T?, _ precedes: (T, T) -> Bool) -> [[T]]? {
            var lists = lists + Array(repeating: [], count: Swift.max(0, dictionary.count - lists.count))
            for (o, before, after) in moves {
                guard let value = entry(o) else { return nil }
                func place(_ list: [T]) -> Int {
                    var low = 0, high = list.count
                    while low < high {
                        let mid = (low + high) / 2
                        if precedes(list[mid], value) { low = mid + 1 } else { high = mid }
                    }
                    return low
                }
                if let code = before {
                    let at = place(lists[code])
                    if at < lists[code].count, lists[code][at] == value { lists[code].remove(at: at) }
                }
                if let code = after { lists[code].insert(value, at: place(lists[code])) }
            }
            return lists
        }
        switch kept {
        case .integerKeys(let lists):
            return moved(lists, { self.integerKeys([Int32($0)][...])?.first }, <).map(Postings.integerKeys)
        case .ordinals(let lists):
            var result: [[Int32]]?
            withKeyOrder { keyPrecedes in result = moved(lists, { Int32($0) }, { keyPrecedes(Int($0), Int($1)) }) }
            return result.map(Postings.ordinals)
        }
    }

    /// Rows found missing while advancing (a change set that said modified for a row now
    /// gone) are left out through the damage sets of every column.
    private func markDead(_ ordinal: Int) {
        lock.withLock { missing.append(ordinal) }
    }

    private func deadsFixed() -> TableProjection {
        lock.withLock {
            for ordinal in missing {
                for property in damage.keys { damage[property]![ordinal] = true }
            }
        }
        return self
    }
}

/// Key → ordinal for one projection generation: open addressing over ordinals, the keys
/// compared in the projection's key arena (no array per key).
struct KeyOrdinalTable {
    private var slots: [Int32]
    private var used = 0

    init(keyBytes: [UInt8], keyEnds: [Int]) {
        slots = Array(repeating: -1, count: Self.capacity(for: keyEnds.count))
        for ordinal in keyEnds.indices { insert(ordinal, keyBytes: keyBytes, keyEnds: keyEnds) }
    }

    private static func capacity(for count: Int) -> Int {
        var capacity = 16
        while capacity < count * 2 { capacity <<= 1 }
        return capacity
    }

    private static func hash(_ bytes: some Collection<UInt8>) -> Int {
        var hasher = Hasher()
        for byte in bytes { hasher.combine(byte) }
        return hasher.finalize()
    }

    private static func range(_ ordinal: Int, _ keyEnds: [Int]) -> Range<Int> {
        (ordinal == 0 ? 0 : keyEnds[ordinal - 1]) ..< keyEnds[ordinal]
    }

    func find(_ key: [UInt8], keyBytes: [UInt8], keyEnds: [Int]) -> Int? {
        let mask = slots.count - 1
        var slot = Self.hash(key) & mask
        while slots[slot] >= 0 {
            let ordinal = Int(slots[slot])
            if keyBytes[Self.range(ordinal, keyEnds)].elementsEqual(key) { return ordinal }
            slot = (slot + 1) & mask
        }
        return nil
    }

    mutating func insert(_ ordinal: Int, keyBytes: [UInt8], keyEnds: [Int]) {
        if (used + 1) * 2 > slots.count {
            var grown = KeyOrdinalTable(empty: slots.count * 2)
            for existing in slots where existing >= 0 { grown.insert(Int(existing), keyBytes: keyBytes, keyEnds: keyEnds) }
            self = grown
        }
        let mask = slots.count - 1
        var slot = Self.hash(keyBytes[Self.range(ordinal, keyEnds)]) & mask
        while slots[slot] >= 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(ordinal)
        used += 1
    }

    private init(empty capacity: Int) {
        slots = Array(repeating: -1, count: capacity)
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
        if let live { result.formIntersection(live) }
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
            // An equality accepts at most one code: compare the codes with it directly.
            if op == .equal, !nullAccepted {
                guard let code = accepted.firstIndex(of: true) else { return OrdinalSet(count: count, all: false) }
                if accepted[(code + 1)...].firstIndex(of: true) == nil {
                    return OrdinalSet.equal(codes, Int32(code))
                }
            }
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
    @inline(__always)
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
    func sorted(_ ordinals: [Int32], by sortKeys: [(column: ProjectedColumn, reverse: Bool)], general: Bool = false) -> [Int32] {
        if sortKeys.isEmpty { return sortedByKey(ordinals) }
        if !general, sortKeys.count == 1 {
            // (Read where they lie: converting a whole column per sort cost more than a
            // small sort.)
            switch sortKeys[0].column {
            case .int(let values, nil): return sorted(ordinals, byNumbers: values, of: sortKeys[0].column, reverse: sortKeys[0].reverse)
            case .double(let values, nil), .date(let values, nil):
                return sorted(ordinals, byNumbers: values, of: sortKeys[0].column, reverse: sortKeys[0].reverse)
            default: break
            }
        }
        if sortKeys.count == 1, case .string(let codes, let dictionary) = sortKeys[0].column {
            return sorted(ordinals, byStrings: codes, dictionary, reverse: sortKeys[0].reverse)
        }
        var ordinals = ordinals
        withKeyOrder { keyPrecedes in
            ordinals.sort { a, b in
                let a = Int(a), b = Int(b)
                for (column, reverse) in sortKeys {
                    let order = Self.order(column, a, b)
                    if order != .orderedSame { return (order == .orderedAscending) != reverse }
                }
                return keyPrecedes(a, b)
            }
        }
        return ordinals
    }

    /// The ordinals, in key order, whose string property `property` equals `constant` (the
    /// row rule: Swift's `String` equality), read from the property's postings (built by the
    /// first equality asked, then maintained by every advance); nil when the projection
    /// answers by a scan instead: not a projected string column, or not crowded (more
    /// distinct values than `SharedStore.scanRowsPerIndexHit`).
    func postings(_ property: Int, equalTo constant: FieldValue) -> Posting? {
        guard case .string = constant, case .string(let codes, let dictionary)? = projectedColumn(property),
              SharedStore.isCrowded(distinctValues: dictionary.count, rowsPerHit: SharedStore.scanRowsPerIndexHit) else { return nil }
        let code: Int
        if case .string(let value) = constant, let map = codeMap(property, dictionary) {
            // (`String` keys compare as `==` does: the row rule.)
            guard let found = map[value] else { return .ordinals([]) }
            code = Int(found)
        } else {
            // One code holds the value (equal strings share one); judged as the scan judges.
            let accepted = dictionary.map { QueryComparison.equal.holds(.string($0), constant) }
            guard let found = accepted.firstIndex(of: true) else { return .ordinals([]) }
            guard accepted[(found + 1)...].firstIndex(of: true) == nil else { return nil }
            code = found
        }
        let kept = lock.withLock { postings[property] } ?? {
            var candidates = live?.ordinals ?? (0 ..< Int32(count)).map { $0 }
            if let bad = damagedOrdinals(property) { candidates.removeAll { bad[Int($0)] } }
            var lists = [[Int32]](repeating: [], count: dictionary.count)
            for ordinal in sortedByKey(candidates) {
                let c = codes[Int(ordinal)]
                if c >= 0 { lists[Int(c)].append(ordinal) }
            }
            var keys: [[Int64]]? = []
            for list in lists {
                guard let integers = integerKeys(list[...]) else { keys = nil; break }
                keys?.append(integers)
            }
            let built = keys.map(Postings.integerKeys) ?? .ordinals(lists)
            lock.withLock { postings[property] = built }
            return built
        }()
        switch kept {
        case .integerKeys(let lists): return .integerKeys(code < lists.count ? lists[code] : [])
        case .ordinals(let lists): return .ordinals(code < lists.count ? lists[code] : [])
        }
    }

    /// `dictionary`'s codes by value, made once per projection; nil when one value has two
    /// codes (a large dictionary appends changed values without looking them up).
    private func codeMap(_ property: Int, _ dictionary: StringDictionary) -> [String: Int32]? {
        if let made = lock.withLock({ codesByValue[property] }) { return made }
        var map: [String: Int32]? = [:]
        for (code, value) in dictionary.map({ $0 }).enumerated() {
            guard map?.updateValue(Int32(code), forKey: value) == nil else { map = nil; break }
        }
        lock.withLock { codesByValue[property] = .some(map) }
        return map
    }

    /// `ordinals` in their keys' byte order (primary-key order). Integer keys (one kind
    /// byte, then eight bytes big-endian: KeyOrder's rule) sort as `UInt64`s read from the
    /// arena; other keys compare bytes.
    func sortedByKey(_ ordinals: [Int32]) -> [Int32] {
        guard ordinals.count > 1 else { return ordinals }
        let integers: [(value: UInt64, index: Int32)]? = keyBytes.withUnsafeBufferPointer { bytes in
            keyEnds.withUnsafeBufferPointer { ends in
                let first = Int(ordinals[0]), kind = bytes[first == 0 ? 0 : ends[first - 1]]
                var pairs: [(value: UInt64, index: Int32)] = []
                pairs.reserveCapacity(ordinals.count)
                for ordinal in ordinals {
                    let o = Int(ordinal), start = o == 0 ? 0 : ends[o - 1]
                    guard ends[o] - start == 9, bytes[start] == kind else { return nil }
                    pairs.append((KeyOrder.orderValue(UnsafeBufferPointer(rebasing: bytes[start + 1 ..< start + 9])), ordinal))
                }
                return pairs
            }
        }
        if var integers {
            KeyOrder.sortByValue(&integers)
            return integers.map(\.index)
        }
        var ordinals = ordinals
        withKeyOrder { keyPrecedes in ordinals.sort { keyPrecedes(Int($0), Int($1)) } }
        return ordinals
    }

    /// Runs `body` with the order of two ordinals' keys (bytes compared in the arena).
    private func withKeyOrder(_ body: ((Int, Int) -> Bool) -> Void) {
        keyBytes.withUnsafeBufferPointer { bytes in
            keyEnds.withUnsafeBufferPointer { ends in
                body { a, b in
                    let x = UnsafeBufferPointer(rebasing: bytes[(a == 0 ? 0 : ends[a - 1]) ..< ends[a]])
                    let y = UnsafeBufferPointer(rebasing: bytes[(b == 0 ? 0 : ends[b - 1]) ..< ends[b]])
                    return x.lexicographicallyPrecedes(y)
                }
            }
        }
    }

    /// One numeric sort key: (value, ordinal) pairs sorted with plain `<`, the keys
    /// compared only between equal values. NaN is equal to every number under the row
    /// rule (`QueryCompiler.order`), which is no order a sort can keep, so a column with
    /// NaN takes the general path.
    private func sorted<T: Comparable>(_ ordinals: [Int32], byNumbers values: [T], of column: ProjectedColumn, reverse: Bool) -> [Int32] {
        var pairs: [(value: T, ordinal: Int32)] = []
        pairs.reserveCapacity(ordinals.count)
        for ordinal in ordinals {
            let value = values[Int(ordinal)]
            if value != value { return sorted(ordinals, by: [(column, reverse)], general: true) }   // NaN
            pairs.append((value, ordinal))
        }
        withKeyOrder { keyPrecedes in
            if reverse {
                pairs.sort { $0.value != $1.value ? $0.value > $1.value : keyPrecedes(Int($0.ordinal), Int($1.ordinal)) }
            } else {
                pairs.sort { $0.value != $1.value ? $0.value < $1.value : keyPrecedes(Int($0.ordinal), Int($1.ordinal)) }
            }
        }
        return pairs.map(\.ordinal)
    }

    /// One string sort key: each item's `String` made once from the dictionary (not twice
    /// per comparison), then (string, ordinal) pairs sorted by `String`'s own order, the
    /// row rule's: nil first, equal strings (canonically equivalent ones too) by key.
    private func sorted(_ ordinals: [Int32], byStrings codes: [Int32], _ dictionary: StringDictionary, reverse: Bool) -> [Int32] {
        var pairs = ordinals.map { ordinal -> (value: String?, ordinal: Int32) in
            let code = codes[Int(ordinal)]
            return (code < 0 ? nil : dictionary[Int(code)], ordinal)
        }
        withKeyOrder { keyPrecedes in
            pairs.sort { a, b in
                switch (a.value, b.value) {
                case (nil, nil): break
                case (nil, _): return !reverse
                case (_, nil): return reverse
                case (let x?, let y?):
                    if x < y { return !reverse }
                    if y < x { return reverse }
                }
                return keyPrecedes(Int(a.ordinal), Int(b.ordinal))
            }
        }
        return pairs.map(\.ordinal)
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
        case .string(let codes, let dictionary):
            // One code is one string: equal codes need no string read from the arena; nil
            // (-1) first, as the row rule orders it.
            let x = codes[a], y = codes[b]
            if x == y { return .orderedSame }
            if x < 0 || y < 0 { return x < 0 ? .orderedAscending : .orderedDescending }
            return QueryCompiler.order(.string(dictionary[Int(x)]), .string(dictionary[Int(y)]))
        default: return QueryCompiler.order(column.value(at: a), column.value(at: b))
        }
    }
}

// MARK: Orders for result sets

extension TableProjection {
    /// How a result set orders ordinals: a comparison (for keeping the best k), a whole
    /// sort (the faster path once most items are wanted), and whether the comparison is
    /// not a strict weak order for some items (NaN: equal to every number), in which case
    /// only the whole sort is used, as before result sets were lazy.
    struct OrdinalOrder {
        let precedes: (Int32, Int32) -> Bool
        let sorted: ([Int32]) -> [Int32]
        let needsWholeSort: ([Int32]) -> Bool
        /// The ordinals are wanted in ascending ordinal order (callers that order them).
        let isIdentity: Bool
    }

    /// Ascending ordinals, for callers that order the keys themselves.
    static var ordinalOrder: OrdinalOrder {
        OrdinalOrder(precedes: { $0 < $1 }, sorted: { $0 }, needsWholeSort: { _ in false }, isIdentity: true)
    }

    /// The order of `sortKeys`, then the engine key (primary-key order when there are none).
    func order(by sortKeys: [(column: ProjectedColumn, reverse: Bool)]) -> OrdinalOrder {
        let keyBytes = self.keyBytes, keyEnds = self.keyEnds
        let keyPrecedes = { (a: Int, b: Int) -> Bool in
            keyBytes[(a == 0 ? 0 : keyEnds[a - 1]) ..< keyEnds[a]].lexicographicallyPrecedes(keyBytes[(b == 0 ? 0 : keyEnds[b - 1]) ..< keyEnds[b]])
        }
        let whole = { (ordinals: [Int32]) in self.sorted(ordinals, by: sortKeys) }
        if sortKeys.isEmpty {
            // Key order alone: sorted whole at once (integer keys as integers), which costs
            // less than keeping a heap of byte-compared keys for a prefix.
            return OrdinalOrder(precedes: { keyPrecedes(Int($0), Int($1)) }, sorted: whole, needsWholeSort: { _ in true }, isIdentity: false)
        }
        let columns = sortKeys.map(\.column)
        let needsWholeSort = { (ordinals: [Int32]) -> Bool in
            columns.contains { column in
                switch column {
                case .double(let values, _), .date(let values, _): return ordinals.contains { values[Int($0)].isNaN }
                case .values(let values): return ordinals.contains { values[Int($0)].isNaN }
                case .int, .string: return false
                }
            }
        }
        // One number key: compared where the values lie (converting a whole integer column
        // to Doubles for each query cost more than ordering a short result).
        func byNumbers<T: Comparable>(_ numbers: [T], reverse: Bool) -> OrdinalOrder {
            OrdinalOrder(precedes: { a, b in
                let x = numbers[Int(a)], y = numbers[Int(b)]
                if x != y { return reverse ? x > y : x < y }
                return keyPrecedes(Int(a), Int(b))
            }, sorted: whole, needsWholeSort: needsWholeSort, isIdentity: false)
        }
        if sortKeys.count == 1 {
            switch sortKeys[0].column {
            case .int(let values, nil): return byNumbers(values, reverse: sortKeys[0].reverse)
            case .double(let values, nil), .date(let values, nil): return byNumbers(values, reverse: sortKeys[0].reverse)
            default: break
            }
        }
        return OrdinalOrder(precedes: { a, b in
            let a = Int(a), b = Int(b)
            for (column, reverse) in sortKeys {
                let order = Self.order(column, a, b)
                if order != .orderedSame { return (order == .orderedAscending) != reverse }
            }
            return keyPrecedes(a, b)
        }, sorted: whole, needsWholeSort: needsWholeSort, isIdentity: false)
    }
}

/// The distinct strings of a string column end to end in one UTF-8 arena, each ending at
/// a 32-bit offset: 4 bytes an entry beside its bytes, where a `[String]` took 16 (and a
/// heap block for each string past 15 bytes). A column whose strings pass 2 GiB keeps
/// plain values instead (`canAppend`). An entry reads back as the same `String`.
struct StringDictionary {
    private(set) var bytes: [UInt8] = []
    private(set) var ends: [Int32] = []

    init() {}

    /// The dictionary whose entries end at `ends` in `bytes` (as `bytes`/`ends` give them);
    /// nil unless the ends rise and the last is the end of `bytes`. (Entries that are not
    /// valid UTF-8 read back repaired, as `String(decoding:)` does.)
    init?(bytes: [UInt8], ends: [Int32]) {
        var previous: Int32 = 0
        for end in ends {
            guard end >= previous else { return nil }
            previous = end
        }
        guard Int(previous) == bytes.count else { return nil }
        self.bytes = bytes
        self.ends = ends
    }

    var count: Int { ends.count }

    /// Bytes held.
    var byteCount: Int { bytes.count + ends.count * MemoryLayout<Int32>.stride }

    /// Whether `string` still fits under the 32-bit offsets.
    func canAppend(_ string: String) -> Bool { bytes.count + string.utf8.count <= Int(Int32.max) }

    mutating func append(_ string: String) {
        bytes.append(contentsOf: string.utf8)
        ends.append(Int32(bytes.count))
    }

    /// Appends an entry of these UTF-8 bytes (valid UTF-8: a `String`'s).
    mutating func append(utf8: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: utf8)
        ends.append(Int32(bytes.count))
    }

    /// Calls `body` with entry `index`'s UTF-8 bytes (no copy).
    func withBytes<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        bytes.withUnsafeBytes { all in
            body(UnsafeRawBufferPointer(rebasing: all[(index == 0 ? 0 : Int(ends[index - 1])) ..< Int(ends[index])]))
        }
    }

    subscript(index: Int) -> String {
        String(decoding: bytes[(index == 0 ? 0 : Int(ends[index - 1])) ..< Int(ends[index])], as: UTF8.self)
    }

    /// `transform` of each entry, in order.
    func map<T>(_ transform: (String) throws -> T) rethrows -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for index in 0 ..< count { result.append(try transform(self[index])) }
        return result
    }
}

/// A string dictionary's codes by their entries' UTF-8 bytes, for building a column: an
/// open-addressing table of codes with a multiplicative hash of the bytes, so a row costs
/// one hash of its bytes and one comparison (a `[String: Int32]` hashed every `String` with
/// SipHash and again on each growth: a quarter of a 1M-row projection's build). Equal bytes
/// share a code; canonically equivalent spellings get one each (see `ProjectedColumn.string`).
/// A column that proves (nearly) unique stops looking values up: each row appends its own
/// entry, as a column of offsets would hold it, because for unique values the table only
/// added two cache misses a row (its slot, and the entry compared) and saved nothing.
struct DictionaryCodes {
    private var slots = [Int32](repeating: -1, count: 64)
    private var used = 0
    private var looked = 0
    private var appendsOnly = false
    /// Rows looked up before judging, and the share of new values that makes a column unique.
    private static let judgedAfter = 16_384, uniqueShare = 0.9

    /// The code of `utf8`'s entry in `dictionary`, appended there first if it is new.
    mutating func code(of utf8: UnsafeRawBufferPointer, in dictionary: inout StringDictionary) -> Int32 {
        if appendsOnly {
            dictionary.append(utf8: utf8)
            return Int32(dictionary.count - 1)
        }
        looked += 1
        if looked == Self.judgedAfter, Double(used) >= Double(looked) * Self.uniqueShare {
            appendsOnly = true
            slots = []
            return code(of: utf8, in: &dictionary)
        }
        if (used + 1) * 4 > slots.count * 3 { grow(dictionary) }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: Self.hash(utf8)) & mask
        while true {
            let code = slots[slot]
            if code < 0 {
                let new = Int32(dictionary.count)
                dictionary.append(utf8: utf8)
                slots[slot] = new
                used += 1
                return new
            }
            if dictionary.withBytes(Int(code), { $0.elementsEqual(utf8) }) { return code }
            slot = (slot + 1) & mask
        }
    }

    /// Twice the slots, every code placed again by its entry's bytes.
    private mutating func grow(_ dictionary: StringDictionary) {
        var bigger = [Int32](repeating: -1, count: slots.count * 2)
        let mask = bigger.count - 1
        for code in slots where code >= 0 {
            var slot = Int(truncatingIfNeeded: dictionary.withBytes(Int(code), Self.hash)) & mask
            while bigger[slot] >= 0 { slot = (slot + 1) & mask }
            bigger[slot] = code
        }
        slots = bigger
    }

    /// A 64-bit hash of `bytes`: eight bytes at a time, multiplied and rotated, then mixed
    /// (the SplitMix64 finalizer) so the low bits the table uses depend on every byte.
    private static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            h = (h ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            h = (h << 31) | (h >> 33)
            offset += 8
        }
        var tail: UInt64 = 0
        for (shift, index) in (offset ..< bytes.count).enumerated() { tail |= UInt64(bytes[index]) << UInt64(shift * 8) }
        h ^= tail
        h = (h ^ (h >> 30)) &* 0xBF58_476D_1CE4_E5B9
        h = (h ^ (h >> 27)) &* 0x94D0_49BB_1331_11EB
        return h ^ (h >> 31)
    }
}

extension FieldValue {
    /// Whether the value is a floating-point NaN (which the row rule orders as equal to every
    /// number: no strict order a partial sort can keep).
    var isNaN: Bool {
        switch self {
        case .double(let d): return d.isNaN
        case .float(let f): return f.isNaN
        case .date(let d): return d.timeIntervalSinceReferenceDate.isNaN
        default: return false
        }
    }
}
