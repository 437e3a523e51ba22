// ControllerMembers: a results controller's members, its sections and their orders, apart
// from the object and mapped types (so none of it is generic, and none of it is specialized
// per controller). A member is a 32-bit id: an ordinal of the fetch's projection, or, past
// those, a key the controller met later (or every key, when the fetch read objects). A
// fetch from columns orders no section: an unordered section holds its members as the
// fetch's ordinals, and their ordering values are read from the fetch's columns when the
// section is ordered — when it is read, or before a commit changes it, so an unordered
// section has not changed since the fetch. A member whose values changed since the fetch
// (or that came later) keeps them in `overrides`. Ordering a section allocates nothing per
// member: its ordinals are sorted on the columns and kept as ids.

import Foundation
import StrataStorage

struct ControllerMembers {
    typealias Member = Int32

    /// A member's ordering values (the section's value first when the results are
    /// sectioned, then the sort keys' values or the request's rank) and its section.
    struct Entry {
        var values: [FieldValue]
        var section: FieldValue
    }

    /// One section: its value, its size, and its members in order once it was read or
    /// changed; before that, its members as the fetch's ordinals, in no order.
    struct Section {
        var value: FieldValue
        var count: Int
        var order: ChunkedOrder?
        var members: ArraySlice<Member> = []
    }

    /// What a fetch from columns read, for ordering its sections later.
    private struct Fetch {
        let projection: TableProjection
        /// The section property's column (when sectioned), then the sort keys'.
        let columns: [ProjectedColumn]
        /// Per ordinal: its section at the fetch (an index into `sectionValues`), or -1
        /// when it was not in the results.
        let sectionOf: [Int32]
        let sectionValues: [FieldValue]
    }

    private(set) var sections: [Section] = []
    /// Whether each ordering value sorts descending (the section's first when sectioned).
    private let directions: [Bool]
    private let sectioned: Bool
    private let fetch: Fetch?
    /// Ids below this are the fetch's ordinals.
    private let fetchCount: Int
    /// Keys of the ids from `fetchCount` on, and their ids.
    private var laterKeys: [[UInt8]] = []
    private var laterIDs: [ObjectKey: Member] = [:]
    /// Values of members that changed since the fetch, or came later.
    private var overrides: [Member: Entry] = [:]
    /// Whether each id is in the results now.
    private var isMember: [Bool]

    // MARK: Building

    /// Every row, ordered now: each row's key and ordering values.
    init(rows: [(key: [UInt8], values: [FieldValue])], sectioned: Bool, directions: [Bool]) {
        self.sectioned = sectioned
        self.directions = directions
        fetch = nil
        fetchCount = 0
        isMember = []
        var ordered: [Member] = []
        func close() {
            if !ordered.isEmpty { sections[sections.count - 1].order = ChunkedOrder(ordered) }
            ordered.removeAll(keepingCapacity: true)
        }
        laterKeys.reserveCapacity(rows.count)
        laterIDs.reserveCapacity(rows.count)
        for position in ResultsQuery<Object>.sortedPositions(rows, sortKeys: directions.enumerated().map { (index: $0.offset, reverse: $0.element) }) {
            let (key, values) = rows[position]
            let id = Member(laterKeys.count)
            laterKeys.append(key)
            laterIDs[ObjectKey(key)] = id
            isMember.append(true)
            let section = sectioned ? values[0] : FieldValue.null
            overrides[id] = Entry(values: values, section: section)
            if let last = sections.last, last.value == section {
                sections[sections.count - 1].count += 1
            } else {
                close()
                sections.append(Section(value: section, count: 1))
            }
            ordered.append(id)
        }
        close()
    }

