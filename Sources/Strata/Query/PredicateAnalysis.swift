// PredicateAnalysis: the views of a Foundation #Predicate's expression nodes that the query
// compiler walks (equalities, conjunctions, key paths, values), and the index term an
// equality between a stored property and a constant gives, so a query on the primary key or
// an indexed property reads the index instead of scanning the table.

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

/// Index candidates of a query: `property == constant` terms (from the compiled predicate,
/// `QueryExpression.equalityTerms`, or a string query's condition).
enum PredicateAnalysis {
    struct Term {
        let propertyIndex: Int
        let value: FieldValue
    }
}
