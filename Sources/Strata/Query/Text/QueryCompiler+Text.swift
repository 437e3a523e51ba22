// String queries, checked and compiled: every key path is resolved against the schema
// when the query is made (an unknown property or a comparison that cannot mean anything
// is an error naming its offset), and the result evaluates on stored fields — the root
// object's, and those of the objects its links reach, read from the realm's snapshot (or
// the open write's pending rows). Top-level equalities on the primary key or an indexed
// property become index terms, as for `#Predicate`.
//
// Semantics (as NSPredicate and Realm): numbers compare by value across integer and
// floating-point properties; NaN equals nothing; nil equals only nil and orders against
// nothing; `!=` is the negation of `==`; a nil or deleted to-one link on a key path makes
// the value nil. A key path through a list (`phones.number`) is compared with ANY unless
// ALL or NONE says otherwise; `@count`, `@min`, `@max`, `@sum`
// and `@avg` reduce a list to one value (`@min`/`@max`/`@avg` of an empty list are nil,
// `@sum` is 0). `[c]` ignores case, `[d]` diacritics; LIKE takes `*` and `?` wildcards.

import Foundation

/// The schema of a type a string query reads (a realm's bound class, or a type of a
/// store's stored schema).
protocol TextQueryType {
    var schema: ObjectSchema { get }
    var className: String { get }
    var table: UInt32 { get }
    var primaryKeyIndex: Int? { get }
    var indexedProperties: [Int] { get }
}

/// Where a string query finds the types its links reach and their rows.
protocol TextQuerySource {
    func queryType(named name: String) -> (any TextQueryType)?
    /// The fields of the object `key` of `table`, or nil if there is none; reading
    /// `RowAccess.ownKey` gives `.link(key)`.
    func queryRow(table: UInt32, key: [UInt8]) -> ((Int) -> FieldValue)?
    /// The keys of the `origin` objects whose property `property` links to `target`.
    func queryBacklinks(origin: any TextQueryType, property: Int, target: [UInt8]) -> [[UInt8]]
}

extension BoundType: TextQueryType {}

extension Realm: TextQuerySource {
    func queryType(named name: String) -> (any TextQueryType)? { boundTypeOrDynamic(named: name) }

    /// The open write's pending row, else the stored one.
    func queryRow(table: UInt32, key: [UInt8]) -> ((Int) -> FieldValue)? {
        if let pending = writeState?.rows[RowKey(table: table, key: key)] {
            guard !pending.isDeleted else { return nil }
            return { $0 == RowAccess.ownKey ? .link(key) : pending.field($0) ?? .null }
        }
        guard let row = storedRow(table: table, key: key) else { return nil }
        return { $0 == RowAccess.ownKey ? .link(key) : (try? RowFormat.field($0, of: row)) ?? .null }
    }

    func queryBacklinks(origin: any TextQueryType, property: Int, target: [UInt8]) -> [[UInt8]] {
        backlinkKeys(origin: origin, property: property, target: target)
    }
}

/// A string query compiled for one object type.
struct CompiledTextQuery {
    /// Whether the object whose fields `row` reads matches.
    let evaluate: (_ source: any TextQuerySource, _ field: (Int) -> FieldValue) -> Bool
    /// The condition in the query IR, when all of it translates (`TextQueryCompiler.expression`):
    /// then the planner may answer it from the table's columns, as it answers a `#Predicate`.
    let expression: QueryExpression?
    /// Top-level equalities on the primary key or indexed properties.
    let indexTerms: [PredicateAnalysis.Term]
    /// Top-level `BEGINSWITH` (no options) on indexed string properties: the property and
    /// the prefix (candidates for an ordered index's prefix range).
    let prefixTerms: [(property: Int, prefix: String)]
    /// SORT(…) as stored properties and directions.
    let sortKeys: [(index: Int, reverse: Bool)]
    /// LIMIT(n).
    let limit: Int?
    /// The source text, for descriptions.
    let text: String

    /// Parses and checks `text` for the type `root` of `source` (a realm, or a store read
    /// through its stored schema).
    static func compile(_ text: String, arguments: [Any?], root: any TextQueryType, source: any TextQuerySource) throws -> CompiledTextQuery {
        let parsed = try TextQueryParser.parse(text, arguments: arguments)
        var compiler = TextQueryCompiler(text: text, realm: source, root: root)
        let condition = try compiler.compile(parsed.condition)
        var sortKeys: [(Int, Bool)] = []
        for (path, ascending, offset) in parsed.sort {
            sortKeys.append((try compiler.sortIndex(path, offset: offset), !ascending))
        }
        return CompiledTextQuery(evaluate: condition, expression: compiler.expression(parsed.condition),
                                 indexTerms: compiler.indexTerms(parsed.condition),
                                 prefixTerms: compiler.prefixTerms(parsed.condition),
                                 sortKeys: sortKeys, limit: parsed.limit, text: text)
    }
}

/// Checks a parsed query against a schema and builds its evaluation.
struct TextQueryCompiler {
    typealias Evaluation = (_ source: any TextQuerySource, _ field: (Int) -> FieldValue) -> Bool

