// LinkingObjects: the live inverse of a link or list property — the objects whose origin
// property links to the owner. Nothing is stored in the owner's row; the origin property
// has a hidden inverse index (its index table, keyed by link target) that every commit
// keeps current, so a read costs an index look-up and one row read per origin object,
// never a scan of the origin type.

/// The element-type-erased face of ``LinkingObjects``.
public class _LinkingObjectsBase: _ListBase {
    /// The property of the origin type that links to the owner.
    let originProperty: String

    init(originProperty: String) {
        self.originProperty = originProperty
    }

    override var _emptyField: FieldValue { .null }
    override func _field(in realm: Realm) throws -> FieldValue { .null }
    override func _replaceAll(withAny value: Any?, property: String) throws {
        throw RealmError.invalidValue("\(property) is linking objects, which are read-only: they list the objects that link here")
    }
}

/// The objects whose `originProperty` links to this one (Realm Swift's `LinkingObjects`):
///
/// ```swift
/// final class Person: Object {
///     @Persisted(primaryKey: true) var name = ""
///     @Persisted(originProperty: "owner") var cars: LinkingObjects<Car>
/// }
/// final class Car: Object {
///     @Persisted var owner: Person?          // or List<Person>, MutableSet<Person>
/// }
/// person.cars.count          // every Car whose owner is person, now
/// realm.objects(Person.self).filter("ANY cars.model == 'T' AND cars.@count > 1")
/// ```
///
/// Live: each read reflects the realm's current snapshot and the open write's changes.
/// Read-only: assigning to the property of a managed object traps, and `create(value:)`
/// and the dynamic subscript throw. An unmanaged object's linking objects are empty.
/// Objects come in the origin type's primary-key order (hidden ids: insertion order).
/// Each read looks up the origin property's hidden inverse index: O(number of linking
/// objects), whatever the size of the origin type.
public final class LinkingObjects<Element: Object>: _LinkingObjectsBase, RandomAccessCollection, CustomStringConvertible {
    private let owner: ObjectState?
    private let index: Int
    /// The keys of a managed owner's linking objects and the realm read version they are for.
    private var cached: (version: UInt64, keys: [[UInt8]])?

    /// Unmanaged linking objects (always empty) of `type`'s `property` (Realm Swift's older
    /// declaration form; `@Persisted(originProperty:)` is the usual one).
    public init(fromType type: Element.Type, property: String) {
        owner = nil
        index = 0
        super.init(originProperty: property)
    }

    init(owner: ObjectState, index: Int, originProperty: String) {
        self.owner = owner
        self.index = index
        super.init(originProperty: originProperty)
    }

    /// The realm of the owning object, if it is managed.
    public var realm: Realm? { owner?.realm }

    /// An embedded owner's parent, when it holds the owner through the origin property:
    /// the one object that links to an embedded object.
    private var embeddingParent: ObjectState? {
        guard let owner, let embedding = owner.embedding, !embedding.parent.isInvalidated else { return nil }
        let parent = embedding.parent
        guard parent.bound.className == owner.bound.schema.properties[index].objectClassName,
              parent.bound.schema.properties[embedding.index].name == originProperty else { return nil }
        return parent
    }

    private var keys: [[UInt8]] {
        guard let owner else { return [] }
        if owner.embedding != nil { return embeddingParent.map { [$0.key] } ?? [] }
        let version = owner.realm.readVersion
        if let cached, cached.version == version { return cached.keys }
        let keys = owner.realm.linkingKeys(to: owner, property: owner.bound.schema.properties[index])?.keys ?? []
        cached = (version, keys)
        return keys
    }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of objects linking here now.
    public var endIndex: Int { keys.count }

    /// The linking object at `position`.
    public subscript(position: Int) -> Element {
        let keys = self.keys
        precondition(position >= 0 && position < keys.count, "Index \(position) is out of bounds (must be less than \(keys.count))")
        if let parent = embeddingParent {
            let object = ObjectConstruction.makeManaged(parent.bound.info.type)
            object._state = parent
            guard let typed = object as? Element else { preconditionFailure("the parent is not a \(Element.className)") }
            return typed
        }
        guard let owner, let origin = owner.realm.linkingKeys(to: owner, property: owner.bound.schema.properties[index])?.origin,
              let object = owner.realm.object(bound: origin, key: keys[position]) as? Element else {
            preconditionFailure("the linking object at \(position) is no longer readable")
        }
        return object
    }

