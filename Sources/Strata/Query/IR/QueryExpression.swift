// QueryExpression: the query IR. A filter's meaning as a tree the planner and both
// evaluators read — comparisons between stored properties and constants joined by
// and/or/not — instead of a closure nothing can inspect (docs/ARCHITECTURE.md, "The seam
// between reads and writes"). `#Predicate` compiles to it (`QueryCompiler`); the row
// evaluator here is the oracle the column evaluator (`TableProjection`) must agree with.

import Foundation

/// A filter over one type's stored fields.
indirect enum QueryExpression: Sendable, CustomStringConvertible {
    case constant(Bool)
    case and([QueryExpression])
    case or([QueryExpression])
    case not(QueryExpression)
    case compare(QueryOperand, QueryComparison, QueryOperand)

    /// Whether the object whose property `i` is `field(i)` matches: Swift's operators on
    /// the decoded values, as Foundation evaluates the predicate (false across kinds).
    func matches(_ field: (Int) -> FieldValue) -> Bool {
        switch self {
        case .constant(let value): return value
        case .and(let terms): return terms.allSatisfy { $0.matches(field) }
        case .or(let terms): return terms.contains { $0.matches(field) }
        case .not(let term): return !term.matches(field)
        case .compare(let a, let op, let b): return op.holds(a.value(field), b.value(field))
        }
    }

    /// The properties the expression reads, ascending.
    var properties: [Int] {
        var found = Set<Int>()
        func visit(_ expression: QueryExpression) {
            switch expression {
            case .constant: break
            case .and(let terms), .or(let terms): terms.forEach(visit)
            case .not(let term): visit(term)
            case .compare(let a, _, let b):
                if case .property(let index) = a { found.insert(index) }
                if case .property(let index) = b { found.insert(index) }
            }
        }
        visit(self)
        return found.sorted()
    }

    /// `property == constant` terms reachable through `&&` from the top (index candidates).
    var equalityTerms: [(property: Int, value: FieldValue)] {
        switch self {
        case .and(let terms): return terms.flatMap(\.equalityTerms)
        case .compare(.property(let index), .equal, .constant(let value)),
             .compare(.constant(let value), .equal, .property(let index)):
            return [(index, value)]
        default: return []
        }
    }

    /// All of `expressions` (true for none).
    static func all(_ expressions: [QueryExpression]) -> QueryExpression {
        expressions.count == 1 ? expressions[0] : .and(expressions)
    }

    var description: String { describe(names: { "#\($0)" }) }

    /// The expression with property positions named by `names` (for `explain`).
    func describe(names: (Int) -> String) -> String {
        switch self {
        case .constant(let value): return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .and(let terms): return terms.isEmpty ? "TRUEPREDICATE" : terms.map { "(\($0.describe(names: names)))" }.joined(separator: " && ")
        case .or(let terms): return terms.isEmpty ? "FALSEPREDICATE" : terms.map { "(\($0.describe(names: names)))" }.joined(separator: " || ")
        case .not(let term): return "!(\(term.describe(names: names)))"
        case .compare(let a, let op, let b): return "\(a.describe(names: names)) \(op.rawValue) \(b.describe(names: names))"
        }
    }
}

/// One side of a comparison.
enum QueryOperand: Sendable {
    case property(Int)
    case constant(FieldValue)

    func value(_ field: (Int) -> FieldValue) -> FieldValue {
        switch self {
        case .property(let index): return field(index)
        case .constant(let value): return value
        }
    }

    func describe(names: (Int) -> String) -> String {
        switch self {
        case .property(let index): return names(index)
        case .constant(let value): return value.queryLiteral
        }
    }
}

/// A comparison operator, with Swift's meaning on stored values.
enum QueryComparison: String, Sendable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="

    /// `a self b`: `==`/`!=` as `FieldValue`'s (Swift's `==` on the payloads: NaN differs
    /// from itself, -0.0 equals 0.0, strings compare by canonical equivalence); orderings
    /// with Swift's `<` on two values of one kind, false across kinds and for nil.
    func holds(_ a: FieldValue, _ b: FieldValue) -> Bool {
        switch self {
        case .equal: return a == b
        case .notEqual: return a != b
        case .less: return QueryCompiler.compare(a, b, .lessThan)
        case .lessOrEqual: return QueryCompiler.compare(a, b, .lessThanOrEqual)
        case .greater: return QueryCompiler.compare(a, b, .greaterThan)
        case .greaterOrEqual: return QueryCompiler.compare(a, b, .greaterThanOrEqual)
        }
    }

    /// The same comparison with its operands swapped (`a < b` is `b > a`).
    var flipped: QueryComparison {
        switch self {
        case .equal, .notEqual: return self
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        }
    }

    init?(_ op: PredicateExpressions.ComparisonOperator) {
        switch op {
        case .lessThan: self = .less
        case .lessThanOrEqual: self = .lessOrEqual
        case .greaterThan: self = .greater
        case .greaterThanOrEqual: self = .greaterOrEqual
        @unknown default: return nil
        }
    }
}

extension FieldValue {
    /// The value as a query literal (for `explain`).
    var queryLiteral: String {
        switch self {
        case .null: return "nil"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .float(let f): return String(f)
        case .string(let s): return "\"" + s.replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .date(let d): return "date(\(d.timeIntervalSinceReferenceDate))"
        case .decimal(let d): return "\(d)"
        case .uuid(let u): return "uuid(\(u.uuidString))"
        case .objectId(let o): return "oid(\(o))"
        case .data(let d): return "data(\(d.count) bytes)"
        case .link, .list, .embedded, .map: return "…"
        }
    }
}