    let text: String
    /// Where link targets' types and rows come from.
    let realm: any TextQuerySource
    let root: any TextQueryType

    /// An operand: what it reads, and what kind of value that is.
    struct Operand {
        /// The values for a row (several when the key path crosses a list).
        let read: (any TextQuerySource, (Int) -> FieldValue) -> [FieldValue]
        /// Whether the operand yields a collection (a list crossed, no aggregate).
        let isCollection: Bool
        /// The stored kind (nil: a constant, adapting to the other side).
        let kind: PropertyKind?
        /// The property read (for index terms and messages).
        let property: PropertySchema?
        let isRootProperty: Bool
        let description: String
        /// A constant's value.
        let constant: Any??
        /// A list literal or array argument (for IN and BETWEEN).
        let items: [Operand]?
        /// The root type's property this operand reads, when it reads one stored value of
        /// the root row (for the query IR).
        var rootIndex: Int? = nil
        /// A constant's stored form (for the query IR).
        var constantValue: FieldValue? = nil
    }

    private func error(_ offset: Int, _ reason: String) -> RealmError {
        TextQueryParser.error(text, offset, reason)
    }

    // MARK: Conditions

    mutating func compile(_ condition: TextQuery.Condition) throws -> Evaluation {
        switch condition {
        case .constant(let value):
            return { _, _ in value }
        case .and(let a, let b):
            let x = try compile(a), y = try compile(b)
            return { x($0, $1) && y($0, $1) }
        case .or(let a, let b):
            let x = try compile(a), y = try compile(b)
            return { x($0, $1) || y($0, $1) }
        case .not(let a):
            let x = try compile(a)
            return { !x($0, $1) }
        case .compare(let lhs, let op, let rhs, let options, let quantifier, let offset):
            return try compare(try operand(lhs), op, try operand(rhs), options: options, quantifier: quantifier, offset: offset)
        case .between(let lhs, let range, let quantifier, let offset):
            let value = try operand(lhs), bounds = try operand(range)
            guard let items = bounds.items, items.count == 2 else {
                throw error(range.offset, "BETWEEN needs two bounds: {low, high}")
            }
            try checkTypes(value, .greaterOrEqual, items[0], options: [], offset: offset)
            try checkTypes(value, .lessOrEqual, items[1], options: [], offset: offset)
            if quantifier != nil && !value.isCollection {
                throw error(offset, "ANY, ALL and NONE need a key path through a list; \(value.description) is a single value")
            }
            let lowRead = items[0].read, highRead = items[1].read
            return quantified(value, quantifier ?? .any) { realm, field in
                let low = lowRead(realm, field).first, high = highRead(realm, field).first
                return { element in
                    guard let low, let high else { return false }
                    return Self.test(element, .greaterOrEqual, low, []) && Self.test(element, .lessOrEqual, high, [])
                }
            }
        case .within(let lhs, let list, let quantifier, let offset):
            let value = try operand(lhs), container = try operand(list)
            if let items = container.items {
                var tests: [Evaluation] = []
                for item in items {
                    tests.append(try compare(value, .equal, item, options: [], quantifier: quantifier, offset: offset))
                }
                return { realm, field in tests.contains { $0(realm, field) } }
            }
            // `value IN collection-key-path`: the value is one of the collection's.
            guard container.isCollection else { throw error(list.offset, "IN needs a list: {a, b}, an array argument or a list property") }
            return try compare(container, .equal, value, options: [], quantifier: .any, offset: offset)
        }
    }

    // MARK: The query IR

    /// `condition` in the query IR, when every part of it is a comparison of a stored
    /// property of the root type with a constant that the IR judges exactly as `test` does
    /// (`irConstant`), joined by AND, OR and NOT, BETWEEN or IN a list of constants; nil
    /// otherwise (string operators and options, key paths through links or lists,
    /// aggregates, quantifiers), and the closures judge the whole condition. Called after
    /// `compile`, which has checked the condition.
    func expression(_ condition: TextQuery.Condition) -> QueryExpression? {
        switch condition {
        case .constant(let value):
            return .constant(value)
        case .and(let a, let b):
            guard let x = expression(a), let y = expression(b) else { return nil }
            return .and([x, y])
        case .or(let a, let b):
            guard let x = expression(a), let y = expression(b) else { return nil }
            return .or([x, y])
        case .not(let a):
            return expression(a).map { .not($0) }
        case .compare(let lhs, let op, let rhs, let options, let quantifier, _):
            guard options.isEmpty, quantifier == nil, let l = try? operand(lhs), let r = try? operand(rhs) else { return nil }
            return comparison(l, op, r)
        case .between(let lhs, let range, let quantifier, _):
            guard quantifier == nil, let value = try? operand(lhs), let bounds = try? operand(range),
                  let items = bounds.items, items.count == 2,
                  let low = comparison(value, .greaterOrEqual, items[0]),
                  let high = comparison(value, .lessOrEqual, items[1]) else { return nil }
            return .and([low, high])
        case .within(let lhs, let list, let quantifier, _):
            guard quantifier == nil, let value = try? operand(lhs), let container = try? operand(list), let items = container.items else { return nil }
            var terms: [QueryExpression] = []
            for item in items {
                guard let term = comparison(value, .equal, item) else { return nil }
                terms.append(term)
            }
            return .or(terms)
        }
    }

