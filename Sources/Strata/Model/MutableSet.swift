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
/// order they were first inserted. Changing the set of a managed object requires a write.
/// `contains` and `insert` cost O(1) (after the set is read once per change made elsewhere),
/// removals O(the set's size).
public final class MutableSet<Element: _PersistableValue>: _ListBase, RandomAccessCollection, CustomStringConvertible {
    private var unmanaged: [Element]
    private let owner: ObjectState?
    private let index: Int
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

    /// What a managed set's owner keeps of it between reads: the stored values that read as
    /// elements (in order), those elements when they are values (objects are made on access:
    /// a cached object would keep its owner alive, see `ObjectState.collectionContents`),
    /// their membership keys, and the keys of every stored value when some did not read as
    /// an element (a link to a deleted object): inserting must not store such a value twice.
    private struct Contents {
        var fields: [FieldValue] = []
        var values: [Element]? = Element._propertyKind == .object ? nil : []
        var memberKeys = Set<[UInt8]>()
        var storedKeys: Set<[UInt8]>?

        /// Adds a stored value, if it reads as an element.
        mutating func add(_ field: FieldValue, in realm: Realm) {
            storedKeys?.insert(SetMembership.key(field))
            guard let element = Element._fromField(field, in: realm) else { return }
            fields.append(field)
            values?.append(element)
            memberKeys.insert(SetMembership.key(field))
        }
    }

    /// The contents now, converted once per change of what they are read from and shared
    /// by every `MutableSet` of the same object: `contains` and `insert` are O(1).
    private func contents(_ owner: ObjectState) -> Contents {
        owner.cachedContents(index) {
            var contents = Contents()
            guard case .list(let fields) = owner.field(index) else { return (contents, .ownRow) }
            for field in fields { contents.add(field, in: owner.realm) }
            if contents.fields.count != fields.count { contents.storedKeys = Set(fields.map(SetMembership.key)) }
            let dependence: ObjectState.CollectionDependence = Element._propertyKind != .object ? .ownRow
                : contents.storedKeys == nil ? .ownRowAndDeletions : .everything
            return (contents, dependence)
        }
    }

    /// The element at `position` of `contents`.
    private func element(_ contents: Contents, at position: Int, _ owner: ObjectState) -> Element {
        if let values = contents.values { return values[position] }
        // Contents say the object exists; one that cannot be made is a bug, not a state of the data.
        guard let element = Element._fromField(contents.fields[position], in: owner.realm) else {
            preconditionFailure("MutableSet[\(position)]: the object the set holds there cannot be read")
        }
        return element
    }

    /// The elements now (links to deleted objects are left out).
    private var current: [Element] {
        guard let owner else { return unmanaged }
        let contents = contents(owner)
        return contents.values ?? contents.fields.indices.map { element(contents, at: $0, owner) }
    }

    /// Changes the stored elements of a managed set in place.
    private func modifyStored(_ body: (inout [FieldValue]) -> Void) {
        owner?.modifyList(index, body)
    }

    private func fields(of elements: some Sequence<Element>) -> [FieldValue] {
        guard let owner else { return [] }
        return elements.map { element in owner.fieldForAssignment { try element._field(in: owner.realm) } }
    }

    // MARK: Collection

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int {
        guard let owner else { return unmanaged.count }
        return contents(owner).fields.count
    }
    /// The element at `position` (insertion order).
    public subscript(position: Int) -> Element {
        guard let owner else { return unmanaged[position] }
        let contents = contents(owner)
        precondition(position >= 0 && position < contents.fields.count, "Index \(position) is out of bounds (the set has \(contents.fields.count) elements)")
        return element(contents, at: position, owner)
    }

    /// Whether `element` is in the set.
    public func contains(_ element: Element) -> Bool {
        let wanted = SetMembership.key(element)
        guard let owner else { return unmanaged.contains { SetMembership.key($0) == wanted } }
        return contents(owner).memberKeys.contains(wanted)
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
        guard let owner else { return }
        let added = absentFields(of: elements, owner)
        guard !added.isEmpty else { return }
        owner.changeCollection(index, as: Contents.self, { owner.modifyList(index) { $0.append(contentsOf: added) } }) { contents in
            // Exactly what a fresh read would add (the same conversion, the same skips).
            for field in added { contents.add(field, in: owner.realm) }
        }
    }

    /// The stored values of `elements` the set does not hold, each once. (Its own function:
    /// the contents it reads must be released before the insert changes them in place.)
    private func absentFields(of elements: some Sequence<Element>, _ owner: ObjectState) -> [FieldValue] {
        let current = contents(owner)
        let present = current.storedKeys ?? current.memberKeys
        var seen = Set<[UInt8]>()
        return fields(of: elements).filter { field in
            let key = SetMembership.key(field)
            return !present.contains(key) && seen.insert(key).inserted
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
            // Unmanaged: a nested dictionary or array becomes a new unmanaged element.
            if realm == nil, let objectType = Element.self as? Object.Type,
               let object = try Object.unmanaged(objectType, from: item) as? Element {
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

extension MutableSet: FreezableCollection {
    var ownerAndIndex: (owner: ObjectState?, index: Int) { (owner, index) }
    static func make(owner: ObjectState, index: Int) -> Self { Self(owner: owner, index: index) }

    /// Whether the owning object is frozen (an unmanaged set is not).
    public var isFrozen: Bool { owner?.realm.isFrozen ?? false }

    /// Whether the owning object was deleted or its realm invalidated (an unmanaged set
    /// never is).
    public var isInvalidated: Bool { owner?.isInvalidated ?? false }

    /// This set as of the commit its realm reads now (Realm's `freeze()`): the property
    /// of the frozen owning object, readable on any thread. Traps for an unmanaged set,
    /// a deleted owner, or inside a write transaction, as Realm raises.
    public func freeze() -> MutableSet<Element> { freezeCollection() }

    /// The live set of a frozen one, in a realm opened here (Realm's `thaw()`); nil if
    /// its object was deleted since. A live or unmanaged set returns itself.
    public func thaw() -> MutableSet<Element>? { thawCollection() }
}
