// PredicateAnalysis: looks inside a Foundation #Predicate for an equality between a
// stored property and a constant, so a query on the primary key or an indexed property
// reads the index instead of scanning the table.

import Foundation

protocol _EqualityExpression { var operands: (Any, Any) { get } }
protocol _ConjunctionExpression { var operands: (Any, Any) { get } }
protocol _KeyPathOperand { var rootIsVariable: Bool { get }; var anyKeyPath: AnyKeyPath { get } }
protocol _ValueOperand { var anyOperand: Any { get } }
protocol _VariableOperand {}

extension PredicateExpressions.Equal: _EqualityExpression { var operands: (Any, Any) { (lhs, rhs) } }
extension PredicateExpressions.Conjunction: _ConjunctionExpression { var operands: (Any, Any) { (lhs, rhs) } }
extension PredicateExpressions.KeyPath: _KeyPathOperand {
    var rootIsVariable: Bool { root is _VariableOperand }
    var anyKeyPath: AnyKeyPath { keyPath }
}
extension PredicateExpressions.Value: _ValueOperand { var anyOperand: Any { value } }
extension PredicateExpressions.Variable: _VariableOperand {}

/// `property == constant` terms of a predicate, found where the predicate is a conjunction.
enum PredicateAnalysis {
    struct Term {
        let propertyIndex: Int
        let value: FieldValue
    }

    /// Every equality term at the top level of `expression` (through `&&`).
    static func equalityTerms(_ expression: Any, type: ObjectType) -> [Term] {
        if let conjunction = expression as? _ConjunctionExpression {
            return equalityTerms(conjunction.operands.0, type: type) + equalityTerms(conjunction.operands.1, type: type)
        }
        guard let equality = expression as? _EqualityExpression else { return [] }
        let (lhs, rhs) = equality.operands
        for (path, constant) in [(lhs, rhs), (rhs, lhs)] {
            guard let keyPath = path as? _KeyPathOperand, keyPath.rootIsVariable,
                  let value = constant as? _ValueOperand,
                  let index = type.propertyIndex(for: keyPath.anyKeyPath) else { continue }
            let property = type.schema.properties[index]
            guard !property.isList, property.kind != .object,
                  let persistable = value.anyOperand as? any _PersistableValue,
                  let field = try? persistable._field(in: nil) else { continue }
            return [Term(propertyIndex: index, value: field)]
        }
        return []
    }
}
