// CompiledQuery: predicates (into the query IR, `QueryExpression`) and sort descriptors translated to work on stored fields, so a
// query reads rows without building objects. Only what is certain to mean the same as
// Foundation's evaluation is translated (comparisons of a stored property with a constant,
// &&, ||, !; sorts on a stored property without a custom string comparator); anything
// else falls back to evaluating the predicate or descriptor on objects.

import Foundation

protocol _ComparisonExpression { var operands: (Any, Any) { get }; var comparison: PredicateExpressions.ComparisonOperator { get } }
protocol _NotEqualExpression { var operands: (Any, Any) { get } }
protocol _DisjunctionExpression { var operands: (Any, Any) { get } }
protocol _NegationExpression { var negated: Any { get } }
protocol _UnaryMinusExpression { var negatedOperand: Any { get } }
protocol _NilLiteralExpression {}

extension PredicateExpressions.Comparison: _ComparisonExpression {
    var operands: (Any, Any) { (lhs, rhs) }
    var comparison: PredicateExpressions.ComparisonOperator { op }
}
extension PredicateExpressions.NotEqual: _NotEqualExpression { var operands: (Any, Any) { (lhs, rhs) } }
extension PredicateExpressions.Disjunction: _DisjunctionExpression { var operands: (Any, Any) { (lhs, rhs) } }
extension PredicateExpressions.Negation: _NegationExpression { var negated: Any { wrapped } }
extension PredicateExpressions.UnaryMinus: _UnaryMinusExpression { var negatedOperand: Any { wrapped } }
extension PredicateExpressions.NilLiteral: _NilLiteralExpression {}

enum QueryCompiler {
    /// The terms of `expression`'s top-level `&&`, each in the query IR or nil when it uses
    /// anything not translated: the index terms come from the translated ones even when
    /// another term is not (its objects are then judged by the predicate itself).
    static func conjuncts(_ expression: Any, type: ObjectType) -> [QueryExpression?] {
        if let conjunction = expression as? _ConjunctionExpression {
            return conjuncts(conjunction.operands.0, type: type) + conjuncts(conjunction.operands.1, type: type)
        }
        return [compile(expression, type: type)]
    }

    /// `expression` (a `#Predicate`'s) in the query IR, or nil if it uses anything not
    /// translated.
    static func compile(_ expression: Any, type: ObjectType) -> QueryExpression? {
        if let conjunction = expression as? _ConjunctionExpression {
            guard let a = compile(conjunction.operands.0, type: type), let b = compile(conjunction.operands.1, type: type) else { return nil }
            return .and(flattened(a, b, and: true))
        }
        if let disjunction = expression as? _DisjunctionExpression {
            guard let a = compile(disjunction.operands.0, type: type), let b = compile(disjunction.operands.1, type: type) else { return nil }
            return .or(flattened(a, b, and: false))
        }
        if let negation = expression as? _NegationExpression {
            guard let a = compile(negation.negated, type: type) else { return nil }
            return .not(a)
        }
        if let equal = expression as? _EqualityExpression {
            guard let (a, b) = operands(equal.operands, type: type) else { return nil }
            return comparison(a, .equal, b)
        }
        if let notEqual = expression as? _NotEqualExpression {
            guard let (a, b) = operands(notEqual.operands, type: type) else { return nil }
            return comparison(a, .notEqual, b)
        }
        if let comparison = expression as? _ComparisonExpression {
            guard let (a, b) = operands(comparison.operands, type: type), let op = QueryComparison(comparison.comparison) else { return nil }
            return self.comparison(a, op, b)
        }
        // A Bool property alone (`$0.active && …`): the property is true.
        if case .property(let index)? = operand(expression, type: type),
           type.schema.properties[index].kind == .bool, !type.schema.properties[index].isOptional {
            return .compare(.property(index), .equal, .constant(.bool(true)))
        }
        return nil
    }

    /// `a op b`, with the property on the left when one side is a constant.
    private static func comparison(_ a: QueryOperand, _ op: QueryComparison, _ b: QueryOperand) -> QueryExpression {
        if case .constant = a, case .property = b { return .compare(b, op.flipped, a) }
        return .compare(a, op, b)
    }