    /// The position of `object`, or nil if it does not link here.
    public func index(of object: Element) -> Int? {
        guard let state = object._state, state.realm === owner?.realm else { return nil }
        return keys.firstIndex(of: state.key)
    }

    /// The objects as an array.
    public func toArray() -> [Element] { Array(self) }

    /// `LinkingObjects<Element>(n objects)`.
    public var description: String { "LinkingObjects<\(Element.className)>(\(count) objects)" }

    override var _anyElements: [Any?] { map { $0 } }

    override func _managedCopy(state: ObjectState, index: Int) -> _ListBase {
        LinkingObjects<Element>(owner: state, index: index, originProperty: originProperty)
    }

    override func _unmanagedCopy(_ copier: inout DeepCopier) -> _ListBase {
        LinkingObjects<Element>(fromType: Element.self, property: originProperty)
    }
}

extension LinkingObjects: _PersistedProperty {
    public static var _schemaTemplate: PropertySchema {
        PropertySchema(name: "", kind: .linkingObjects, objectClassName: Element.className)
    }
    /// Without `originProperty` the declaration is refused when the type is first used.
    public static var _defaultPropertyValue: LinkingObjects<Element> { LinkingObjects(fromType: Element.self, property: "") }
    public func _propertySlot() -> _Slot { .list(LinkingObjects(fromType: Element.self, property: originProperty)) }
    public static func _fromPropertySlot(_ slot: _Slot) -> LinkingObjects<Element> {
        if case .list(let linking) = slot, let typed = linking as? LinkingObjects<Element> { return typed }
        return LinkingObjects(fromType: Element.self, property: "")
    }
    public static func _managedGet(_ state: ObjectState, _ index: Int) -> LinkingObjects<Element> {
        LinkingObjects(owner: state, index: index, originProperty: state.bound.schema.properties[index].originProperty ?? "")
    }
    public static func _canRead(_ field: FieldValue) -> Bool { true }
    public static func _managedSet(_ value: LinkingObjects<Element>, _ state: ObjectState, _ index: Int) {
        preconditionFailure("\(state.bound.className).\(state.bound.schema.properties[index].name) is linking objects, which are read-only: they list the objects that link here")
    }
}

extension Persisted {
    /// Linking objects: the objects of `T` whose `originProperty` (a link, list or set of
    /// links to this type) links to this object.
    ///
    /// ```swift
    /// @Persisted(originProperty: "owner") var cars: LinkingObjects<Car>
    /// ```
    public init<T: Object>(originProperty: String) where Value == LinkingObjects<T> {
        self.init(slot: .list(LinkingObjects(fromType: T.self, property: originProperty)), primaryKey: false, indexed: false)
    }
}

extension LinkingObjects: FreezableCollection {
    var ownerAndIndex: (owner: ObjectState?, index: Int) { (owner, index) }
    static func make(owner: ObjectState, index: Int) -> Self {
        Self(owner: owner, index: index, originProperty: owner.bound.schema.properties[index].originProperty ?? "")
    }

    /// Whether the owning object is frozen (unmanaged linking objects are not).
    public var isFrozen: Bool { owner?.realm.isFrozen ?? false }

    /// Whether the owning object was deleted or its realm invalidated.
    public var isInvalidated: Bool { owner?.isInvalidated ?? false }

    /// These linking objects as of the commit the realm reads now (Realm's `freeze()`).
    /// Traps for unmanaged ones, a deleted owner, or inside a write transaction.
    public func freeze() -> LinkingObjects<Element> { freezeCollection() }

    /// The live linking objects of frozen ones; nil if the owner was deleted since.
    public func thaw() -> LinkingObjects<Element>? { thawCollection() }
}
