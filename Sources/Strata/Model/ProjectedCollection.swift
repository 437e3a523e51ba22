// ProjectedCollection: a list or set of objects seen as the values of one property of its
// elements (Realm Swift's `projectTo`), for `@Projected` properties of a `Projection`:
// `@Projected(\Person.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>`.
// It keeps the collection, not the values: every read goes to the live (or frozen) list.

import Foundation

/// The values of one property of each object of a list or set, in the collection's order
/// (Realm Swift's `ProjectedCollection`). Made by `projectTo` on a ``List`` or
/// ``MutableSet`` of objects, as a ``Projection``'s property:
///
/// ```swift
/// final class PersonSummary: Projection<Person> {
///     @Projected(\Person.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>
/// }
/// summary.friendNames.first            // the first friend's firstName, read now
/// try realm.write { summary.friendNames[0] = "Ann" }   // sets that friend's firstName
/// ```
///
/// Live as the collection it projects: reading an element reads the object at that
/// position now. Projected from a set, the values may repeat (it is not a set of values).
public struct ProjectedCollection<Element: _PersistableValue>: RealmCollection {
    private let source: ProjectionSource<Element>

    init(source: ProjectionSource<Element>) { self.source = source }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of objects in the projected collection.
    public var endIndex: Int { source.count }

    /// The projected property of the object at `position` (get), or sets that property of
    /// that object (set: inside a write, and only through a writable key path, as setting
    /// the object's property directly would be).
    public subscript(position: Int) -> Element {
        get { source.value(at: position) }
        nonmutating set { source.set(newValue, at: position) }
    }

    /// The realm of the projected collection; nil when it is unmanaged.
    public var realm: Realm? { source.realm }
    /// Whether the projected collection can no longer be read.
    public var isInvalidated: Bool { source.isInvalidated }
    /// Whether the projected collection is frozen.
    public var isFrozen: Bool { source.isFrozen }
    /// The same projection of the frozen collection.
    public func freeze() -> ProjectedCollection<Element> { ProjectedCollection(source: source.freeze()) }
    /// The same projection of the live collection; nil when it is gone.
    public func thaw() -> ProjectedCollection<Element>? { source.thaw().map { ProjectedCollection(source: $0) } }
    /// Values have no results: always nil.
    public func _asResults<T: Object>(_ type: T.Type) -> Results<T>? { nil }

    /// `ProjectedCollection<Element> { [0] value … }`.
    public var description: String {
        var text = "ProjectedCollection<\(Element.self)> {\n"
        for (position, value) in enumerated() { text += "\t[\(position)] \(value)\n" }
        return text + "}"
    }

    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// the projected collection: the positions of the collection's own changes (objects
    /// removed, added, replaced or modified), as ``List/observe(keyPaths:on:_:)`` reports
    /// them. `keyPaths` names the objects' properties whose changes count (insertions and
    /// removals always do).
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<ProjectedCollection<Element>>) -> Void) -> NotificationToken {
        source.observe(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial(let source): block(.initial(ProjectedCollection(source: source)))
            case .update(let source, let deletions, let insertions, let modifications):
                block(.update(ProjectedCollection(source: source), deletions: deletions, insertions: insertions, modifications: modifications))
            case .error(let error): block(.error(error))
            }
        }
    }
}

/// Turns a list or set of objects into the ``ProjectedCollection`` of one of their
/// properties (Realm Swift's `CollectionElementMapper`): `list.projectTo.name`.
@dynamicMemberLookup
public struct CollectionElementMapper<Element: Object> {
    let collection: ProjectableBox<Element>

    /// The projection of the collection onto `member`.
    public subscript<V: _PersistableValue>(dynamicMember member: KeyPath<Element, V>) -> ProjectedCollection<V> {
        ProjectedCollection(source: collection.projection(onto: member))
    }
}

extension List where Element: Object {
    /// This list as the values of one property of its objects, for a `@Projected` property:
    /// `@Projected(\Person.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>`.
    public var projectTo: CollectionElementMapper<Element> { CollectionElementMapper(collection: ProjectableCollectionBox(self)) }
}

