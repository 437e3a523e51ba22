// Query<T>: Realm Swift's type-safe queries, `results.where { $0.age > 3 && $0.name.starts(with: "A") }`.
// Key paths are resolved to stored properties when the closure runs (through the model's
// property probe), and the expression is written as a string query with its values as
// arguments — as Realm Swift builds an NSPredicate — then compiled and planned like any
// string query: one implementation of the language's meaning, checked by its differential
// tests.

import Foundation

/// A type-safe query expression over `T` (Realm Swift's `Query`): the argument of
/// ``RealmCollection/where(_:)``.
///
/// ```swift
/// let adults = realm.objects(Person.self).where { $0.age >= 18 && $0.name.starts(with: "A", options: .caseInsensitive) }
/// let owners = realm.objects(Person.self).where { $0.dogs.count > 1 || $0.address.city == "Oslo" }
/// ```
///
/// A key path that is not a stored property (a computed property, a method) traps when the
/// query is built, naming it, as Realm raises.
@dynamicMemberLookup
public struct Query<T> {
    /// The expression as string-query text (`%@` for each argument).
    let text: String
    let arguments: [Any?]
    /// Whether `text` is a key path (a Bool one is a condition only when compared to true).
    let isKeyPath: Bool

    init(text: String, arguments: [Any?] = [], isKeyPath: Bool = false) {
        self.text = text
        self.arguments = arguments
        self.isKeyPath = isKeyPath
    }

    /// The start of a query on `T`.
    static var root: Query<T> { Query(text: "", isKeyPath: true) }

    private func path(_ name: String) -> String { text.isEmpty ? name : text + "." + name }

    /// This expression as a condition: a Bool key path means "is true".
    var condition: (text: String, arguments: [Any?]) {
        isKeyPath ? ("\(text) == true", arguments) : (text, arguments)
    }

    fileprivate func comparing(_ op: String, _ value: Any?) -> Query<Bool> {
        Query<Bool>(text: "\(text) \(op) %@", arguments: arguments + [Self.argument(value)])
    }

    fileprivate func comparing<U>(_ op: String, _ other: Query<U>) -> Query<Bool> {
        Query<Bool>(text: "\(text) \(op) \(other.text)", arguments: arguments + other.arguments)
    }

    /// A value as a string query argument: nil for `Optional.none`, an array's elements, as is otherwise.
    static func argument(_ value: Any?) -> Any? {
        guard let value else { return nil }
        if let optional = value as? any _QueryOptionalValue { return optional._queryWrapped.map(argument) ?? nil }
        return value
    }
}

/// An `Optional`, seen through its wrapped value (a query argument).
public protocol _QueryOptionalValue {
    /// The wrapped value, or nil.
    var _queryWrapped: Any? { get }
}

extension Optional: _QueryOptionalValue {
    public var _queryWrapped: Any? { self.map { $0 as Any } }
}

/// The `Optional` types a query's key path may cross (`$0.owner.name` with `owner: Person?`).
public protocol _QueryOptional {
    /// The wrapped type.
    associatedtype Wrapped
}

extension Optional: _QueryOptional {}

// MARK: Key paths

extension Query where T: Object {
    /// The stored property `keyPath` names.
    public subscript<V>(dynamicMember keyPath: KeyPath<T, V>) -> Query<V> {
        Query<V>(text: path(Self.name(of: keyPath, in: T.self)), arguments: arguments, isKeyPath: true)
    }

    static func name(of keyPath: AnyKeyPath, in type: Object.Type) -> String {
        let info = ObjectType.info(for: type)
        guard let index = info.propertyIndex(for: keyPath) else {
            preconditionFailure("Query: \(keyPath) is not a stored property of \(type.className) (only stored properties can be queried)")
        }
        return info.schema.properties[index].name
    }
}

extension Query where T: _QueryOptional, T.Wrapped: Object {
    /// The stored property `keyPath` names, through an optional link.
    public subscript<V>(dynamicMember keyPath: KeyPath<T.Wrapped, V>) -> Query<V> {
        Query<V>(text: path(Query<T.Wrapped>.name(of: keyPath, in: T.Wrapped.self)), arguments: arguments, isKeyPath: true)
    }
}

