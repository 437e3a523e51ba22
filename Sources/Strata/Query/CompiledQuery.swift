// CompiledQuery: predicates (into the query IR, `QueryExpression`) and sort descriptors translated to work on stored fields, so a
// query reads rows without building objects. Only what is certain to mean the same as
// Foundation's evaluation is translated (comparisons of a stored property with a constant,
// &&, ||, !; sorts on a stored property without a custom string comparator); anything
// else falls back to evaluating the predicate or descriptor on objects.

import Foundation

/// A `#Predicate` expression node the query compiler translates. Each node kind answers for
/// itself, so compiling a node costs one dynamic cast: probing a node for each kind it might
/// be cost a dozen casts a predicate, each a conformance look-up in the runtime, and was most
/// of a warm indexed query's fixed cost (docs/benchmarks.md, "The query's set-up").
protocol _QueryTranslatable {
    /// The node as a filter, or nil when it is not translated.
    func _queryExpression(_ type: ObjectType) -> QueryExpression?
    /// The node as one side of a comparison, or nil when it is not an operand.
    func _queryOperand(_ type: ObjectType) -> QueryOperand?
    /// The terms of the node's top-level `&&` (the node itself unless it is a conjunction).
    func _queryConjuncts(_ type: ObjectType) -> [QueryExpression?]
}

extension _QueryTranslatable {
    func _queryExpression(_ type: ObjectType) -> QueryExpression? { nil }
    func _queryOperand(_ type: ObjectType) -> QueryOperand? { nil }
    func _queryConjuncts(_ type: ObjectType) -> [QueryExpression?] { [_queryExpression(type)] }
}

extension PredicateExpressions.Conjunction: _QueryTranslatable {
    func _queryExpression(_ type: ObjectType) -> QueryExpression? {
        guard let a = QueryCompiler.compile(lhs, type: type), let b = QueryCompiler.compile(rhs, type: type) else { return nil }
        return .and(QueryCompiler.flattened(a, b, and: true))
    }
    func _queryConjuncts(_ type: ObjectType) -> [QueryExpression?] {
        QueryCompiler.conjuncts(lhs, type: type) + QueryCompiler.conjuncts(rhs, type: type)
    }
}
extension PredicateExpressions.Disjunction: _QueryTranslatable {
    func _queryExpression(_ type: ObjectType) -> QueryExpression? {
        guard let a = QueryCompiler.compile(lhs, type: type), let b = QueryCompiler.compile(rhs, type: type) else { return nil }
        return .or(QueryCompiler.flattened(a, b, and: false))
    }
}
extension PredicateExpressions.Negation: _QueryTranslatable {
    func _queryExpression(_ type: ObjectType) -> QueryExpression? {
        QueryCompiler.compile(wrapped, type: type).map { .not($0) }
    }
}
extension PredicateExpressions.Equal: _QueryTranslatable {
    func _queryExpression(_ type: ObjectType) -> QueryExpression? {
        QueryCompiler.comparison(lhs, .equal, rhs, type: type)
    }
}
extension PredicateExpressions.NotEqual: _QueryTranslatable {
    func _queryExpression(_ type: ObjectType) -> QueryExpression? {
        QueryCompiler.comparison(lhs, .notEqual, rhs, type: type)
    }
}
extension PredicateExpressions.Comparison: _QueryTranslatable {
    func _queryExpression(_ type: ObjectType) -> QueryExpression? {
        QueryComparison(op).flatMap { QueryCompiler.comparison(lhs, $0, rhs, type: type) }
    }
}
/// A stored property of the predicate's object (`$0.age`): the root must be the predicate's
/// variable, not a value or another key path.
extension PredicateExpressions.KeyPath: _QueryTranslatable where Root: _PredicateVariable {
    func _queryOperand(_ type: ObjectType) -> QueryOperand? {
        guard let index = type.propertyIndex(for: keyPath) else { return nil }
        let property = type.schema.properties[index]
        guard !property.isList, property.kind != .object, property.kind != .column else { return nil }
        return .property(index)
    }
    /// A Bool property alone (`$0.active && …`): the property is true.
    func _queryExpression(_ type: ObjectType) -> QueryExpression? {
        guard case .property(let index)? = _queryOperand(type),
              type.schema.properties[index].kind == .bool, !type.schema.properties[index].isOptional else { return nil }
        return .compare(.property(index), .equal, .constant(.bool(true)))
    }
}
extension PredicateExpressions.Value: _QueryTranslatable {
    func _queryOperand(_ type: ObjectType) -> QueryOperand? {
        // Cast as `Any` so an optional's wrapped value is found as before (`Int?` holding 3).
        guard let persistable = (value as Any) as? any _PersistableValue,
              Swift.type(of: persistable)._propertyKind != .object, Swift.type(of: persistable)._propertyKind != .column,
              let field = try? persistable._field(in: nil) else { return nil }
        return .constant(field)
    }
}
extension PredicateExpressions.NilLiteral: _QueryTranslatable {
    func _queryOperand(_ type: ObjectType) -> QueryOperand? { .constant(.null) }
}
/// `-3`: a negated constant (the literal is a unary minus over 3).
extension PredicateExpressions.UnaryMinus: _QueryTranslatable {
    func _queryOperand(_ type: ObjectType) -> QueryOperand? {
        guard case .constant(let value)? = QueryCompiler.operand(wrapped, type: type) else { return nil }
        switch value {
        case .int(let i) where i != .min: return .constant(.int(-i))
        case .double(let d): return .constant(.double(-d))
        case .float(let f): return .constant(.float(-f))
        case .decimal(let d): return .constant(.decimal(-d))
        default: return nil
        }
    }
}
/// The predicate's own variable (`$0`), the root a translated key path starts from.
protocol _PredicateVariable {}
extension PredicateExpressions.Variable: _PredicateVariable {}

enum QueryCompiler {
    /// The terms of `expression`'s top-level `&&`, each in the query IR or nil when it uses
    /// anything not translated: the index terms come from the translated ones even when
    /// another term is not (its objects are then judged by the predicate itself).
    static func conjuncts<E>(_ expression: E, type: ObjectType) -> [QueryExpression?] {
        guard let node = expression as? _QueryTranslatable else { return [nil] }
        return node._queryConjuncts(type)
    }

    /// `expression` (a `#Predicate`'s) in the query IR, or nil if it uses anything not
    /// translated.
    static func compile<E>(_ expression: E, type: ObjectType) -> QueryExpression? {
        (expression as? _QueryTranslatable)?._queryExpression(type)
    }

    /// `expression` as one side of a comparison, or nil.
    static func operand<E>(_ expression: E, type: ObjectType) -> QueryOperand? {
        (expression as? _QueryTranslatable)?._queryOperand(type)
    }

    /// `a op b`, with the property on the left when one side is a constant; nil when
    /// either side is not an operand.
    static func comparison<A, B>(_ a: A, _ op: QueryComparison, _ b: B, type: ObjectType) -> QueryExpression? {
        guard let a = operand(a, type: type), let b = operand(b, type: type) else { return nil }
        if case .constant = a, case .property = b { return .compare(b, op.flipped, a) }
        return .compare(a, op, b)
    }

    /// `a && b` (or `a || b`) as one flat list of terms.
    static func flattened(_ a: QueryExpression, _ b: QueryExpression, and: Bool) -> [QueryExpression] {
        func terms(_ e: QueryExpression) -> [QueryExpression] {
            switch (e, and) {
            case (.and(let inner), true), (.or(let inner), false): return inner
            default: return [e]
            }
        }
        return terms(a) + terms(b)
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