    /// `a && b` (or `a || b`) as one flat list of terms.
    private static func flattened(_ a: QueryExpression, _ b: QueryExpression, and: Bool) -> [QueryExpression] {
        func terms(_ e: QueryExpression) -> [QueryExpression] {
            switch (e, and) {
            case (.and(let inner), true), (.or(let inner), false): return inner
            default: return [e]
            }
        }
        return terms(a) + terms(b)
    }

    private static func operands(_ pair: (Any, Any), type: ObjectType) -> (QueryOperand, QueryOperand)? {
        guard let a = operand(pair.0, type: type), let b = operand(pair.1, type: type) else { return nil }
        return (a, b)
    }

    private static func operand(_ expression: Any, type: ObjectType) -> QueryOperand? {
        if let keyPath = expression as? _KeyPathOperand, keyPath.rootIsVariable,
           let index = type.propertyIndex(for: keyPath.anyKeyPath) {
            let property = type.schema.properties[index]
            guard !property.isList, property.kind != .object, property.kind != .column else { return nil }
            return .property(index)
        }
        if let constant = expression as? _ValueOperand, let persistable = constant.anyOperand as? any _PersistableValue,
           Swift.type(of: persistable)._propertyKind != .object, Swift.type(of: persistable)._propertyKind != .column,
           let field = try? persistable._field(in: nil) {
            return .constant(field)
        }
        if expression is _NilLiteralExpression { return .constant(.null) }
        // `-3`: a negated constant (the literal is a unary minus over 3).
        if let minus = expression as? _UnaryMinusExpression, case .constant(let value)? = operand(minus.negatedOperand, type: type) {
            switch value {
            case .int(let i) where i != .min: return .constant(.int(-i))
            case .double(let d): return .constant(.double(-d))
            case .float(let f): return .constant(.float(-f))
            case .decimal(let d): return .constant(.decimal(-d))
            default: return nil
            }
        }
        return nil
    }

    /// `a op b` with Swift's operators on the values (false across kinds, as no Swift value compares so).
    static func compare(_ a: FieldValue, _ b: FieldValue, _ op: PredicateExpressions.ComparisonOperator) -> Bool {
        func apply<T: Comparable>(_ x: T, _ y: T) -> Bool {
            switch op {
            case .lessThan: return x < y
            case .lessThanOrEqual: return x <= y
            case .greaterThan: return x > y
            case .greaterThanOrEqual: return x >= y
            @unknown default: return false
            }
        }
        switch (a, b) {
        case let (.int(x), .int(y)): return apply(x, y)
        case let (.double(x), .double(y)): return apply(x, y)
        case let (.float(x), .float(y)): return apply(x, y)
        case let (.string(x), .string(y)): return apply(x, y)
        case let (.date(x), .date(y)): return apply(x, y)
        case let (.decimal(x), .decimal(y)): return apply(x, y)
        default: return false
        }
    }

    /// The stored property and direction of each descriptor, or nil if one cannot be sorted on fields.
    static func sortKeys<T: Object>(_ descriptors: [SortDescriptor<T>], type: ObjectType) -> [(index: Int, reverse: Bool)]? {
        var keys: [(Int, Bool)] = []
        for descriptor in descriptors {
            guard descriptor.stringComparator == nil, let keyPath = descriptor.keyPath,
                  let index = type.propertyIndex(for: keyPath) ?? namedIndex(keyPath, type: type) else { return nil }
            let property = type.schema.properties[index]
            guard !property.isList, [.int, .int8, .int16, .int32, .int64, .double, .float, .string, .date, .decimal].contains(property.kind) else {
                return nil
            }
            keys.append((index, descriptor.order == .reverse))
        }
        return keys
    }

    /// The property a `SortDescriptor(keyPath:ascending:)` names (`\T[_sortKey: name]`).
    private static func namedIndex<T: Object>(_ keyPath: PartialKeyPath<T>, type: ObjectType) -> Int? {
        type.schema.properties.indices.first { keyPath == sortKeyPath(T.self, type.schema.properties[$0].name) }
    }

    /// Orders two fields as `SortDescriptor` orders their values: nil first, then `<`.
    static func order(_ a: FieldValue, _ b: FieldValue) -> ComparisonResult {
        if a == .null { return b == .null ? .orderedSame : .orderedAscending }
        if b == .null { return .orderedDescending }
        if compare(a, b, .lessThan) { return .orderedAscending }
        if compare(b, a, .lessThan) { return .orderedDescending }
        return .orderedSame
    }
}