    /// `lhs op rhs` in the IR: a root property against a constant (either side), or
    /// `property == {a, b}` (IN) and its `!=`.
    private func comparison(_ lhs: Operand, _ op: TextQuery.Operator, _ rhs: Operand) -> QueryExpression? {
        if let items = rhs.items, lhs.rootIndex != nil, op == .equal || op == .notEqual {
            var terms: [QueryExpression] = []
            for item in items {
                guard let term = comparison(lhs, .equal, item) else { return nil }
                terms.append(term)
            }
            return op == .equal ? .or(terms) : .not(.or(terms))
        }
        guard lhs.items == nil, rhs.items == nil else { return nil }
        let property: Operand, constant: FieldValue, applied: TextQuery.Operator
        if lhs.rootIndex != nil, let value = rhs.constantValue {
            (property, constant, applied) = (lhs, value, op)
        } else if rhs.rootIndex != nil, let value = lhs.constantValue {
            (property, constant, applied) = (rhs, value, Self.flip(op))
        } else {
            return nil
        }
        guard let index = property.rootIndex, let kind = property.kind, let comparison = QueryComparison(rawValue: applied.rawValue),
              let value = Self.irConstant(constant, kind: kind, op: comparison) else { return nil }
        return .compare(.property(index), comparison, .constant(value))
    }

    /// `constant` as the IR must hold it to judge a property of `kind` exactly as `test`
    /// judges it: the IR compares two values of one kind with Swift's operators and is
    /// false across kinds, where `test` compares any two numbers as `Double`s; so an integer
    /// constant becomes a `Double` for a double property (as `test` converts it), and
    /// anything else that `test` would compare across kinds, or orders by other rules
    /// (booleans, UUIDs, nil), stays out. Nil when it does not translate.
    static func irConstant(_ constant: FieldValue, kind: PropertyKind, op: QueryComparison) -> FieldValue? {
        let equality = op == .equal || op == .notEqual
        switch (kind, constant) {
        case (.int, .int), (.int8, .int), (.int16, .int), (.int32, .int), (.int64, .int),
             (.double, .double), (.string, .string), (.date, .date):
            return constant
        case (.double, .int(let i)):
            return .double(Double(i))
        case (.bool, .bool), (.uuid, .uuid):
            return equality ? constant : nil
        case (.int, .null), (.int8, .null), (.int16, .null), (.int32, .null), (.int64, .null),
             (.double, .null), (.string, .null), (.date, .null), (.bool, .null), (.uuid, .null):
            return equality ? constant : nil
        default:
            return nil
        }
    }

    /// The evaluation of `lhs op rhs`.
    private func compare(_ lhs: Operand, _ op: TextQuery.Operator, _ rhs: Operand, options: TextQuery.StringOptions,
                         quantifier: TextQuery.Quantifier?, offset: Int) throws -> Evaluation {
        if lhs.isCollection && rhs.isCollection {
            throw error(offset, "cannot compare two lists (\(lhs.description), \(rhs.description)); use ANY with one list")
        }
        if quantifier != nil && !lhs.isCollection {
            throw error(offset, "ANY, ALL and NONE need a key path through a list; \(lhs.description) is a single value")
        }
        try checkTypes(lhs, op, rhs, options: options, offset: offset)
        if let items = rhs.items, op == .equal || op == .notEqual {
            // `x == {a, b}` reads as IN.
            var tests: [Evaluation] = []
            for item in items { tests.append(try compare(lhs, .equal, item, options: options, quantifier: quantifier, offset: offset)) }
            return op == .equal ? { realm, field in tests.contains { $0(realm, field) } } : { realm, field in !tests.contains { $0(realm, field) } }
        }
        if lhs.items != nil || rhs.items != nil {
            // Anything else with a list would compare a list as one value: never true.
            throw error(offset, "a list of values can only be the right-hand side of ==, != or IN (or BETWEEN's bounds), not \(lhs.items != nil ? "the left-hand side" : "compared with \(op.rawValue)")")
        }
        if lhs.isCollection || rhs.isCollection {
            // `ANY tags == 'a'`, or `'a' == ANY tags` (the comparison flipped).
            let (collection, other, op) = lhs.isCollection ? (lhs, rhs.read, op) : (rhs, lhs.read, Self.flip(op))
            return quantified(collection, quantifier ?? .any) { realm, field in
                let y = other(realm, field).first
                return { element in y.map { Self.test(element, op, $0, options) } ?? false }
            }
        }
        let a = lhs.read, b = rhs.read
        return { realm, field in
            guard let x = a(realm, field).first, let y = b(realm, field).first else { return false }
            return Self.test(x, op, y, options)
        }
    }

