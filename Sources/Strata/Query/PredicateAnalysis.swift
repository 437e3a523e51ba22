// PredicateAnalysis: the index term an equality between a stored property and a constant
// gives (from a compiled predicate, `QueryExpression.equalityTerms`, or a string query's
// condition), so a query on the primary key or an indexed property reads the index instead
// of scanning the table.

/// Index candidates of a query: `property == constant` terms.
enum PredicateAnalysis {
    struct Term {
        let propertyIndex: Int
        let value: FieldValue
    }
}