extension Query where T: RealmCollection, T.Element: Object {
    /// The property `keyPath` of the collection's objects: a comparison holds when it holds
    /// for any of them (`$0.dogs.age > 3`).
    public subscript<V>(dynamicMember keyPath: KeyPath<T.Element, V>) -> Query<V> {
        Query<V>(text: path(Query<T.Element>.name(of: keyPath, in: T.Element.self)), arguments: arguments, isKeyPath: true)
    }
}

// MARK: Comparisons

extension Query {
    /// Equal to `value` (nil for an optional property without a value; an object for a link).
    public static func == (lhs: Query, rhs: T) -> Query<Bool> { lhs.comparing("==", rhs) }
    /// Not equal to `value`.
    public static func != (lhs: Query, rhs: T) -> Query<Bool> { lhs.comparing("!=", rhs) }
    /// Equal to another property.
    public static func == (lhs: Query, rhs: Query) -> Query<Bool> { lhs.comparing("==", rhs) }
    /// Not equal to another property.
    public static func != (lhs: Query, rhs: Query) -> Query<Bool> { lhs.comparing("!=", rhs) }

    /// One of `values`.
    public func `in`<S: Sequence>(_ values: S) -> Query<Bool> where S.Element == T {
        Query<Bool>(text: "\(text) IN %@", arguments: arguments + [values.map { Self.argument($0) }])
    }
}

extension Query where T: Comparable {
    /// Less than `rhs`.
    public static func < (lhs: Query, rhs: T) -> Query<Bool> { lhs.comparing("<", rhs) }
    /// At most `rhs`.
    public static func <= (lhs: Query, rhs: T) -> Query<Bool> { lhs.comparing("<=", rhs) }
    /// Greater than `rhs`.
    public static func > (lhs: Query, rhs: T) -> Query<Bool> { lhs.comparing(">", rhs) }
    /// At least `rhs`.
    public static func >= (lhs: Query, rhs: T) -> Query<Bool> { lhs.comparing(">=", rhs) }
    /// Less than another property.
    public static func < (lhs: Query, rhs: Query) -> Query<Bool> { lhs.comparing("<", rhs) }
    /// At most another property.
    public static func <= (lhs: Query, rhs: Query) -> Query<Bool> { lhs.comparing("<=", rhs) }
    /// Greater than another property.
    public static func > (lhs: Query, rhs: Query) -> Query<Bool> { lhs.comparing(">", rhs) }
    /// At least another property.
    public static func >= (lhs: Query, rhs: Query) -> Query<Bool> { lhs.comparing(">=", rhs) }

    /// Between the bounds, both included (BETWEEN).
    public func contains(_ range: ClosedRange<T>) -> Query<Bool> {
        Query<Bool>(text: "\(text) BETWEEN {%@, %@}", arguments: arguments + [range.lowerBound, range.upperBound])
    }

    /// At least the lower bound and below the upper one.
    public func contains(_ range: Range<T>) -> Query<Bool> {
        Query<Bool>(text: "(\(text) >= %@ AND \(text) < %@)", arguments: arguments + [range.lowerBound] + arguments + [range.upperBound])
    }
}

extension Query where T: _QueryOptional, T.Wrapped: Comparable {
    /// Less than `rhs`.
    public static func < (lhs: Query, rhs: T.Wrapped) -> Query<Bool> { lhs.comparing("<", rhs) }
    /// At most `rhs`.
    public static func <= (lhs: Query, rhs: T.Wrapped) -> Query<Bool> { lhs.comparing("<=", rhs) }
    /// Greater than `rhs`.
    public static func > (lhs: Query, rhs: T.Wrapped) -> Query<Bool> { lhs.comparing(">", rhs) }
    /// At least `rhs`.
    public static func >= (lhs: Query, rhs: T.Wrapped) -> Query<Bool> { lhs.comparing(">=", rhs) }
}

// MARK: Conditions

extension Query where T == Bool {
    /// Both conditions.
    public static func && (lhs: Query, rhs: Query) -> Query {
        let (l, r) = (lhs.condition, rhs.condition)
        return Query(text: "(\(l.text) AND \(r.text))", arguments: l.arguments + r.arguments)
    }

    /// Either condition.
    public static func || (lhs: Query, rhs: Query) -> Query {
        let (l, r) = (lhs.condition, rhs.condition)
        return Query(text: "(\(l.text) OR \(r.text))", arguments: l.arguments + r.arguments)
    }

    /// The opposite condition.
    public static prefix func ! (query: Query) -> Query {
        let c = query.condition
        return Query(text: "NOT (\(c.text))", arguments: c.arguments)
    }
}