    /// The fetch from columns: `ordinals` of `projection` grouped by their section value (one
    /// pass to count, one to place), the sections in order, none ordered inside. `columns`
    /// are the section property's (when sectioned) and the sort keys'. Nil for a section
    /// column whose values do not group exactly (NaN, or kinds kept as decoded values).
    init?(projection: TableProjection, ordinals: [Int32], columns: [ProjectedColumn], sectioned: Bool, directions: [Bool]) {
        self.sectioned = sectioned
        self.directions = directions
        // Each ordinal's group, and each group's value.
        var groupOf = [Int32](repeating: -1, count: projection.count)
        var groupValues: [FieldValue] = []
        if !sectioned {
            if !ordinals.isEmpty { groupValues = [.null] }
            for ordinal in ordinals { groupOf[Int(ordinal)] = 0 }
        } else {
            func grouped<V: Hashable>(_ value: (Int) -> V?, _ field: (V) -> FieldValue) {
                var groups: [V: Int32] = [:]
                var nullGroup: Int32?
                for ordinal in ordinals {
                    let o = Int(ordinal)
                    if let v = value(o) {
                        if let g = groups[v] { groupOf[o] = g; continue }
                        groups[v] = Int32(groupValues.count)
                        groupOf[o] = Int32(groupValues.count)
                        groupValues.append(field(v))
                    } else {
                        if nullGroup == nil { nullGroup = Int32(groupValues.count); groupValues.append(.null) }
                        groupOf[o] = nullGroup!
                    }
                }
            }
            switch columns[0] {
            case .string(let codes, let dictionary):
                grouped({ codes[$0] < 0 ? nil : codes[$0] }, { .string(dictionary[Int($0)]) })
            case .int(let values, let nulls):
                // Values within a narrow range (ids, counts, small enums) group through an
                // array indexed by value instead of a hash table.
                var low = Int64.max, high = Int64.min
                for ordinal in ordinals where nulls?[Int(ordinal)] != true {
                    low = min(low, values[Int(ordinal)])
                    high = max(high, values[Int(ordinal)])
                }
                let span = high.subtractingReportingOverflow(low)
                if low <= high, !span.overflow, span.partialValue < Int64(ordinals.count) * 4 + 1024 {
                    var groupOfValue = [Int32](repeating: -1, count: Int(high - low) + 1)
                    var nullGroup: Int32?
                    for ordinal in ordinals {
                        let o = Int(ordinal)
                        if nulls?[o] == true {
                            if nullGroup == nil { nullGroup = Int32(groupValues.count); groupValues.append(.null) }
                            groupOf[o] = nullGroup!
                            continue
                        }
                        let slot = Int(values[o] - low)
                        if groupOfValue[slot] < 0 {
                            groupOfValue[slot] = Int32(groupValues.count)
                            groupValues.append(.int(values[o]))
                        }
                        groupOf[o] = groupOfValue[slot]
                    }
                } else {
                    grouped({ nulls?[$0] == true ? nil : values[$0] }, { .int($0) })
                }
            case .double(let values, let nulls):
                guard !ordinals.contains(where: { values[Int($0)].isNaN && nulls?[Int($0)] != true }) else { return nil }
                grouped({ nulls?[$0] == true ? nil : values[$0] }, { .double($0) })
            case .date(let values, let nulls):
                guard !ordinals.contains(where: { values[Int($0)].isNaN && nulls?[Int($0)] != true }) else { return nil }
                grouped({ nulls?[$0] == true ? nil : values[$0] }, { .date(Date(timeIntervalSinceReferenceDate: $0)) })
            case .values:
                return nil
            }
        }
        // Groups in section order; groups of equal values (one string under two codes) merge.
        let first = directions.first ?? false
        let byValue = groupValues.indices.sorted { Self.sectionPrecedes(groupValues[$0], groupValues[$1], sectioned: sectioned, descending: first) }
        var sectionOfGroup = [Int32](repeating: 0, count: groupValues.count)
        var sectionValues: [FieldValue] = []
        for group in byValue {
            if sectionValues.last != groupValues[group] { sectionValues.append(groupValues[group]) }
            sectionOfGroup[group] = Int32(sectionValues.count - 1)
        }
        // Members placed section by section: counted, then each put at its section's next slot.
        var counts = [Int](repeating: 0, count: sectionValues.count)
        var sectionOf = [Int32](repeating: -1, count: projection.count)
        isMember = [Bool](repeating: false, count: projection.count)
        for ordinal in ordinals {
            let section = sectionOfGroup[Int(groupOf[Int(ordinal)])]
            sectionOf[Int(ordinal)] = section
            isMember[Int(ordinal)] = true
            counts[Int(section)] += 1
        }
        var starts = [Int](repeating: 0, count: sectionValues.count)
        for index in counts.indices.dropFirst() { starts[index] = starts[index - 1] + counts[index - 1] }
        var next = starts
        var members = [Int32](repeating: 0, count: ordinals.count)
        for ordinal in ordinals {
            let section = Int(sectionOf[Int(ordinal)])
            members[next[section]] = ordinal
            next[section] += 1
        }
        sections = sectionValues.indices.map { index in
            Section(value: sectionValues[index], count: counts[index], members: members[starts[index] ..< starts[index] + counts[index]])
        }
        fetch = Fetch(projection: projection, columns: columns, sectionOf: sectionOf, sectionValues: sectionValues)
        fetchCount = projection.count
    }

