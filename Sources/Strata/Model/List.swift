// List: an ordered collection property. Unmanaged, it is an array; managed, it reads and
// writes its property of the owning object (one field of the row).

import Foundation

/// The element-type-erased face of a collection property (`List`, `MutableSet`, `Map`,
/// `LinkingObjects`), for reflection and dynamic access.
public class _ListBase {
    var _anyElements: [Any?] { [] }
    /// The value as a plain Swift value (`Object[name]`): an array; a map, a dictionary.
    var _anyValue: Any? { _anyElements }
    func _replaceAll(withAny value: Any?, property: String) throws {}
    /// The stored fields of the elements (links need the realm that will hold them).
    func _fields(in realm: Realm) throws -> [FieldValue] { [] }
    /// The stored field of the whole collection.
    func _field(in realm: Realm) throws -> FieldValue { .list(try _fields(in: realm)) }
    /// The stored field of an empty collection of this kind.
    var _emptyField: FieldValue { .list([]) }
    /// Deep copies of the elements, for `Object.deepCopy()`.
    func _unmanagedCopy(_ copier: inout DeepCopier) -> _ListBase { self }
    /// A list of the same element type bound to a managed object's property.
    func _managedCopy(state: ObjectState, index: Int) -> _ListBase { self }
}

/// An ordered list of values or of links to objects:
///
/// ```swift
/// @Persisted var tags: List<String>
/// @Persisted var phones: List<Phone>
/// try realm.write { user.tags.append("swift") }
/// ```
///
/// Changing the list of a managed object requires a write transaction.
public final class List<Element: _PersistableValue>: _ListBase, RandomAccessCollection, CustomStringConvertible {
    private var unmanaged: [Element]
    private let owner: ObjectState?
    private let index: Int

    /// An empty unmanaged list.
    public override init() {
        unmanaged = []
        owner = nil
        index = 0
    }

    /// An unmanaged list holding `elements`.
    public init(_ elements: some Sequence<Element>) {
        unmanaged = Array(elements)
        owner = nil
        index = 0
    }

    init(owner: ObjectState, index: Int) {
        unmanaged = []
        self.owner = owner
        self.index = index
    }

    /// The realm of the owning object, if it is managed.
    public var realm: Realm? { owner?.realm }

    private var managedFields: [FieldValue] {
        guard let owner else { return [] }
        if case .list(let elements) = owner.field(index) { return elements }
        return []
    }

    private func element(from field: FieldValue) -> Element? {
        Element._fromField(field, in: owner?.realm)
    }

    /// What a managed list's owner keeps of it between reads: values converted; links and
    /// embedded objects as where they are, made into objects on access (a cached object
    /// would keep its owner alive, see `ObjectState.collectionContents`).
    private enum Contents {
        case values([Element])
        /// The stored links whose objects exist, in order.
        case links([FieldValue])
        /// The positions of the embedded objects in the stored list.
        case embedded([Int])

        var count: Int {
            switch self {
            case .values(let values): return values.count
            case .links(let links): return links.count
            case .embedded(let positions): return positions.count
            }
        }
    }

    /// The contents now (links to deleted objects are skipped): converted once per change
    /// of what they are read from, and shared by every `List` of the same object.
    private func contents(_ owner: ObjectState) -> Contents {
        owner.cachedContents(index) {
            switch Element._propertyKind {
            case .embedded:
                return (.embedded(owner.embeddedPositions(index)), .everything)
            case .object:
                // Links to deleted objects are skipped. When none was, only deletions can
                // change the list; a link not found might be to an object created later.
                let fields = managedFields
                let links = fields.filter { element(from: $0) != nil }
                return (.links(links), links.count == fields.count ? .ownRowAndDeletions : .everything)
            default:
                return (.values(managedFields.compactMap(element(from:))), .ownRow)
            }
        }
    }

    /// The element at `position` of `contents`.
    private func element(_ contents: Contents, at position: Int, _ owner: ObjectState) -> Element {
        let made: Element?
        switch contents {
        case .values(let values): return values[position]
        case .links(let links): made = element(from: links[position])
        case .embedded(let positions): made = owner.embeddedObject(index, at: positions[position]) as? Element
        }
        // Contents say the element exists; one that cannot be made is a bug, not a state of the data.
        guard let made else { preconditionFailure("\(listName)[\(position)]: the object the list holds there cannot be read") }
        return made
    }