extension MutableSet where Element: Object {
    /// This set as the values of one property of its objects (in the set's order; values
    /// may repeat), for a `@Projected` property.
    public var projectTo: CollectionElementMapper<Element> { CollectionElementMapper(collection: ProjectableCollectionBox(self)) }
}

/// The lists and sets of objects `projectTo` works on: what a projection reads and observes.
protocol ProjectableCollection: RealmCollection where Element: Object {
    func observe(keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<Self>) -> Void) -> NotificationToken
}
extension List: ProjectableCollection where Element: Object {}
extension MutableSet: ProjectableCollection where Element: Object {}

/// A list or set of `Element` objects, type-erased, that makes projections of itself.
class ProjectableBox<Element: Object> {
    func projection<V: _PersistableValue>(onto keyPath: KeyPath<Element, V>) -> ProjectionSource<V> { preconditionFailure("abstract") }
}

final class ProjectableCollectionBox<C: ProjectableCollection>: ProjectableBox<C.Element> {
    let collection: C
    init(_ collection: C) { self.collection = collection }
    override func projection<V: _PersistableValue>(onto keyPath: KeyPath<C.Element, V>) -> ProjectionSource<V> {
        CollectionProjection(collection, keyPath)
    }
}

/// A projected collection's source, typed by its values (subclassed per collection type).
class ProjectionSource<Value: _PersistableValue> {
    var count: Int { preconditionFailure("abstract") }
    func value(at position: Int) -> Value { preconditionFailure("abstract") }
    func set(_ value: Value, at position: Int) { preconditionFailure("abstract") }
    var realm: Realm? { preconditionFailure("abstract") }
    var isInvalidated: Bool { preconditionFailure("abstract") }
    var isFrozen: Bool { preconditionFailure("abstract") }
    func freeze() -> ProjectionSource<Value> { preconditionFailure("abstract") }
    func thaw() -> ProjectionSource<Value>? { preconditionFailure("abstract") }
    func observe(keyPaths: [String]?, on queue: DispatchQueue?,
                 _ block: @escaping (RealmCollectionChange<ProjectionSource<Value>>) -> Void) -> NotificationToken {
        preconditionFailure("abstract")
    }
}

/// `collection` seen through `keyPath`.
final class CollectionProjection<C: ProjectableCollection, Value: _PersistableValue>: ProjectionSource<Value> {
    let collection: C
    let keyPath: KeyPath<C.Element, Value>

    init(_ collection: C, _ keyPath: KeyPath<C.Element, Value>) {
        self.collection = collection
        self.keyPath = keyPath
    }

    override var count: Int { collection.count }
    override func value(at position: Int) -> Value { collection[position][keyPath: keyPath] }
    override func set(_ value: Value, at position: Int) {
        guard let writable = keyPath as? ReferenceWritableKeyPath<C.Element, Value> else {
            preconditionFailure("ProjectedCollection: \(keyPath) is not a writable property of \(C.Element.self)")
        }
        collection[position][keyPath: writable] = value
    }
    override var realm: Realm? { collection.realm }
    override var isInvalidated: Bool { collection.isInvalidated }
    override var isFrozen: Bool { collection.isFrozen }
    override func freeze() -> ProjectionSource<Value> { CollectionProjection(collection.freeze(), keyPath) }
    override func thaw() -> ProjectionSource<Value>? { collection.thaw().map { CollectionProjection($0, keyPath) } }
    override func observe(keyPaths: [String]?, on queue: DispatchQueue?,
                          _ block: @escaping (RealmCollectionChange<ProjectionSource<Value>>) -> Void) -> NotificationToken {
        let keyPath = self.keyPath
        return collection.observe(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial(let collection): block(.initial(CollectionProjection(collection, keyPath)))
            case .update(let collection, let deletions, let insertions, let modifications):
                block(.update(CollectionProjection(collection, keyPath), deletions: deletions, insertions: insertions, modifications: modifications))
            case .error(let error): block(.error(error))
            }
        }
    }
}