    // MARK: Ids and values

    /// The id of `key`, if the controller has met it.
    func id(of key: [UInt8]) -> Member? {
        if let fetch, let ordinal = fetch.projection.ordinal(of: key) { return Member(ordinal) }
        return laterIDs[ObjectKey(key)]
    }

    /// The id of `key`, given one now if it has none.
    mutating func assignID(to key: [UInt8]) -> Member {
        if let id = id(of: key) { return id }
        let id = Member(fetchCount + laterKeys.count)
        laterKeys.append(key)
        laterIDs[ObjectKey(key)] = id
        isMember.append(false)
        return id
    }

    /// `id`'s engine key.
    func key(_ id: Member) -> [UInt8] {
        Int(id) < fetchCount ? fetch!.projection.key(Int(id)) : laterKeys[Int(id) - fetchCount]
    }

    private func keySlice(_ id: Member) -> ArraySlice<UInt8> {
        Int(id) < fetchCount ? fetch!.projection.keySlice(Int(id)) : laterKeys[Int(id) - fetchCount][...]
    }

    /// `id`'s entry if it is in the results.
    func entry(_ id: Member) -> Entry? {
        guard Int(id) < isMember.count, isMember[Int(id)] else { return nil }
        if let entry = overrides[id] { return entry }
        let fetch = fetch!
        return Entry(values: fetch.columns.map { $0.value(at: Int(id)) }, section: fetch.sectionValues[Int(fetch.sectionOf[Int(id)])])
    }

    // MARK: Order

    /// Whether section value `a` comes before `b`.
    func sectionPrecedes(_ a: FieldValue, _ b: FieldValue) -> Bool {
        Self.sectionPrecedes(a, b, sectioned: sectioned, descending: directions.first ?? false)
    }

    private static func sectionPrecedes(_ a: FieldValue, _ b: FieldValue, sectioned: Bool, descending: Bool) -> Bool {
        let order = QueryCompiler.order(a, b)
        return sectioned && descending ? order == .orderedDescending : order == .orderedAscending
    }

    /// Whether (values `a`, key `aKey`) comes before (`b`, `bKey`): value by value in the
    /// directions, then the engine keys' bytes.
    func precedes(_ a: [FieldValue], _ aKey: ArraySlice<UInt8>, _ b: [FieldValue], _ bKey: ArraySlice<UInt8>) -> Bool {
        for position in directions.indices {
            switch QueryCompiler.order(a[position], b[position]) {
            case .orderedAscending: return !directions[position]
            case .orderedDescending: return directions[position]
            case .orderedSame: continue
            }
        }
        return aKey.lexicographicallyPrecedes(bKey)
    }

    /// Whether member `a` (in the results) comes before `b`.
    func precedes(_ a: Member, _ b: Member) -> Bool {
        precedes(entry(a)!.values, keySlice(a), entry(b)!.values, keySlice(b))
    }

    /// The index of the section of `value`, or where it would go.
    func sectionIndex(of value: FieldValue) -> (index: Int, found: Bool) {
        var low = 0, high = sections.count
        while low < high {
            let mid = (low + high) / 2
            if sectionPrecedes(sections[mid].value, value) { low = mid + 1 } else { high = mid }
        }
        return (low, low < sections.count && sections[low].value == value)
    }

    /// Section `index`'s members in order, ordering it now from the fetch's columns if it
    /// was not yet: its ordinals sorted on the sort keys' columns (its section value is
    /// one for all of them).
    @discardableResult
    mutating func ordered(_ index: Int) -> ChunkedOrder {
        if let order = sections[index].order { return order }
        guard let fetch else { preconditionFailure("results controller: section \(index) is neither ordered nor fetched from columns") }
        let skipped = sectioned ? 1 : 0
        let sortColumns = zip(fetch.columns.dropFirst(skipped), directions.dropFirst(skipped)).map { (column: $0, reverse: $1) }
        let order = ChunkedOrder(fetch.projection.sorted(Array(sections[index].members), by: sortColumns))
        sections[index].order = order
        sections[index].members = []
        return order
    }

