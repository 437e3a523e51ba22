// RangeTerm: the bounds a filter puts on one property with an ordered index, read from
// its `&&` terms in the IR — what the planner's ordered-index access path walks
// (docs/ARCHITECTURE.md, "Ordered indexes").

import Foundation

/// A range over the values of one property with an ordered index, from a filter's
/// top-level `&&` terms (`age > 40 && age <= 60 && …`).
struct RangeTerm {
    let property: Int
    let range: OrderedIndex.Range
    /// Whether the terms were the whole filter (nothing else to judge).
    let isWholeFilter: Bool
    /// The bounds as the filter gave them (for `explain`): value and whether it is included.
    var lowerValue: (FieldValue, Bool)?
    var upperValue: (FieldValue, Bool)?

    /// For a `BEGINSWITH`, the prefix (the bounds are then its encoding).
    var prefix: String?

    /// The entries of the strings that begin with `prefix`, for property `property`: every
    /// entry whose bytes start with the prefix's encoding (a candidate superset).
    static func beginning(with prefix: String, property: Int) -> RangeTerm {
        let bytes = OrderedValueKey.prefixBytes(prefix)
        let bound = OrderedIndex.Bound(bytes: bytes, inclusive: true)
        return RangeTerm(property: property, range: OrderedIndex.Range(lower: bound, upper: bound, isExact: false),
                         isWholeFilter: false, prefix: prefix)
    }

    /// The range in words (`40 < age <= 60`, `name >= "m"`, `name BEGINSWITH "m"`).
    func describe(name: String) -> String {
        if let prefix { return "\(name) BEGINSWITH \(FieldValue.string(prefix).queryLiteral)" }
        switch (lowerValue, upperValue) {
        case let ((low, lowIn)?, (high, highIn)?):
            return "\(low.queryLiteral) \(lowIn ? "<=" : "<") \(name) \(highIn ? "<=" : "<") \(high.queryLiteral)"
        case let ((low, lowIn)?, nil): return "\(name) \(lowIn ? ">=" : ">") \(low.queryLiteral)"
        case let (nil, (high, highIn)?): return "\(name) \(highIn ? "<=" : "<") \(high.queryLiteral)"
        case (nil, nil): return "every \(name)"
        }
    }

    /// The first property of `schema` with an ordered index that `conjuncts` bound from
    /// below or above by a constant of its own kind (not NaN); nil when none does.
    static func find(in conjuncts: [QueryExpression], schema: ObjectSchema) -> RangeTerm? {
        var flat: [QueryExpression] = []
        func flatten(_ expression: QueryExpression) {
            if case .and(let terms) = expression { terms.forEach(flatten) } else { flat.append(expression) }
        }
        conjuncts.forEach(flatten)
        var chosen: Int?
        var lower: OrderedIndex.Bound?, upper: OrderedIndex.Bound?
        var lowerValue: (FieldValue, Bool)?, upperValue: (FieldValue, Bool)?
        var used = 0
        for term in flat {
            guard let (property, op, value) = bound(term), property < schema.properties.count,
                  chosen == nil || chosen == property else { continue }
            let kind = schema.properties[property]
            guard OrderedValueKey.isOrderable(kind), fits(value, kind.kind), let bytes = OrderedValueKey.bytes(for: value) else { continue }
            // Strings are indexed by a prefix of their normalized bytes: their bounds stay
            // inclusive, so the range is a superset the rows then judge.
            let exact = kind.kind != .string
            switch op {
            case .greater, .greaterOrEqual:
                let candidate = OrderedIndex.Bound(bytes: bytes, inclusive: op == .greaterOrEqual || !exact)
                if lower.map({ tighter(candidate, than: $0, lower: true) }) ?? true {
                    lower = candidate
                    lowerValue = (value, op == .greaterOrEqual)
                }
            case .less, .lessOrEqual:
                let candidate = OrderedIndex.Bound(bytes: bytes, inclusive: op == .lessOrEqual || !exact)
                if upper.map({ tighter(candidate, than: $0, lower: false) }) ?? true {
                    upper = candidate
                    upperValue = (value, op == .lessOrEqual)
                }
            default:
                continue
            }
            chosen = property
            used += 1
        }
        guard let chosen else { return nil }
        let property = schema.properties[chosen]
        let tag = property.kind == .string ? OrderedValueKey.stringTag : OrderedValueKey.numberTag
        // Unbounded ends stop at the kind's own values: nulls (below) and NaN (above) never match an ordering.
        let range = OrderedIndex.Range(lower: lower ?? OrderedIndex.Bound(bytes: [tag], inclusive: true),
                                       upper: upper ?? OrderedIndex.Bound(bytes: [tag + 1], inclusive: false),
                                       isExact: property.kind != .string)
        return RangeTerm(property: chosen, range: range, isWholeFilter: used == flat.count,
                         lowerValue: lowerValue, upperValue: upperValue)
    }

    /// `property op constant`, either way round, for an ordering operator.
    private static func bound(_ term: QueryExpression) -> (Int, QueryComparison, FieldValue)? {
        switch term {
        case .compare(.property(let property), let op, .constant(let value)): return (property, op, value)
        case .compare(.constant(let value), let op, .property(let property)): return (property, op.flipped, value)
        default: return nil
        }
    }

    /// Whether `value` is of the kind a property of `kind` stores, and ordered (not NaN).
    static func fits(_ value: FieldValue, _ kind: PropertyKind) -> Bool {
        switch (kind, value) {
        case (.int, .int), (.int8, .int), (.int16, .int), (.int32, .int), (.int64, .int), (.string, .string): return true
        case (.double, .double(let d)): return !d.isNaN
        case (.float, .float(let f)): return !f.isNaN
        case (.date, .date(let d)): return !d.timeIntervalSinceReferenceDate.isNaN
        default: return false
        }
    }

    /// Whether `a` narrows the range more than `b` on the same side.
    private static func tighter(_ a: OrderedIndex.Bound, than b: OrderedIndex.Bound, lower: Bool) -> Bool {
        if a.bytes == b.bytes { return !a.inclusive && b.inclusive }
        return lower ? b.bytes.lexicographicallyPrecedes(a.bytes) : a.bytes.lexicographicallyPrecedes(b.bytes)
    }
}