    /// The elements now (links to deleted objects are skipped).
    private var current: [Element] {
        guard let owner else { return unmanaged }
        let contents = contents(owner)
        if case .values(let values) = contents { return values }
        return (0..<contents.count).map { element(contents, at: $0, owner) }
    }

    private func store(_ elements: [Element]) {
        guard let owner else { unmanaged = elements; return }
        owner.setField(index, owner.fieldForAssignment {
            .list(try elements.map { try $0._field(in: owner.realm) })
        })
    }

    // MARK: Collection

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int {
        guard let owner else { return unmanaged.count }
        return contents(owner).count
    }

    /// Iterates the elements that are in the list when iteration starts, as Realm does: a
    /// loop that appends to the list it iterates ends (it does not visit what it added),
    /// and one that removes elements stops at the list's end instead of trapping.
    public func makeIterator() -> Iterator { Iterator(list: self, end: count) }

    /// An iterator over the elements present when it was made (see ``makeIterator()``).
    public struct Iterator: IteratorProtocol {
        let list: List<Element>
        let end: Int
        var position = 0

        /// The next element, or nil at the end of the elements iteration started with (or
        /// of the list, if it became shorter).
        public mutating func next() -> Element? {
            guard position < end, position < list.count else { return nil }
            defer { position += 1 }
            return list[position]
        }
    }

    /// The element at `position`; setting it needs a write when the list is managed.
    public subscript(position: Int) -> Element {
        get {
            guard let owner else { return unmanaged[position] }
            let contents = contents(owner)
            precondition(position >= 0 && position < contents.count, "Index \(position) is out of bounds (\(listName) has \(contents.count) elements)")
            return element(contents, at: position, owner)
        }
        set {
            Realm.checkNotOwned(CollectionOfOne(newValue), context: listName)
            var elements = current
            elements[position] = newValue
            store(elements)
        }
    }

    /// The elements as an array.
    public func toArray() -> [Element] { current }

    // MARK: Mutation

    /// Appends `element`: amortized O(1), however long the list.
    public func append(_ element: Element) { append(contentsOf: CollectionOfOne(element)) }
    /// Appends `elements` (O(their count), not O(the list's length)).
    public func append(contentsOf elements: some Sequence<Element>) {
        guard let owner else { unmanaged.append(contentsOf: elements); return }
        let added = elements.map { $0 }
        Realm.checkNotOwned(added, context: listName)
        let fields: FieldValue = owner.fieldForAssignment { .list(try added.map { try $0._field(in: owner.realm) }) }
        guard case .list(let items) = fields else { return }
        var start = 0
        changeManagedList(owner) { list in
            start = list.count
            list.append(contentsOf: items)
        } carry: { contents in
            // Exactly what a fresh read would add (the same conversion, the same skips).
            switch contents {
            case .values(var values):
                contents = .links([])           // so `values` is the only reference
                values.append(contentsOf: items.compactMap(element(from:)))
                contents = .values(values)
            case .links(var links):
                contents = .links([])
                links.append(contentsOf: items.filter { element(from: $0) != nil })
                contents = .links(links)
            case .embedded:
                break                           // not carried (see changeManagedList)
            }
        }
        for (offset, element) in added.enumerated() {
            if let object = element as? Object { owner.realm.adoptEmbedded(object, parent: owner, index: index, position: start + offset) }
        }
    }

    /// Changes the stored list in place, and the owner's converted elements with it through
    /// `carry` (embedded objects, read by position, are read again instead).
    private func changeManagedList(_ owner: ObjectState, _ body: (inout [FieldValue]) -> Void,
                                   carry: (inout Contents) -> Void) {
        if Element._propertyKind == .embedded {
            owner.modifyList(index, body)
        } else {
            owner.changeCollection(index, as: Contents.self, { owner.modifyList(index, body) }, carry: carry)
        }
    }