    /// Orders every section.
    mutating func orderAll() {
        for index in sections.indices { ordered(index) }
    }

    /// The number of sections not ordered yet.
    var unorderedCount: Int { sections.count { $0.order == nil } }

    /// The place of member `id` with `entry` in its section, or nil when it is not there.
    mutating func place(of id: Member, _ entry: Entry) -> IndexPath? {
        let (section, found) = sectionIndex(of: entry.section)
        guard found else { return nil }
        let order = ordered(section)
        let item = lowerBound(entry.values, keySlice(id), in: order)
        return item < order.count && order[item] == id ? IndexPath(item: item, section: section) : nil
    }

    /// The first position in `order` whose member does not come before (values, key).
    private func lowerBound(_ values: [FieldValue], _ key: ArraySlice<UInt8>, in order: ChunkedOrder) -> Int {
        order.lowerBound { precedes(entry($0)!.values, keySlice($0), values, key) }
    }

    // MARK: Changes

    /// Takes member `id` out of the place `path` (found by `place(of:_:)`), its section
    /// with it when it empties.
    mutating func remove(_ id: Member, at path: IndexPath) {
        sections[path.section].order!.remove(at: path.item)
        sections[path.section].count -= 1
        if sections[path.section].count == 0 { sections.remove(at: path.section) }
        isMember[Int(id)] = false
        overrides[id] = nil
    }

    /// Puts member `id` with `entry` in its place, in a new section if its value has none.
    mutating func insert(_ id: Member, _ entry: Entry) {
        let (section, found) = sectionIndex(of: entry.section)
        if found {
            ordered(section)
        } else {
            sections.insert(Section(value: entry.section, count: 0, order: ChunkedOrder()), at: section)
        }
        isMember[Int(id)] = true
        overrides[id] = entry
        let position = lowerBound(entry.values, keySlice(id), in: sections[section].order!)
        sections[section].order!.insert(id, at: position)
        sections[section].count += 1
    }

    /// Member `id`'s new values, which keep its place.
    mutating func update(_ id: Member, _ entry: Entry) {
        overrides[id] = entry
    }

    /// Every member in order, with its place (every section ordered first).
    mutating func flattened() -> [(id: Member, path: IndexPath)] {
        var result: [(id: Member, path: IndexPath)] = []
        for index in sections.indices {
            for (item, id) in ordered(index).all.enumerated() { result.append((id, IndexPath(item: item, section: index))) }
        }
        return result
    }

    /// The first violated invariant, or nil: sections in order, distinct and not empty;
    /// an ordered section's members in order, of its value, and counted; an unordered
    /// one's the fetch's members of its value, with no changed values; every member in
    /// exactly one section.
    func checkInvariants() -> String? {
        var placed = 0
        for (index, section) in sections.enumerated() {
            if index > 0, !sectionPrecedes(sections[index - 1].value, section.value) {
                return "sections \(index - 1) and \(index) are out of order or equal"
            }
            if section.count == 0 { return "section \(index) is empty" }
            guard let order = section.order else {
                if section.members.count != section.count { return "unordered section \(index) counts \(section.count) but holds \(section.members.count)" }
                if let wrong = section.members.first(where: { entry($0)?.section != section.value || overrides[$0] != nil }) {
                    return "unordered section \(index) holds member \(wrong), changed or of another section"
                }
                placed += section.count
                continue
            }
            if let problem = order.checkInvariants() { return "section \(index): \(problem)" }
            if order.count != section.count { return "section \(index) counts \(section.count) but orders \(order.count) members" }
            let members = order.all
            placed += members.count
            for (position, id) in members.enumerated() {
                guard let entry = entry(id) else { return "member at \(index).\(position) is not in the results" }
                if entry.section != section.value { return "member at \(index).\(position) belongs to section \(entry.section)" }
                if position > 0, !precedes(members[position - 1], id) { return "members at \(index).\(position - 1) and \(index).\(position) are out of order" }
            }
        }
        let members = isMember.count { $0 }
        return placed == members ? nil : "\(placed) members in sections but \(members) in the results"
    }
}