// MARK: Strings

/// How string comparisons of a ``Query`` compare (Realm Swift's `StringOptions`).
public struct StringOptions: OptionSet, Sendable {
    /// The options as bits.
    public let rawValue: Int
    /// The options of `rawValue`'s bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Upper and lower case compare equal.
    public static let caseInsensitive = StringOptions(rawValue: 1)
    /// Letters with and without accents compare equal.
    public static let diacriticInsensitive = StringOptions(rawValue: 2)

    var modifier: String {
        switch (contains(.caseInsensitive), contains(.diacriticInsensitive)) {
        case (true, true): return "[cd]"
        case (true, false): return "[c]"
        case (false, true): return "[d]"
        case (false, false): return ""
        }
    }
}

/// The string types a ``Query`` compares as text.
public protocol _QueryString {}
extension String: _QueryString {}
extension Optional: _QueryString where Wrapped == String {}

extension Query where T: _QueryString {
    /// Contains `value` (CONTAINS).
    public func contains(_ value: String, options: StringOptions = []) -> Query<Bool> { comparing("CONTAINS\(options.modifier)", value) }
    /// Starts with `value` (BEGINSWITH).
    public func starts(with value: String, options: StringOptions = []) -> Query<Bool> { comparing("BEGINSWITH\(options.modifier)", value) }
    /// Ends with `value` (ENDSWITH).
    public func ends(with value: String, options: StringOptions = []) -> Query<Bool> { comparing("ENDSWITH\(options.modifier)", value) }
    /// Equal to `value` under `options`.
    public func equals(_ value: String, options: StringOptions = []) -> Query<Bool> { comparing("==\(options.modifier)", value) }
    /// Not equal to `value` under `options`.
    public func notEquals(_ value: String, options: StringOptions = []) -> Query<Bool> { comparing("!=\(options.modifier)", value) }
    /// Matches a wildcard pattern: `*` any run of characters, `?` one (LIKE).
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> Query<Bool> {
        comparing(caseInsensitive ? "LIKE[c]" : "LIKE", pattern)
    }
}

// MARK: Collections

extension Query where T: RealmCollection {
    /// The number of elements (`@count`).
    public var count: Query<Int> { Query<Int>(text: "\(text).@count", arguments: arguments) }

    /// Holds `element` (`ANY list == element`).
    public func contains(_ element: T.Element) -> Query<Bool> { Query(text: "ANY \(text)", arguments: arguments).comparing("==", element) }

    /// Holds one of `elements` (`ANY list IN elements`).
    public func containsAny<S: Sequence>(in elements: S) -> Query<Bool> where S.Element == T.Element {
        Query<Bool>(text: "ANY \(text) IN %@", arguments: arguments + [elements.map { Self.argument($0) }])
    }
}

extension Query where T: RealmCollection, T.Element: Comparable {
    /// The least element (`@min`).
    public var min: Query<T.Element> { Query<T.Element>(text: "\(text).@min", arguments: arguments) }
    /// The greatest element (`@max`).
    public var max: Query<T.Element> { Query<T.Element>(text: "\(text).@max", arguments: arguments) }
}

extension Query where T: RealmCollection, T.Element: AdditiveArithmetic & Comparable {
    /// The sum of the elements (`@sum`).
    public var sum: Query<T.Element> { Query<T.Element>(text: "\(text).@sum", arguments: arguments) }
    /// The mean of the elements (`@avg`).
    public var avg: Query<T.Element> { Query<T.Element>(text: "\(text).@avg", arguments: arguments) }
}

// MARK: Using a query

extension RealmCollection where Element: Object {
    /// The objects that match `isIncluded` (Realm Swift's type-safe query), as live ``Results``.
    ///
    /// ```swift
    /// people.where { $0.age > 3 && $0.name.starts(with: "A") }
    /// ```
    public func `where`(_ isIncluded: (Query<Element>) -> Query<Bool>) -> Results<Element> {
        let condition = isIncluded(.root).condition
        do {
            return try filter(query: condition.text, arguments: condition.arguments)
        } catch {
            preconditionFailure("where: \(error)")
        }
    }

    /// The position of the first object that matches `isIncluded`, or nil.
    public func index(matching isIncluded: (Query<Element>) -> Query<Bool>) -> Int? {
        let condition = isIncluded(.root).condition
        return index(matchingQuery: condition.text, arguments: condition.arguments)
    }
}
