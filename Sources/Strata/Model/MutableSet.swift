// MutableSet: an unordered collection of distinct values or links. It is stored as a list
// whose elements are distinct (the schema marks the property as a set), in the order they
// were inserted; membership compares stored values (see `SetMembership`).

/// The rule by which a set tells its elements apart: their stored values, with every NaN
/// one value, -0.0 equal to 0.0, strings compared canonically (as Swift compares them) and
/// objects by identity (managed: the stored object, whichever instance reads it).
enum SetMembership {
    /// The identity of a stored element.
    static func key(_ field: FieldValue) -> [UInt8] {
        switch field {
        case .double(let d) where d.isNaN: return IndexValueKey.bytes(for: .double(.nan))
        case .float(let f) where f.isNaN: return IndexValueKey.bytes(for: .float(.nan))
        default: return IndexValueKey.bytes(for: field)
        }
    }

    /// The identity of an element in hand.
    static func key<Element: _PersistableValue>(_ element: Element) -> [UInt8] {
        if let object = element as? Object {
            if let state = object._state { return key(.link(state.key)) }
            return withUnsafeBytes(of: ObjectIdentifier(object)) { [0xFF] + Array($0) }
        }
        return key((try? element._field(in: nil)) ?? .null)
    }
}

/// An unordered collection of distinct values, or of distinct links to objects (Realm
/// Swift's `MutableSet`):
///
/// ```swift
/// @Persisted var labels: MutableSet<String>
/// try realm.write {
///     task.labels.insert("urgent")
///     task.labels.formUnion(["home", "urgent"])   // still two elements
/// }
/// task.labels.contains("home")
/// ```
///
/// Elements are distinct by their stored values: every NaN is one value, `-0.0` equals
/// `0.0`, and strings compare as Swift compares them. Iteration gives the elements in the
/// order they were first inserted. Changing the set of a managed object requires a write;
/// each change costs O(the set's size).
public final class MutableSet<Element: _PersistableValue>: _ListBase, RandomAccessCollection, CustomStringConvertible {
    private var unmanaged: [Element]
    private let owner: ObjectState?
    private let index: Int
    /// The decoded elements of a managed set and the realm read version they are for.
    private var cached: (version: UInt64, elements: [Element])?

    /// An empty unmanaged set.
    public override init() {
        unmanaged = []
        owner = nil
        index = 0
    }

    /// An unmanaged set holding the distinct elements of `elements`.
    public init(_ elements: some Sequence<Element>) {
        unmanaged = []
        owner = nil
        index = 0
        super.init()
        insert(objectsIn: elements)
    }

    init(owner: ObjectState, index: Int) {
        unmanaged = []
        self.owner = owner
        self.index = index
    }

    /// The realm of the owning object, if it is managed.
    public var realm: Realm? { owner?.realm }

    /// The elements now (links to deleted objects are left out).
    private var current: [Element] {
        guard let owner else { return unmanaged }
        let version = owner.realm.readVersion
        if let cached, cached.version == version { return cached.elements }
        var elements: [Element] = []
        if case .list(let fields) = owner.field(index) {
            elements = fields.compactMap { Element._fromField($0, in: owner.realm) }
        }
        cached = (version, elements)
        return elements
    }

    /// Changes the stored elements of a managed set in place.
    private func modifyStored(_ body: (inout [FieldValue]) -> Void) {
        guard let owner else { return }
        cached = nil
        owner.modifyList(index, body)
    }

    private func fields(of elements: some Sequence<Element>) -> [FieldValue] {
        guard let owner else { return [] }
        return elements.map { element in owner.fieldForAssignment { try element._field(in: owner.realm) } }
    }

    // MARK: Collection

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { current.count }
    /// The element at `position` (insertion order).
    public subscript(position: Int) -> Element { current[position] }

    /// Whether `element` is in the set.
    public func contains(_ element: Element) -> Bool {
        let wanted = SetMembership.key(element)
        return current.contains { SetMembership.key($0) == wanted }
    }

    /// Whether every element of this set is in `other`.
    public func isSubset(of other: some Sequence<Element>) -> Bool {
        let keys = Set(other.map { SetMembership.key($0) })
        return current.allSatisfy { keys.contains(SetMembership.key($0)) }
    }

    /// Whether this set and `other` have an element in common.
    public func intersects(_ other: some Sequence<Element>) -> Bool {
        let keys = Set(other.map { SetMembership.key($0) })
        return current.contains { keys.contains(SetMembership.key($0)) }
    }

    /// The elements as an array (insertion order).
    public func toArray() -> [Element] { current }

    // MARK: Mutation

    /// Inserts `element` unless the set holds it already.
    public func insert(_ element: Element) { insert(objectsIn: CollectionOfOne(element)) }

    /// Inserts each element of `elements` the set does not hold yet.
    public func insert(objectsIn elements: some Sequence<Element>) {
        guard owner != nil else {
            var present = Set(unmanaged.map { SetMembership.key($0) })
            for element in elements where present.insert(SetMembership.key(element)).inserted { unmanaged.append(element) }
            return
        }
        let added = fields(of: elements)
        modifyStored { stored in
            var present = Set(stored.map { SetMembership.key($0) })
            for field in added where present.insert(SetMembership.key(field)).inserted { stored.append(field) }
        }
    }

    /// Removes `element` if the set holds it.
    public func remove(_ element: Element) {
        let gone: Set<[UInt8]> = [SetMembership.key(element)]
        removeAll { gone.contains($0) }
    }

    /// Removes every element.
    public func removeAll() { removeAll { _ in true } }

