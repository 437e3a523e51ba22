// RealmCollection: what `Results`, `List`, `MutableSet` and `LinkingObjects` share, so that
// code written over Realm Swift's `RealmCollection` and `AnyRealmCollection` (one function
// for a query's results and an object's list) compiles and behaves as before.
//
// A query over a collection of objects (`list.filter(…)`, `links.sorted(…)`) is a
// `Results` built on the collection (CollectionBase): one implementation of filtering,
// sorting and aggregates, reached from every conforming type through `_asResults`.

import Foundation

/// A live collection read from a realm: ``Results``, ``List``, ``MutableSet``,
/// ``LinkingObjects`` and ``AnyRealmCollection`` (Realm Swift's `RealmCollection`).
///
/// ```swift
/// func names<C: RealmCollection>(_ people: C) -> [String] where C.Element == Person {
///     people.filter("age >= 18").sorted(byKeyPath: "name").map(\.name)
/// }
/// names(realm.objects(Person.self))
/// names(team.members)                       // a List<Person>
/// let any = AnyRealmCollection(team.members)
/// ```
///
/// Filtering, sorting, `distinct` and the aggregates by property name are defined for
/// collections of objects (they return ``Results``); positions, freezing and key-value
/// access for every element type.
public protocol RealmCollection: RandomAccessCollection, CustomStringConvertible where Index == Int, Element: _PersistableValue {
    /// The realm the collection is read from; nil for an unmanaged list or set.
    var realm: Realm? { get }
    /// Whether the collection can no longer be read: its realm was invalidated or the
    /// object holding it was deleted.
    var isInvalidated: Bool { get }
    /// Whether the collection is frozen: pinned to one commit, readable on any thread.
    var isFrozen: Bool { get }
    /// The collection as of the commit its realm reads now, readable on any thread.
    func freeze() -> Self
    /// The live collection of a frozen one (itself when live); nil when it is gone.
    func thaw() -> Self?
    /// The collection as ``Results`` of `type`, its element type (nil when unmanaged):
    /// how the query methods of every conforming type reach one implementation.
    func _asResults<T: Object>(_ type: T.Type) -> Results<T>?
}

extension RealmCollection {
    /// The elements at `indexes`, in ascending order (Realm Swift's `objects(at:)`); traps
    /// for an index past the end, as Realm raises.
    public func objects(at indexes: IndexSet) -> [Element] {
        if let last = indexes.last {
            precondition(last < count, "objects(at:): index \(last) is out of bounds (\(count) elements)")
        }
        return indexes.map { self[$0] }
    }
}

extension RealmCollection where Element: Equatable {
    /// The position of the first element equal to `element`, or nil (Realm Swift's name).
    public func index(of element: Element) -> Int? { firstIndex(of: element) }
}

extension RealmCollection where Element: AdditiveArithmetic {
    /// The sum of the elements (zero when there are none), for a collection of numbers.
    public func sum() -> Element { reduce(.zero, +) }
}

extension RealmCollection where Element: BinaryInteger {
    /// The mean of the elements, or nil when there are none.
    public func average() -> Double? { isEmpty ? nil : Double(reduce(0) { $0 + Double($1) }) / Double(count) }
}

extension RealmCollection where Element: BinaryFloatingPoint {
    /// The mean of the elements, or nil when there are none.
    public func average() -> Element? { isEmpty ? nil : reduce(0, +) / Element(count) }
}

extension RealmCollection where Element: Object {
    /// The collection as results, or a trap naming the operation for an unmanaged one (Realm
    /// raises there too: an unmanaged list has no realm to query).
    private func results(_ operation: String) -> Results<Element> {
        guard let results = _asResults(Element.self) else {
            preconditionFailure("\(operation) needs a managed collection: add its object to a realm first, or work on Array(collection)")
        }
        return results
    }

    /// The objects that also match `predicate`, as live ``Results`` in the collection's order.
    public func filter(_ predicate: Predicate<Element>) -> Results<Element> { results("filter").filter(predicate) }