    /// `Type.property` of a managed list, for messages.
    private var listName: String {
        owner.map { "\($0.bound.className).\($0.bound.schema.properties[index].name)" } ?? "List"
    }
    /// Appends `objects` (Realm Swift's name for ``append(contentsOf:)``).
    public func append(objectsIn objects: some Sequence<Element>) { append(contentsOf: objects) }
    /// Inserts `element` at `position`.
    public func insert(_ element: Element, at position: Int) {
        Realm.checkNotOwned(CollectionOfOne(element), context: listName)
        var elements = current
        elements.insert(element, at: position)
        store(elements)
    }
    /// Removes and returns the element at `position`.
    @discardableResult
    public func remove(at position: Int) -> Element {
        var elements = current
        let removed = elements.remove(at: position)
        store(elements)
        return removed
    }
    /// Removes the last element: O(1) on a list of values. (On a list of objects, the last
    /// element whose object still exists, as the list shows it.)
    public func removeLast() {
        guard let owner, Element._propertyKind != .object else { _ = remove(at: count - 1); return }
        var removed = FieldValue.null
        changeManagedList(owner) { list in
            precondition(!list.isEmpty, "Can't remove last element from an empty list")
            removed = list.removeLast()
        } carry: { contents in
            // A stored value that reads as no element (a raw value with no case) was skipped.
            guard case .values(var values) = contents, element(from: removed) != nil else { return }
            contents = .links([])
            values.removeLast()
            contents = .values(values)
        }
    }
    /// Removes every element.
    public func removeAll() { store([]) }
    /// Moves the element at `from` to `to`.
    public func move(from: Int, to: Int) {
        var elements = current
        let element = elements.remove(at: from)
        elements.insert(element, at: to)
        store(elements)
    }
    /// Swaps two elements.
    public func swapAt(_ i: Int, _ j: Int) {
        var elements = current
        elements.swapAt(i, j)
        store(elements)
    }
    /// Replaces the element at `index`.
    public func replace(index: Int, object: Element) { self[index] = object }
    /// Replaces all elements.
    public func replaceAll(with elements: some Sequence<Element>) {
        let elements = Array(elements)
        Realm.checkNotOwned(elements, context: listName)
        store(elements)
    }
    /// Inserts `elements` at `position`.
    public func insert(contentsOf elements: some Collection<Element>, at position: Int) {
        Realm.checkNotOwned(elements, context: listName)
        var current = self.current
        current.insert(contentsOf: elements, at: position)
        store(current)
    }

    // Realm Swift's range and offset edits (each one store of the new contents).

    /// Removes and returns the first element. Traps when the list is empty, as `Array`'s.
    @discardableResult
    public func removeFirst() -> Element {
        precondition(!isEmpty, "Can't remove first element from an empty list")
        return remove(at: 0)
    }

    /// Removes the first `k` elements. Traps unless `0 <= k <= count`.
    public func removeFirst(_ k: Int) {
        precondition(k >= 0 && k <= count, "Can't remove \(k) elements from a list of \(count)")
        removeSubrange(0 ..< k)
    }

    /// Removes the last `k` elements. Traps unless `0 <= k <= count`.
    public func removeLast(_ k: Int) {
        precondition(k >= 0 && k <= count, "Can't remove \(k) elements from a list of \(count)")
        removeSubrange(count - k ..< count)
    }

    /// Removes the elements in `bounds`.
    public func removeSubrange(_ bounds: Range<Int>) {
        replaceSubrange(bounds, with: EmptyCollection())
    }

    /// Replaces the elements in `subrange` with `newElements`. Traps for a range outside
    /// the list.
    public func replaceSubrange(_ subrange: Range<Int>, with newElements: some Collection<Element>) {
        precondition(subrange.lowerBound >= 0 && subrange.upperBound <= count,
                     "Range \(subrange) is out of bounds (the list has \(count) elements)")
        Realm.checkNotOwned(newElements, context: listName)
        var elements = current
        elements.replaceSubrange(subrange, with: newElements)
        store(elements)
    }

    /// Removes the elements at `offsets` (SwiftUI's `onDelete`). Traps for an offset
    /// outside the list.
    public func remove(atOffsets offsets: IndexSet) {
        guard let last = offsets.last else { return }
        precondition(offsets.first! >= 0 && last < count, "Offsets \(Array(offsets)) are out of bounds (the list has \(count) elements)")
        var elements = current
        for offset in offsets.reversed() { elements.remove(at: offset) }
        store(elements)
    }

