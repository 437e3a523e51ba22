// QueryPlan: how a query finds its candidates and judges them — what the planner chose,
// and what `Results.explain()` prints.

/// The planner's choice for one query (`ResultsQuery.plan`).
enum QueryPlan {
    /// One key: an equality on the primary key.
    case primaryKey(PredicateAnalysis.Term)
    /// The keys of an equality on an indexed property, from its hash index.
    case hashIndex(PredicateAnalysis.Term)
    /// The keys in a range of an ordered index (`matches` of them stored), each object's
    /// row then judged by every filter.
    case orderedIndex(RangeTerm, matches: Int)
    /// Typed columns of the table's projection, every filter evaluated over them.
    case columnScan(QueryExpression)
    /// Every row, decoded (filters that do not translate are evaluated on objects).
    case rowScan
    /// The objects of one list, set or linking objects, each judged as an object.
    case collection(CollectionBase)
}

extension ResultsQuery {
    /// The plan in words: the access path, then how the rest of the filter, the sort and
    /// the limit are applied.
    func explain(in realm: Realm) -> String {
        let pending = realm.writeState?.rows.rows(inTable: bound.table) ?? [:]
        let properties = bound.schema.properties
        func name(_ index: Int) -> String { index < properties.count ? properties[index].name : "#\(index)" }
        var lines: [String] = []
        switch plan(in: realm, pending: pending) {
        case .primaryKey(let term):
            lines.append("\(bound.className): primary key \(name(term.propertyIndex)) == \(term.value.queryLiteral) (one look-up)")
        case .hashIndex(let term):
            lines.append("\(bound.className): hash index on \(name(term.propertyIndex)) == \(term.value.queryLiteral)"
                         + (pending.isEmpty ? "" : " + \(pending.count) objects pending in this write"))
        case .orderedIndex(let term, let matches):
            lines.append("\(bound.className): ordered index on \(name(term.property)), \(term.describe(name: name(term.property)))"
                         + " (\(matches) stored objects\(pending.isEmpty ? "" : " + \(pending.count) pending in this write"), each row then judged)")
        case .columnScan(let expression):
            let columns = expression.properties.map(name).joined(separator: ", ")
            lines.append("\(bound.className): column scan over \(columns.isEmpty ? "no property" : columns) of \(realm.snapshot.count(table: bound.table)) objects")
        case .rowScan:
            let why = fieldExpression == nil && !filters.isEmpty ? " (a filter does not translate to stored fields: evaluated on objects)"
                : !textFilters.isEmpty ? " (string query evaluated on rows)"
                : !pending.isEmpty ? " (objects pending in this write)" : ""
            lines.append("\(bound.className): row scan\(why)")
        case .collection(let base):
            lines.append("\(bound.className): the objects of \(base.name), each read")
        }
        if let scanExpression, !textFilters.isEmpty {
            lines.append("  filter: \(scanExpression.describe(names: name))")
        } else if let fieldExpression, !filters.isEmpty {
            lines.append("  filter: \(fieldExpression.describe(names: name))")
        } else if !filters.isEmpty {
            lines.append("  filter: \(filters.count) predicate(s) evaluated on objects")
        }
        for text in textFilters {
            lines.append("  string query: \(text.text)" + (scanExpression != nil ? " (in the filter above)" : " (evaluated on rows)"))
        }
        if let sortKeys, !sortKeys.isEmpty {
            lines.append("  sort: " + sortKeys.map { "\(name($0.index)) \($0.reverse ? "descending" : "ascending")" }.joined(separator: ", "))
        } else if isSorted {
            lines.append("  sort: \(sort.count) descriptor(s) evaluated on objects")
        } else {
            lines.append(base == nil ? "  order: primary key" : "  order: the collection's")
        }
        if !distinct.isEmpty { lines.append("  distinct: " + distinct.map(name).joined(separator: ", ") + " (the first of each, in order)") }
        if let limit { lines.append("  limit: \(limit)") }
        return lines.joined(separator: "\n")
    }
}