    /// The objects that also match a string query (see ``Results/filter(_:_:)``), in the
    /// collection's order. Traps on a query that cannot be read, as `NSPredicate` raises.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Element> {
        do {
            return try results("filter").filter(query: predicateFormat, arguments: args.map { $0 })
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The objects that also match a string query; throws where ``filter(_:_:)`` traps.
    ///
    /// - Throws: ``RealmError/invalidQuery(query:offset:reason:)``.
    public func filter(query text: String, arguments: [Any?] = []) throws -> Results<Element> {
        try results("filter").filter(query: text, arguments: arguments)
    }

    /// The objects sorted by a stored property named by a string (ties keep the
    /// collection's order). Traps for a name that is not a sortable property, as Realm does.
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Results<Element> {
        results("sorted(byKeyPath:)").sorted(byKeyPath: keyPath, ascending: ascending)
    }

    /// The objects sorted by `descriptors` (ties keep the collection's order).
    public func sorted(by descriptors: [SortDescriptor<Element>]) -> Results<Element> {
        results("sorted(by:)").sorted(by: descriptors)
    }

    /// The objects sorted by one property.
    public func sorted<V: Comparable>(by keyPath: KeyPath<Element, V> & Sendable, ascending: Bool = true) -> Results<Element> {
        results("sorted(by:)").sorted(by: keyPath, ascending: ascending)
    }

    /// The first object, in the collection's order, of each combination of values of the
    /// stored properties named (Realm Swift's `distinct(by:)`).
    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == String {
        results("distinct(by:)").distinct(by: keyPaths)
    }

    /// The least value of the stored property `name`; nil when no object has a value.
    public func min<T: _PersistableValue & Comparable>(ofProperty name: String) -> T? {
        results("min(ofProperty:)").min(ofProperty: name)
    }

    /// The greatest value of the stored property `name`; nil when no object has a value.
    public func max<T: _PersistableValue & Comparable>(ofProperty name: String) -> T? {
        results("max(ofProperty:)").max(ofProperty: name)
    }

    /// The sum of the stored numeric property `name` (zero when there are no values).
    public func sum<T: _PersistableValue & AdditiveArithmetic>(ofProperty name: String) -> T {
        results("sum(ofProperty:)").sum(ofProperty: name)
    }

    /// The mean of the stored numeric property `name`; nil when no object has a value.
    public func average<T: BinaryFloatingPoint>(ofProperty name: String) -> T? {
        results("average(ofProperty:)").average(ofProperty: name)
    }

    /// The position of the first object that matches `predicate`, or nil.
    public func index(matching predicate: Predicate<Element>) -> Int? {
        firstIndex { (try? predicate.evaluate($0)) == true }
    }

    /// The position of the first object that matches a string query, or nil; traps on a
    /// query that cannot be read, as `filter` does.
    public func index(matching predicateFormat: String, _ args: Any...) -> Int? {
        index(matchingQuery: predicateFormat, arguments: args.map { $0 })
    }

    /// The position of the first object that matches a string query with `arguments`.
    func index(matchingQuery text: String, arguments: [Any?]) -> Int? {
        let matching: Results<Element>
        do {
            matching = try results("index(matching:)").filter(query: text, arguments: arguments)
        } catch {
            preconditionFailure("\(error)")
        }
        guard let first = matching.first else { return nil }
        return firstIndex { $0.isSameObject(as: first) }
    }

    /// Each object's value of the property `key`, in order, as an array (Realm Swift's
    /// key-value coding on collections): plain values, objects for links, arrays for lists.
    public func value(forKey key: String) -> Any? {
        map { $0[key] } as [Any?]
    }

    /// Each object's value at `keyPath` (dot-separated property names), in order.
    public func value(forKeyPath keyPath: String) -> Any? {
        map { object -> Any? in
            var current: Any? = object
            for name in keyPath.split(separator: ".") {
                guard let next = current as? Object else { return nil }
                current = next[String(name)]
            }
            return current
        } as [Any?]
    }

    /// Sets the property `key` of every object to `value` (inside a write, as any change).
    public func setValue(_ value: Any?, forKey key: String) {
        for object in self { object[key] = value }
    }
}

// MARK: Conformances

extension Results: RealmCollection {
    /// These results (the query methods of ``RealmCollection`` are the results' own).
    public func _asResults<T: Object>(_ type: T.Type) -> Results<T>? { self as? Results<T> }
}

extension List: RealmCollection {
    /// The list's objects as results built on the list (nil when unmanaged or not objects).
    public func _asResults<T: Object>(_ type: T.Type) -> Results<T>? { collectionResults(owner: ownerAndIndex.owner, index: ownerAndIndex.index) }
}

extension MutableSet: RealmCollection {
    /// The set's objects as results built on the set (nil when unmanaged or not objects).
    public func _asResults<T: Object>(_ type: T.Type) -> Results<T>? { collectionResults(owner: ownerAndIndex.owner, index: ownerAndIndex.index) }
}

extension LinkingObjects: RealmCollection {
    /// The linking objects as results built on them (nil when unmanaged).
    public func _asResults<T: Object>(_ type: T.Type) -> Results<T>? { collectionResults(owner: ownerAndIndex.owner, index: ownerAndIndex.index) }
}

/// Results of type `T` over the objects of `owner`'s collection property `index`; nil for an
/// unmanaged collection, or when `T` is not the element type the realm binds.
private func collectionResults<T: Object>(owner: ObjectState?, index: Int) -> Results<T>? {
    guard let owner else { return nil }
    let property = owner.bound.schema.properties[index]
    guard let bound = owner.realm.boundTypeOrDynamic(named: property.objectClassName ?? ""),
          bound.info.type == T.self || T.self == DynamicObject.self, !bound.schema.isEmbedded else { return nil }
    let query = ResultsQuery<T>(bound: bound, filters: [], sort: [], base: CollectionBase(owner: owner, property: index))
    return Results(realm: owner.realm, query: query)
}

// MARK: AnyRealmCollection

/// Any ``RealmCollection`` of `Element`, type-erased (Realm Swift's `AnyRealmCollection`):
/// one stored property or parameter for results, a list, a set or linking objects.
///
/// ```swift
/// var shown: AnyRealmCollection<Dog> = AnyRealmCollection(realm.objects(Dog.self))
/// shown = AnyRealmCollection(owner.dogs)    // a List<Dog>
/// ```
public struct AnyRealmCollection<Element: _PersistableValue>: RealmCollection {
    private let box: AnyCollectionBox<Element>