    /// Applies a quantifier to a collection operand's elements; `test` is made once per
    /// row (reading the other side once), then called per element.
    private func quantified(_ collection: Operand, _ quantifier: TextQuery.Quantifier,
                            _ makeTest: @escaping (any TextQuerySource, (Int) -> FieldValue) -> (FieldValue) -> Bool) -> Evaluation {
        let read = collection.read
        return { realm, field in
            let elements = read(realm, field)
            let test = makeTest(realm, field)
            switch quantifier {
            case .any: return elements.contains(where: test)
            case .all: return elements.allSatisfy(test)
            case .none: return !elements.contains(where: test)
            }
        }
    }

    private static func flip(_ op: TextQuery.Operator) -> TextQuery.Operator {
        switch op {
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        default: return op
        }
    }

    // MARK: Values

    /// `a op b` on two values.
    static func test(_ a: FieldValue, _ op: TextQuery.Operator, _ b: FieldValue, _ options: TextQuery.StringOptions) -> Bool {
        switch op {
        case .equal: return equal(a, b, options)
        case .notEqual: return !equal(a, b, options)
        case .less: return order(a, b, options) == .orderedAscending
        case .lessOrEqual: return order(a, b, options).map { $0 != .orderedDescending } ?? false
        case .greater: return order(a, b, options) == .orderedDescending
        case .greaterOrEqual: return order(a, b, options).map { $0 != .orderedAscending } ?? false
        case .beginsWith, .endsWith, .contains, .like:
            guard case .string(let x) = a, case .string(let y) = b else { return false }
            if y.isEmpty { return op != .like || x.isEmpty }
            if op == .like { return like(Array(fold(x, options)), Array(fold(y, options))) }
            guard !options.isEmpty else {
                switch op {
                case .beginsWith: return x.hasPrefix(y)
                case .endsWith: return x.hasSuffix(y)
                default: return x.contains(y)
                }
            }
            // As NSPredicate: Foundation's search with the comparison options.
            var search = compareOptions(options)
            if op == .beginsWith { search.insert(.anchored) }
            if op == .endsWith { search.formUnion([.anchored, .backwards]) }
            return x.range(of: y, options: search) != nil
        }
    }

    private static func compareOptions(_ options: TextQuery.StringOptions) -> String.CompareOptions {
        var result: String.CompareOptions = []
        if options.contains(.caseInsensitive) { result.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { result.insert(.diacriticInsensitive) }
        return result
    }

    private static func fold(_ s: String, _ options: TextQuery.StringOptions) -> String {
        options.isEmpty ? s : s.folding(options: compareOptions(options), locale: nil)
    }

    private static func number(_ v: FieldValue) -> Double? {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .float(let f): return Double(f)
        case .decimal(let d): return NSDecimalNumber(decimal: d).doubleValue
        default: return nil
        }
    }