    /// Moves the elements at `offsets` to before the element that was at `destination`
    /// (`count`: the end), keeping their order (SwiftUI's `onMove`). Traps for an offset or
    /// a destination outside the list.
    public func move(fromOffsets offsets: IndexSet, toOffset destination: Int) {
        guard let last = offsets.last else { return }
        precondition(offsets.first! >= 0 && last < count && destination >= 0 && destination <= count,
                     "Offsets \(Array(offsets)) or destination \(destination) are out of bounds (the list has \(count) elements)")
        var elements = current
        let moving = offsets.map { elements[$0] }
        let before = offsets.filter { $0 < destination }.count
        for offset in offsets.reversed() { elements.remove(at: offset) }
        elements.insert(contentsOf: moving, at: destination - before)
        store(elements)
    }

    /// `List<Element>(a, b, …)`.
    public var description: String { "List<\(Element.self)>(\(current.map { "\($0)" }.joined(separator: ", ")))" }

    // MARK: Erased

    override var _anyElements: [Any?] { CollectionErasure.anyElements(current) }

    override func _replaceAll(withAny value: Any?, property: String) throws {
        store(try CollectionErasure.elements(from: value, property: property, realm: owner?.realm))
    }

    override func _fields(in realm: Realm) throws -> [FieldValue] {
        try current.map { try $0._field(in: realm) }
    }

    override func _managedCopy(state: ObjectState, index: Int) -> _ListBase {
        List<Element>(owner: state, index: index)
    }

    override func _unmanagedCopy(_ copier: inout DeepCopier) -> _ListBase {
        let copy = List<Element>()
        copy.unmanaged = CollectionErasure.deepCopies(current, &copier)
        return copy
    }
}

extension List: _PersistedProperty {
    public static var _schemaTemplate: PropertySchema {
        PropertySchema(name: "", kind: Element._propertyKind, isOptional: Element.self is ExpressibleByNilLiteral.Type,
                       isList: true, objectClassName: Element._typeName)
    }
    public static var _defaultPropertyValue: List<Element> { List() }
    public func _propertySlot() -> _Slot { .list(owner == nil ? self : List(current)) }
    public static func _fromPropertySlot(_ slot: _Slot) -> List<Element> {
        if case .list(let list) = slot, let typed = list as? List<Element> { return typed }
        return List()
    }
    public static func _managedGet(_ state: ObjectState, _ index: Int) -> List<Element> {
        List(owner: state, index: index)
    }
    public static func _canRead(_ field: FieldValue) -> Bool {
        guard case .list(let items) = field else { return false }
        if Element._propertyKind == .object || Element._propertyKind == .embedded { return true }
        return items.allSatisfy { Element._fromField($0, in: nil) != nil }
    }
    public static func _managedSet(_ value: List<Element>, _ state: ObjectState, _ index: Int) {
        if value.owner === state && value.index == index { return }
        let elements = value.current
        state.setField(index, state.fieldForAssignment { .list(try elements.map { try $0._field(in: state.realm) }) })
    }
}

extension List: FreezableCollection {
    var ownerAndIndex: (owner: ObjectState?, index: Int) { (owner, index) }
    static func make(owner: ObjectState, index: Int) -> Self { Self(owner: owner, index: index) }

    /// Whether the owning object is frozen (an unmanaged list is not).
    public var isFrozen: Bool { owner?.realm.isFrozen ?? false }

    /// Whether the owning object was deleted or its realm invalidated (an unmanaged list
    /// never is).
    public var isInvalidated: Bool { owner?.isInvalidated ?? false }

    /// This list as of the commit its realm reads now (Realm's `freeze()`): the property
    /// of the frozen owning object, readable on any thread. Traps for an unmanaged list,
    /// a deleted owner, or inside a write transaction, as Realm raises.
    public func freeze() -> List<Element> { freezeCollection() }

    /// The live list of a frozen one, in a realm opened here (Realm's `thaw()`); nil if
    /// its object was deleted since. A live or unmanaged list returns itself.
    public func thaw() -> List<Element>? { thawCollection() }
}
