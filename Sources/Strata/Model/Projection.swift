// Projection: Realm Swift's view of an object through chosen key paths — a class whose
// `@Projected` properties read (and inside a write, set) the root object's values, for
// view models that show a few properties of a larger object. A projection holds its root
// object and nothing else: every read goes to the object, so it is as live as the object.

import Foundation

/// A view of an object of `Root` through `@Projected` key paths (Realm Swift's
/// `Projection`):
///
/// ```swift
/// final class PersonSummary: Projection<Person> {
///     @Projected(\Person.firstName) var firstName
///     @Projected(\Person.address?.city) var city
///     @Projected(\Person.friends.count) var friendCount
/// }
/// let summaries = realm.objects(PersonSummary.self)    // live, one per Person
/// summaries.first?.firstName
/// ```
///
/// Reading a projected property reads the root object now; setting one (a writable key
/// path) sets the root object's property, inside a write as any managed property.
open class Projection<Root: Object>: CustomStringConvertible {
    /// The object the projection reads.
    public let rootObject: Root

    /// A projection of `object` (managed or not).
    public required init(projecting object: Root) {
        rootObject = object
    }

    /// The realm of the root object; nil when it is unmanaged.
    public var realm: Realm? { rootObject.realm }
    /// Whether the root object was deleted or its realm invalidated.
    public var isInvalidated: Bool { rootObject.isInvalidated }
    /// Whether the root object is frozen.
    public var isFrozen: Bool { rootObject.isFrozen }

    /// The projection of the root object frozen at the commit its realm reads now.
    public func freeze() -> Self { Self(projecting: rootObject.freeze()) }

    /// The projection of the live root object of a frozen one; nil when it was deleted.
    public func thaw() -> Self? { rootObject.thaw().map { Self(projecting: $0) } }

    /// Calls `block` after each commit that changes (or deletes) the root object, as
    /// ``Object/observe(keyPaths:_:)`` does for it; `keyPaths` names the root object's
    /// properties.
    public func observe(keyPaths: [String]? = nil, _ block: @escaping (ObjectChange<Projection<Root>>) -> Void) -> NotificationToken {
        rootObject.observe(keyPaths: keyPaths) { (change: ObjectChange<Root>) in
            switch change {
            case .change(let object, let properties): block(.change(Self(projecting: object), properties))
            case .deleted: block(.deleted)
            case .error(let error): block(.error(error))
            }
        }
    }

    /// `Projection<Root>` and the root object's description.
    public var description: String { "\(Swift.type(of: self))(\(rootObject))" }
}

extension Projection: Equatable {
    /// Projections of the same stored object (or of one unmanaged object) are equal.
    public static func == (lhs: Projection<Root>, rhs: Projection<Root>) -> Bool {
        lhs.rootObject == rhs.rootObject
    }
}

/// A property of a ``Projection`` that reads `keyPath` of the projection's root object
/// (Realm Swift's `@Projected`): `@Projected(\Person.firstName) var firstName`.
@propertyWrapper
public struct Projected<Root: Object, Value> {
    /// The key path read on the root object.
    public let keyPath: KeyPath<Root, Value>

    /// Projects `keyPath` of the root object.
    public init(_ keyPath: KeyPath<Root, Value>) {
        self.keyPath = keyPath
    }

    /// Only reachable through the enclosing projection (the subscript below).
    @available(*, unavailable, message: "@Projected is only available on Projection subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("@Projected is read through its Projection") }
        set { preconditionFailure("@Projected is set through its Projection") }
    }

    /// Reads (and, for a writable key path, sets) the root object's value.
    public static subscript<P: Projection<Root>>(_enclosingInstance projection: P,
                                                 wrapped _: ReferenceWritableKeyPath<P, Value>,
                                                 storage storageKeyPath: ReferenceWritableKeyPath<P, Projected<Root, Value>>) -> Value {
        get { projection.rootObject[keyPath: projection[keyPath: storageKeyPath].keyPath] }
        set {
            let keyPath = projection[keyPath: storageKeyPath].keyPath
            guard let writable = keyPath as? ReferenceWritableKeyPath<Root, Value> else {
                preconditionFailure("\(keyPath) is read-only: a projection can set only a stored property of \(Root.className)")
            }
            projection.rootObject[keyPath: writable] = newValue
        }
    }
}

/// The projections of a ``Results`` of their root type, in its order: what
/// `realm.objects(PersonSummary.self)` returns. Live as the results are; queries and sorts
/// name the root type's properties.
public struct ProjectedResults<Root: Object, Element: Projection<Root>>: RandomAccessCollection, CustomStringConvertible {
    /// The results of the root objects.
    public let results: Results<Root>

    /// The projections of `results`.
    public init(_ results: Results<Root>) { self.results = results }

    /// The first position (0).
    public var startIndex: Int { 0 }
    /// The number of projections.
    public var endIndex: Int { results.count }
    /// The projection of the root object at `position`.
    public subscript(position: Int) -> Element { Element(projecting: results[position]) }

    /// The realm the results read.
    public var realm: Realm? { results.realm }

    /// The projections of the root objects matching a string query (root property names).
    ///
    /// - Throws: as ``Results/filter(query:arguments:)``.
    public func filter(query text: String, arguments: [Any?] = []) throws -> ProjectedResults<Root, Element> {
        ProjectedResults(try results.filter(query: text, arguments: arguments))
    }

    /// The projections of the root objects matching a string query (traps on a bad query,
    /// as `Results.filter(_:)` does).
    public func filter(_ text: String, _ arguments: Any...) -> ProjectedResults<Root, Element> {
        do {
            return try filter(query: text, arguments: arguments.map { $0 })
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The projections sorted by a stored property of the root type.
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> ProjectedResults<Root, Element> {
        ProjectedResults(results.sorted(byKeyPath: keyPath, ascending: ascending))
    }

    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// the root objects' results (positions as ``Results/observe(keyPaths:on:_:)`` gives them).
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<ProjectedResults<Root, Element>>) -> Void) -> NotificationToken {
        results.observe(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial(let results): block(.initial(ProjectedResults(results)))
            case .update(let results, let deletions, let insertions, let modifications):
                block(.update(ProjectedResults(results), deletions: deletions, insertions: insertions, modifications: modifications))
            case .error(let error): block(.error(error))
            }
        }
    }

    /// `ProjectedResults` and its count.
    public var description: String { "ProjectedResults<\(Element.self)>(\(count) objects)" }
}

extension Realm {
    /// A projection of every object of its root type (Realm Swift's
    /// `realm.objects(PersonSummary.self)`), live as ``objects(_:)`` is.
    public func objects<Root: Object, P: Projection<Root>>(_ type: P.Type) -> ProjectedResults<Root, P> {
        ProjectedResults(objects(Root.self))
    }
}