    /// Removes the elements whose membership key `isRemoved` accepts.
    private func removeAll(where isRemoved: ([UInt8]) -> Bool) {
        guard owner != nil else {
            unmanaged.removeAll { isRemoved(SetMembership.key($0)) }
            return
        }
        modifyStored { stored in stored.removeAll { isRemoved(SetMembership.key($0)) } }
    }

    /// Inserts every element of `other`.
    public func formUnion(_ other: some Sequence<Element>) { insert(objectsIn: other) }

    /// Keeps only the elements `other` holds too.
    public func formIntersection(_ other: some Sequence<Element>) {
        let kept = Set(other.map { SetMembership.key($0) })
        removeAll { !kept.contains($0) }
    }

    /// Removes every element `other` holds.
    public func subtract(_ other: some Sequence<Element>) {
        let gone = Set(other.map { SetMembership.key($0) })
        removeAll { gone.contains($0) }
    }

    /// `MutableSet<Element>(a, b, …)`.
    public var description: String { "MutableSet<\(Element.self)>(\(current.map { "\($0)" }.joined(separator: ", ")))" }

    // MARK: Erased

    override var _anyElements: [Any?] { CollectionErasure.anyElements(current) }

    override func _replaceAll(withAny value: Any?, property: String) throws {
        let elements: [Element] = try CollectionErasure.elements(from: value, property: property, realm: owner?.realm)
        removeAll()
        insert(objectsIn: elements)
    }

    override func _fields(in realm: Realm) throws -> [FieldValue] {
        var present = Set<[UInt8]>()
        return try current.map { try $0._field(in: realm) }.filter { present.insert(SetMembership.key($0)).inserted }
    }

    override func _managedCopy(state: ObjectState, index: Int) -> _ListBase {
        MutableSet<Element>(owner: state, index: index)
    }

    override func _unmanagedCopy(_ copier: inout DeepCopier) -> _ListBase {
        let copy = MutableSet<Element>()
        copy.unmanaged = CollectionErasure.deepCopies(current, &copier)
        return copy
    }
}

extension MutableSet: _PersistedProperty {
    public static var _schemaTemplate: PropertySchema {
        PropertySchema(name: "", kind: Element._propertyKind, isOptional: Element.self is ExpressibleByNilLiteral.Type,
                       objectClassName: Element._typeName, isSet: true)
    }
    public static var _defaultPropertyValue: MutableSet<Element> { MutableSet() }
    public func _propertySlot() -> _Slot { .list(owner == nil ? self : MutableSet(current)) }
    public static func _fromPropertySlot(_ slot: _Slot) -> MutableSet<Element> {
        if case .list(let set) = slot, let typed = set as? MutableSet<Element> { return typed }
        return MutableSet()
    }
    public static func _managedGet(_ state: ObjectState, _ index: Int) -> MutableSet<Element> {
        MutableSet(owner: state, index: index)
    }
    public static func _canRead(_ field: FieldValue) -> Bool { List<Element>._canRead(field) }
    public static func _managedSet(_ value: MutableSet<Element>, _ state: ObjectState, _ index: Int) {
        if value.owner === state && value.index == index { return }
        let elements = value.current
        state.setField(index, state.fieldForAssignment {
            var present = Set<[UInt8]>()
            return .list(try elements.map { try $0._field(in: state.realm) }.filter { present.insert(SetMembership.key($0)).inserted })
        })
    }
}

/// What `List`, `MutableSet` and `Map` share for dynamic access and copies.
enum CollectionErasure {
    /// Elements as plain values: objects as they are, values as `FieldValue.anyValue` gives them.
    static func anyElements<Element: _PersistableValue>(_ elements: [Element]) -> [Any?] {
        elements.map { anyValue($0) }
    }

    static func anyValue<Element: _PersistableValue>(_ element: Element) -> Any? {
        if let object = element as? Object { return object }
        return (try? element._field(in: nil))?.anyValue
    }

    /// The elements a plain value holds (an array, another collection), each converted to
    /// `Element`, or an error naming `property` and the position that does not fit.
    static func elements<Element: _PersistableValue>(from value: Any?, property: String, realm: Realm?) throws -> [Element] {
        guard let value = FieldValue.unwrap(value) else { return [] }
        let items = try FieldValue.items(of: value, context: "\(property) is a collection")
        return try items.enumerated().map { position, item in try element(from: item, context: "\(property)[\(position)]", realm: realm) }
    }

    /// One plain value as an `Element`, or an error naming `context`.
    static func element<Element: _PersistableValue>(from item: Any?, context: String, realm: Realm?) throws -> Element {
        if let element = item as? Element { return element }
        if Element._propertyKind == .object {
            if let realm, let objectType = Element.self as? Object.Type,
               let object = try realm.objectFromValue(objectType, item) as? Element {
                return object
            }
            throw RealmError.invalidValue("\(context): expected \(Element.self), got \(item.map { "\(type(of: $0))" } ?? "nil")")
        }
        let template = PropertySchema(name: context, kind: Element._propertyKind, isOptional: Element.self is ExpressibleByNilLiteral.Type, objectClassName: Element._typeName)
        let field = try FieldValue.converting(item, to: template, context: context)
        guard let element = Element._fromField(field, in: nil) else {
            throw RealmError.invalidValue("\(context): \(item.map { "\($0)" } ?? "nil") is not a \(Element.self)")
        }
        return element
    }

    /// The elements with objects deep-copied through `copier`.
    static func deepCopies<Element: _PersistableValue>(_ elements: [Element], _ copier: inout DeepCopier) -> [Element] {
        elements.map { element in
            if let object = element as? Object { return copier.copy(object) as! Element }
            return element
        }
    }
}