    static func equal(_ a: FieldValue, _ b: FieldValue, _ options: TextQuery.StringOptions = []) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case let (.int(x), .int(y)): return x == y
        case let (.decimal(x), .decimal(y)): return x == y
        case let (.string(x), .string(y)): return options.isEmpty ? x == y : x.compare(y, options: compareOptions(options)) == .orderedSame
        case let (.bool(x), .bool(y)): return x == y
        case let (.date(x), .date(y)): return x == y
        case let (.uuid(x), .uuid(y)): return x == y
        case let (.data(x), .data(y)): return x == y
        case let (.link(x), .link(y)): return x == y
        case let (.objectId(x), .objectId(y)): return x == y
        default:
            guard let x = number(a), let y = number(b) else { return false }
            return x == y
        }
    }

    static func order(_ a: FieldValue, _ b: FieldValue, _ options: TextQuery.StringOptions = []) -> ComparisonResult? {
        func result<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult? {
            x < y ? .orderedAscending : (y < x ? .orderedDescending : (x == y ? .orderedSame : nil))
        }
        switch (a, b) {
        case let (.int(x), .int(y)): return result(x, y)
        case let (.decimal(x), .decimal(y)): return result(x, y)
        case let (.string(x), .string(y)): return options.isEmpty ? result(x, y) : x.compare(y, options: compareOptions(options))
        case let (.date(x), .date(y)): return result(x, y)
        case let (.objectId(x), .objectId(y)): return result(x, y)
        default:
            guard let x = number(a), let y = number(b) else { return nil }
            return result(x, y)
        }
    }

    /// `*` any run of characters, `?` one character.
    private static func like(_ s: [Character], _ pattern: [Character]) -> Bool {
        var si = 0, pi = 0, star = -1, mark = 0
        while si < s.count {
            if pi < pattern.count, pattern[pi] == "?" || (pattern[pi] != "*" && pattern[pi] == s[si]) {
                si += 1; pi += 1
            } else if pi < pattern.count, pattern[pi] == "*" {
                star = pi; mark = si; pi += 1
            } else if star >= 0 {
                pi = star + 1; mark += 1; si = mark
            } else {
                return false
            }
        }
        while pi < pattern.count, pattern[pi] == "*" { pi += 1 }
        return pi == pattern.count
    }

    // MARK: Operands

    private func operand(_ operand: TextQuery.Operand) throws -> Operand {
        switch operand {
        case .value(let value, let offset):
            let field = try constantField(value, offset: offset)
            if let items = field.items {
                return Operand(read: { _, _ in [] }, isCollection: false, kind: nil, property: nil, isRootProperty: false,
                               description: "an array", constant: .some(value), items: items)
            }
            let constant = field.value
            return Operand(read: { _, _ in [constant] }, isCollection: false, kind: nil, property: nil, isRootProperty: false,
                           description: "\(value.map { "\($0)" } ?? "nil")", constant: .some(value), items: nil,
                           constantValue: constant)
        case .list(let items, _):
            let compiled = try items.map { try self.operand($0) }
            return Operand(read: { _, _ in [] }, isCollection: false, kind: nil, property: nil, isRootProperty: false,
                           description: "a list", constant: nil, items: compiled)
        case .keyPath(let path):
            return try keyPath(path)
        }
    }

    /// A constant as a stored field (arrays as list items, for IN).
    private func constantField(_ value: Any?, offset: Int) throws -> (value: FieldValue, items: [Operand]?) {
        guard let value = FieldValue.unwrap(value) else { return (.null, nil) }
        switch value {
        case let v as Bool: return (.bool(v), nil)
        case let v as String: return (.string(v), nil)
        case let v as Double: return (.double(v), nil)
        case let v as Float: return (.float(v), nil)
        case let v as Date: return (.date(v), nil)
        case let v as UUID: return (.uuid(v), nil)
        case let v as Data: return (.data(v), nil)
        case let v as Decimal: return (.decimal(v), nil)
        case let v as ObjectId: return (.objectId(v), nil)
        case let v as Object:
            guard let state = v._state else { throw error(offset, "an unmanaged \(type(of: v).className) cannot be compared: add it to the realm first") }
            return (.link(state.key), nil)
        case let v as FieldValue: return (v, nil)
        case let v as any RawRepresentable:
            return try constantField(v.rawValue, offset: offset)
        default:
            if let int = TextQueryParser.integer(value) { return (.int(int), nil) }
            if let array = value as? [Any] {
                let items = try array.map { item -> Operand in
                    let field = try constantField(item, offset: offset).value
                    return Operand(read: { _, _ in [field] }, isCollection: false, kind: nil, property: nil, isRootProperty: false,
                                   description: "\(item)", constant: .some(item), items: nil, constantValue: field)
                }
                return (.null, items)
            }
            throw error(offset, "an argument of type \(type(of: value)) cannot be used in a query")
        }
    }

    /// How a key path reads rows of the type it has reached from the root row.
    private typealias RowsReader = (any TextQuerySource, (Int) -> FieldValue) -> [RowRef]
    private typealias ValuesReader = (any TextQuerySource, (Int) -> FieldValue) -> [FieldValue]

    /// Resolves a key path from the root type.
    private func keyPath(_ path: TextQuery.KeyPath) throws -> Operand {
        var bound: any TextQueryType = root
        // Steps: each reads rows of the next type from rows of this one.
        var rows: RowsReader = { _, _ in [.root] }
        var crossedList = false
        for (position, name) in path.components.enumerated() {
            guard let index = bound.schema.index(of: name) else {
                throw error(path.offset, "\(bound.className) has no property '\(name)'" + (position > 0 ? " (in '\(path.text)')" : ""))
            }
            let property = bound.schema.properties[index]
            let isLast = position == path.components.count - 1
            if property.kind == .column {
                throw error(path.offset, "\(bound.className).\(name) is a custom column type and cannot be queried")
            }
            if isLast && path.aggregated.isEmpty && property.kind != .linkingObjects {
                return try valueOperand(path, property: property, index: index, in: bound, rows: rows,
                                        crossedList: crossedList, isRoot: position == 0)
            }
            // Follow a link (or a list of links, or linking objects) to the next type.
            let step = try follow(path, property: property, index: index, from: bound, rows: rows, isLast: isLast)
            let previous = rows
            rows = step.rows
            if step.isList { crossedList = true }
            bound = step.target
            if isLast, let aggregate = path.aggregate {
                // `phones.@count`, or `phones.@max.number`.
                guard step.isList else { throw error(path.offset, "@\(aggregate.rawValue) needs a list; \(path.components.joined(separator: ".")) is a single link") }
                return try listAggregateOperand(path, aggregate: aggregate, target: step.target, reached: step.rows)
            }
            if isLast {
                // A link compared as a whole: `car == nil`, `car == %@` (nil when a to-one
                // link before it is nil, as above).
                let reached = previousLinks(previous, linked: step.linked, table: property.kind == .linkingObjects ? nil : step.target.table,
                                            single: !crossedList)
                return Operand(read: reached, isCollection: crossedList, kind: .object, property: property, isRootProperty: false,
                               description: path.text, constant: nil, items: nil)
            }
        }
        throw error(path.offset, "'\(path.text)' does not name a property")
    }

    /// The operand of a key path ending at a stored property (or an aggregate of a list
    /// property): its values read from the rows reached so far.
    private func valueOperand(_ path: TextQuery.KeyPath, property: PropertySchema, index: Int, in bound: any TextQueryType,
                              rows previous: @escaping RowsReader, crossedList: Bool, isRoot: Bool) throws -> Operand {
        let listRead = property.isList
        // Through to-one links only, the operand is one value: a nil (or deleted)
        // link on the way makes it nil, as NSPredicate and #Predicate read it, so
        // `car.model == nil` holds and `!=` stays the negation of `==`.
        let single = !crossedList && !listRead
        // Links read as the objects do: one to a deleted object is nil (a list skips it).
        let targetTable = property.kind == .object ? property.objectClassName.flatMap(realm.queryType(named:))?.table : nil
        let read: ValuesReader = { realm, field in
            var values: [FieldValue] = []
            for row in previous(realm, field) {
                var value = row.read(index, field)
                if let targetTable, case .link(let key) = value, realm.queryRow(table: targetTable, key: key) == nil { value = .null }
                if listRead, case .list(var items) = value {
                    if let targetTable {
                        items.removeAll { if case .link(let key) = $0 { return realm.queryRow(table: targetTable, key: key) == nil } else { return false } }
                    }
                    values.append(contentsOf: items)
                } else {
                    values.append(value)
                }
            }
            return single && values.isEmpty ? [.null] : values
        }
        if let aggregate = path.aggregate {
            guard property.isList else { throw error(path.offset, "@\(aggregate.rawValue) needs a list; \(bound.className).\(property.name) is not one") }
            guard !crossedList else { throw error(path.offset, "@\(aggregate.rawValue) of a list reached through another list is not supported") }
            if aggregate != .count, property.kind == .object {
                throw error(path.offset, "@\(aggregate.rawValue) of a list of objects needs a property: \(path.text).name")
            }
            try checkAggregate(aggregate, property, path)
            return Operand(read: Self.aggregateRead(aggregate, read), isCollection: false,
                           kind: aggregate == .count ? .int : (aggregate == .avg ? .double : property.kind), property: nil,
                           isRootProperty: false, description: path.text, constant: nil, items: nil)
        }
        return Operand(read: read, isCollection: crossedList || property.isList, kind: property.kind, property: property,
                       isRootProperty: isRoot && !property.isList, description: path.text, constant: nil, items: nil,
                       rootIndex: isRoot && !property.isList && !property.isMap && !crossedList ? index : nil)
    }

    /// One step through a link, a list of links, linking objects or an embedded object:
    /// the type reached, how its rows are read, and how the step's keys are read.
    private func follow(_ path: TextQuery.KeyPath, property: PropertySchema, index: Int, from bound: any TextQueryType,
                        rows previous: @escaping RowsReader, isLast: Bool)
        throws -> (target: any TextQueryType, rows: RowsReader, isList: Bool, linked: (any TextQuerySource, RowRef, (Int) -> FieldValue) -> [[UInt8]]) {
        let backlink = property.kind == .linkingObjects, embedded = property.kind == .embedded
        guard property.kind == .object || backlink || embedded, let targetName = property.objectClassName, let target = realm.queryType(named: targetName) else {
            if isLast, let aggregate = path.aggregate {
                throw error(path.offset, "@\(aggregate.rawValue) needs a list; \(bound.className).\(property.name) is not one")
            }
            throw error(path.offset, "\(bound.className).\(property.name) is not a link, so '\(path.text)' cannot go on past it")
        }
        let origin = backlink ? target.schema.index(of: property.originProperty ?? "").map { (target, $0) } : nil
        if backlink && origin == nil {
            throw error(path.offset, "\(bound.className).\(property.name) reads links from \(targetName).\(property.originProperty ?? ""), which does not exist")
        }
        let isList = property.isList || backlink
        let table = target.table
        let linked = Self.linkedKeys(index: index, isList: isList, origin: origin)
        let rows: RowsReader = { realm, field in
            var next: [RowRef] = []
            for row in previous(realm, field) {
                if embedded {
                    // Embedded objects are read from the row that holds them.
                    next += Self.embeddedRows(row.read(index, field))
                    continue
                }
                for key in linked(realm, row, field) {
                    if let reader = realm.queryRow(table: table, key: key) { next.append(.linked(reader)) }
                }
            }
            return next
        }
        return (target, rows, isList, linked)
    }

    /// `list.@count`, or `list.@max.property`, over the rows a list step reached.
    private func listAggregateOperand(_ path: TextQuery.KeyPath, aggregate: TextQuery.Aggregate, target: any TextQueryType,
                                      reached: @escaping RowsReader) throws -> Operand {
        if aggregate == .count {
            guard path.aggregated.isEmpty else { throw error(path.offset, "@count takes no property after it") }
            return Operand(read: { realm, field in [.int(Int64(reached(realm, field).count))] }, isCollection: false, kind: .int,
                           property: nil, isRootProperty: false, description: path.text, constant: nil, items: nil)
        }
        guard let name = path.aggregated.first, let inner = target.schema.index(of: name) else {
            throw error(path.offset, "@\(aggregate.rawValue) of a list of \(target.className) needs one of its properties after it")
        }
        let innerProperty = target.schema.properties[inner]
        try checkAggregate(aggregate, innerProperty, path)
        let values: ValuesReader = { realm, field in reached(realm, field).map { $0.read(inner, field) } }
        return Operand(read: Self.aggregateRead(aggregate, values), isCollection: false,
                       kind: aggregate == .avg ? .double : innerProperty.kind, property: nil, isRootProperty: false,
                       description: path.text, constant: nil, items: nil)
    }

    /// The link values themselves (for comparisons of a link with nil or an object).
    private func previousLinks(_ rows: @escaping (any TextQuerySource, (Int) -> FieldValue) -> [RowRef],
                               linked: @escaping (any TextQuerySource, RowRef, (Int) -> FieldValue) -> [[UInt8]],
                               table: UInt32?, single: Bool)
        -> (any TextQuerySource, (Int) -> FieldValue) -> [FieldValue] {
        { realm, field in
            // A link to a deleted object reads as nil (`table`: the targets', to check).
            let values = rows(realm, field).flatMap { row in
                linked(realm, row, field).filter { key in table.map { realm.queryRow(table: $0, key: key) != nil } ?? true }.map(FieldValue.link)
            }
            return single && values.isEmpty ? [.null] : values
        }
    }

    /// The rows of the embedded objects a field holds (one, or a list of them).
    private static func embeddedRows(_ value: FieldValue) -> [RowRef] {
        func reader(_ fields: [FieldValue]) -> RowRef { .linked { $0 < fields.count ? fields[$0] : .null } }
        switch value {
        case .embedded(let fields): return [reader(fields)]
        case .list(let items): return items.compactMap { if case .embedded(let fields) = $0 { return reader(fields) } else { return nil } }
        default: return []
        }
    }

    /// The keys a row's property `index` links to: a link, a list's links, or — for linking
    /// objects (`origin`: the origin type and property) — the keys of the objects linking
    /// to the row, found through the origin property's inverse index.
    private static func linkedKeys(index: Int, isList: Bool, origin: (type: any TextQueryType, property: Int)?)
        -> (any TextQuerySource, RowRef, (Int) -> FieldValue) -> [[UInt8]] {
        { realm, row, field in
            if let origin {
                guard case .link(let own) = row.read(RowAccess.ownKey, field) else { return [] }
                return realm.queryBacklinks(origin: origin.type, property: origin.property, target: own)
            }
            switch row.read(index, field) {
            case .link(let key): return [key]
            case .list(let items) where isList: return items.compactMap { if case .link(let key) = $0 { return key } else { return nil } }
            default: return []
            }
        }
    }

    private func checkAggregate(_ aggregate: TextQuery.Aggregate, _ property: PropertySchema, _ path: TextQuery.KeyPath) throws {
        guard aggregate != .count else { return }
        let numeric: Set<PropertyKind> = [.int, .int8, .int16, .int32, .int64, .double, .float, .decimal]
        if aggregate == .sum || aggregate == .avg {
            guard numeric.contains(property.kind) else { throw error(path.offset, "@\(aggregate.rawValue) needs numbers; \(property.name) holds \(property.kind.rawValue)") }
        } else {
            guard numeric.contains(property.kind) || property.kind == .date || property.kind == .string else {
                throw error(path.offset, "@\(aggregate.rawValue) needs numbers, dates or strings; \(property.name) holds \(property.kind.rawValue)")
            }
        }
    }

    private static func aggregateRead(_ aggregate: TextQuery.Aggregate, _ read: @escaping (any TextQuerySource, (Int) -> FieldValue) -> [FieldValue])
        -> (any TextQuerySource, (Int) -> FieldValue) -> [FieldValue] {
        { realm, field in
            let values = read(realm, field).filter { $0 != .null }
            switch aggregate {
            case .count: return [.int(Int64(read(realm, field).count))]
            case .min: return [values.min { order($0, $1) == .orderedAscending } ?? .null]
            case .max: return [values.max { order($0, $1) == .orderedAscending } ?? .null]
            case .sum:
                if values.allSatisfy({ if case .int = $0 { return true } else { return false } }) {
                    return [.int(values.reduce(Int64(0)) { if case .int(let i) = $1 { return $0 &+ i } else { return $0 } })]
                }
                return [.double(values.reduce(0) { $0 + (number($1) ?? 0) })]
            case .avg:
                guard !values.isEmpty else { return [.null] }
                return [.double(values.reduce(0) { $0 + (number($1) ?? 0) } / Double(values.count))]
            }
        }
    }

    /// A row a key path reaches: the root object's (read through the caller's accessor,
    /// which cannot be stored) or a linked object's.
    enum RowRef {
        case root
        case linked((Int) -> FieldValue)

        func read(_ index: Int, _ root: (Int) -> FieldValue) -> FieldValue {
            switch self {
            case .root: return root(index)
            case .linked(let reader): return reader(index)
            }
        }
    }

    // MARK: Checks

    private static let numericKinds: Set<PropertyKind> = [.int, .int8, .int16, .int32, .int64, .double, .float, .decimal]

    /// Refuses comparisons that cannot mean anything: a string operator on a number, a
    /// number with a string, an ordering of booleans…
    private func checkTypes(_ lhs: Operand, _ op: TextQuery.Operator, _ rhs: Operand, options: TextQuery.StringOptions, offset: Int) throws {
        let kinds = [lhs.kind, rhs.kind].compactMap { $0 }
        if op.isStringOperator || !options.isEmpty {
            for operand in [lhs, rhs] {
                // An AnyRealmValue may hold a string: the operator is false for other values.
                if let kind = operand.kind, kind != .string, kind != .mixed {
                    throw error(offset, "\(op.rawValue)\(options.isEmpty ? "" : " with [c]/[d]") needs strings; \(operand.description) holds \(kind.rawValue)")
                }
                if operand.kind == nil, let constant = operand.constant, let value = constant, !(value is String) {
                    throw error(offset, "\(op.rawValue) needs a string; got \(type(of: value))")
                }
            }
        }
        if [.less, .lessOrEqual, .greater, .greaterOrEqual].contains(op) {
            for kind in kinds where kind == .bool || kind == .uuid || kind == .data || kind == .object {
                throw error(offset, "\(kind == .object ? "links" : kind.rawValue + " values") cannot be ordered with \(op.rawValue)")
            }
        }
        // A property against a constant of an unrelated type.
        for (property, constant) in [(lhs, rhs), (rhs, lhs)] {
            guard let kind = property.kind, constant.kind == nil, let boxed = constant.constant, let value = FieldValue.unwrap(boxed) else { continue }
            if constant.items != nil { continue }
            let field = (try? constantField(value, offset: offset))?.value ?? .null
            if !Self.compatible(kind, field) {
                throw error(offset, "\(property.description) holds \(kind.rawValue); it cannot be compared with \(type(of: value)) \(value)")
            }
        }
    }

    private static func compatible(_ kind: PropertyKind, _ value: FieldValue) -> Bool {
        // An AnyRealmValue compares with any single value: numbers across their kinds,
        // anything else only with its own kind.
        if kind == .mixed {
            switch value {
            case .list, .embedded, .map, .link: return false
            default: return true
            }
        }
        switch value {
        case .null: return true
        case .int, .double, .float, .decimal: return numericKinds.contains(kind)
        case .string: return kind == .string
        case .bool: return kind == .bool
        case .date: return kind == .date
        case .uuid: return kind == .uuid
        case .data: return kind == .data
        case .link: return kind == .object
        case .objectId: return kind == .objectId
        case .list, .embedded, .map: return false
        }
    }

    // MARK: Index terms and sorting

    /// `BEGINSWITH` without options at the top level (through AND), an indexed `String`
    /// property against a non-empty constant string.
    func prefixTerms(_ condition: TextQuery.Condition) -> [(property: Int, prefix: String)] {
        switch condition {
        case .and(let a, let b): return prefixTerms(a) + prefixTerms(b)
        case .compare(.keyPath(let keyPath), .beginsWith, .value(let constant?, _), let options, nil, _) where options.isEmpty:
            guard keyPath.components.count == 1, keyPath.aggregate == nil, let prefix = constant as? String, !prefix.isEmpty,
                  let index = root.schema.index(of: keyPath.components[0]), root.indexedProperties.contains(index) else { return [] }
            let property = root.schema.properties[index]
            guard property.kind == .string, !property.isList, !property.isMap else { return [] }
            return [(index, prefix)]
        default:
            return []
        }
    }

    /// Equalities at the top level (through AND) on the primary key or an indexed property.
    func indexTerms(_ condition: TextQuery.Condition) -> [PredicateAnalysis.Term] {
        switch condition {
        case .and(let a, let b): return indexTerms(a) + indexTerms(b)
        case .compare(let lhs, .equal, let rhs, let options, nil, _) where options.isEmpty:
            for (path, value) in [(lhs, rhs), (rhs, lhs)] {
                guard case .keyPath(let keyPath) = path, keyPath.components.count == 1, keyPath.aggregate == nil,
                      case .value(let constant, _) = value, constant != nil,
                      let index = root.schema.index(of: keyPath.components[0]) else { continue }
                var property = root.schema.properties[index]
                guard !property.isList, property.kind != .object, property.kind != .column,
                      index == root.primaryKeyIndex || root.indexedProperties.contains(index) else { continue }
                property.isOptional = true
                guard let field = try? FieldValue.converting(constant, to: property, context: property.name),
                      Self.compatible(property.kind, field) else { continue }
                return [PredicateAnalysis.Term(propertyIndex: index, value: field)]
            }
            return []
        default:
            return []
        }
    }

    /// The stored property a SORT key path names.
    func sortIndex(_ path: [String], offset: Int) throws -> Int {
        guard path.count == 1, let index = root.schema.index(of: path[0]) else {
            throw error(offset, path.count == 1 ? "\(root.className) has no property '\(path[0])' to sort by"
                                                : "SORT takes a property of \(root.className), not a key path through links")
        }
        let property = root.schema.properties[index]
        guard !property.isList, [.int, .int8, .int16, .int32, .int64, .double, .float, .string, .date, .decimal].contains(property.kind) else {
            throw error(offset, "\(root.className).\(property.name) cannot be sorted on")
        }
        return index
    }
}