    /// Wraps `base`.
    public init<C: RealmCollection>(_ base: C) where C.Element == Element {
        box = CollectionBox(base)
    }

    private init(box: AnyCollectionBox<Element>) { self.box = box }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { box.count }
    /// The element at `position`.
    public subscript(position: Int) -> Element { box.element(at: position) }
    /// The wrapped collection's realm.
    public var realm: Realm? { box.realm }
    /// Whether the wrapped collection can no longer be read.
    public var isInvalidated: Bool { box.isInvalidated }
    /// Whether the wrapped collection is frozen.
    public var isFrozen: Bool { box.isFrozen }
    /// The wrapped collection, frozen.
    public func freeze() -> AnyRealmCollection<Element> { AnyRealmCollection(box: box.freeze()) }
    /// The wrapped collection, live; nil when it is gone.
    public func thaw() -> AnyRealmCollection<Element>? { box.thaw().map { AnyRealmCollection(box: $0) } }
    /// The wrapped collection's description.
    public var description: String { box.description }
    /// The wrapped collection as results.
    public func _asResults<T: Object>(_ type: T.Type) -> Results<T>? { box.results(type) }
}

/// The element-typed face of a wrapped collection (subclassed per collection type).
class AnyCollectionBox<Element: _PersistableValue> {
    var count: Int { preconditionFailure("abstract") }
    func element(at position: Int) -> Element { preconditionFailure("abstract") }
    var realm: Realm? { preconditionFailure("abstract") }
    var isInvalidated: Bool { preconditionFailure("abstract") }
    var isFrozen: Bool { preconditionFailure("abstract") }
    var description: String { preconditionFailure("abstract") }
    func freeze() -> AnyCollectionBox<Element> { preconditionFailure("abstract") }
    func thaw() -> AnyCollectionBox<Element>? { preconditionFailure("abstract") }
    func results<T: Object>(_ type: T.Type) -> Results<T>? { preconditionFailure("abstract") }
}

/// A wrapped collection of type `C`.
final class CollectionBox<C: RealmCollection>: AnyCollectionBox<C.Element> {
    let base: C
    init(_ base: C) { self.base = base }
    override var count: Int { base.count }
    override func element(at position: Int) -> C.Element { base[position] }
    override var realm: Realm? { base.realm }
    override var isInvalidated: Bool { base.isInvalidated }
    override var isFrozen: Bool { base.isFrozen }
    override var description: String { base.description }
    override func freeze() -> AnyCollectionBox<C.Element> { CollectionBox(base.freeze()) }
    override func thaw() -> AnyCollectionBox<C.Element>? { base.thaw().map { CollectionBox($0) } }
    override func results<T: Object>(_ type: T.Type) -> Results<T>? { base._asResults(type) }
}
