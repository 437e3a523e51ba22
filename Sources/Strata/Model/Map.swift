// Map: string keys to values or links, stored as one tagged value in the owning object's
// row (keys in UTF-8 byte order, each once). Keys follow Realm's rule: no '.', no leading
// '$' (they would be ambiguous in key paths and in MongoDB documents).

/// The key type of a ``Map``: `String`, as in Realm Swift.
public protocol _MapKey: Hashable, Comparable, Sendable {
    /// The key as stored.
    var _mapKeyString: String { get }
    /// The key of a stored string.
    init(_mapKeyString: String)
}

extension String: _MapKey {
    public var _mapKeyString: String { self }
    public init(_mapKeyString: String) { self = _mapKeyString }
}

/// Realm's rule for map keys.
enum MapKeyRule {
    /// Why `key` cannot be a map key, or nil when it can.
    static func problem(_ key: String) -> String? {
        if key.contains(".") { return "map key '\(key)' contains '.', which a map key cannot contain" }
        if key.hasPrefix("$") { return "map key '\(key)' starts with '$', which a map key cannot start with" }
        return nil
    }

    /// Throws ``RealmError/invalidValue(_:)`` naming `context` when `key` breaks the rule.
    static func check(_ key: String, context: @autoclosure () -> String) throws {
        if let problem = problem(key) { throw RealmError.invalidValue("\(context()): \(problem)") }
    }

    /// Throws ``JSONMappingError/typeMismatch(path:expected:found:)`` at `path` (the map's
    /// JSON path) when `key` breaks the rule: the JSON front ends and `strata import`.
    static func checkJSON(_ key: String, path: @autoclosure () -> String) throws {
        if let problem = problem(key) {
            throw JSONMappingError.typeMismatch(path: "\(path()).\(key)", expected: "a map key without '.' or a leading '$'", found: problem)
        }
    }
}

/// A dictionary from strings to values or links (Realm Swift's `Map`):
///
/// ```swift
/// @Persisted var scores: Map<String, Int>
/// try realm.write {
///     player.scores["level1"] = 30
///     player.scores.setValue(45, forKey: "level2")
///     player.scores.removeObject(for: "level1")
/// }
/// for (level, score) in player.scores { print(level, score) }
/// ```
///
/// Keys may not contain `.` or start with `$` (Realm's rule): setting such a key traps with
/// the reason, and `create(value:)`, the JSON front ends and `strata import` throw. Setting
/// a key to nil removes it. Iteration and ``keys`` are in key order (UTF-8 bytes). Changing
/// the map of a managed object requires a write. Reading, setting or removing one key costs
/// O(1) (after the map is read once per change made elsewhere); iteration sorts the keys.
public final class Map<Key: _MapKey, Value: _PersistableValue>: _ListBase, Sequence, CustomStringConvertible {
    private var unmanaged: [String: Value]
    private let owner: ObjectState?
    private let index: Int

    /// An empty unmanaged map.
    public override init() {
        unmanaged = [:]
        owner = nil
        index = 0
    }

    init(owner: ObjectState, index: Int) {
        unmanaged = [:]
        self.owner = owner
        self.index = index
    }

    /// The realm of the owning object, if it is managed.
    public var realm: Realm? { owner?.realm }

    /// What a managed map's owner keeps of it between reads: the stored entries that read as
    /// values, and those values when they are not objects (objects are made on access: a
    /// cached object would keep its owner alive, see `ObjectState.collectionContents`).
    private struct Contents {
        var fields: [String: FieldValue] = [:]
        var values: [String: Value]? = Value._propertyKind == .object ? nil : [:]

        /// Sets the stored value of `key` (nil: removes it), if it reads as a value.
        mutating func set(_ key: String, _ field: FieldValue?, in realm: Realm) {
            let value = field.flatMap { Value._fromField($0, in: realm) }
            fields[key] = value == nil ? nil : field
            values?[key] = value
        }
    }

    /// The contents now (links to deleted objects are left out): converted once per change
    /// of what they are read from, and shared by every `Map` of the same object.
    private func contents(_ owner: ObjectState) -> Contents {
        owner.cachedContents(index) {
            var contents = Contents()
            guard case .map(let fields) = owner.field(index) else { return (contents, .ownRow) }
            for (key, field) in fields { contents.set(key, field, in: owner.realm) }
            let dependence: ObjectState.CollectionDependence = Value._propertyKind != .object ? .ownRow
                : contents.fields.count == fields.count ? .ownRowAndDeletions : .everything
            return (contents, dependence)
        }
    }

    /// The value for `key` (a stored string), if any.
    private func value(for key: String) -> Value? {
        guard let owner else { return unmanaged[key] }
        let contents = contents(owner)
        if let values = contents.values { return values[key] }
        return contents.fields[key].flatMap { Value._fromField($0, in: owner.realm) }
    }

    /// The entries now (links to deleted objects are left out).
    private var current: [String: Value] {
        guard let owner else { return unmanaged }
        let contents = contents(owner)
        return contents.values ?? contents.fields.compactMapValues { Value._fromField($0, in: owner.realm) }
    }

    /// Changes a managed map's stored entry for `key` in place (O(1)) and its converted
    /// entries with it, or the entry of an unmanaged one.
    private func store(_ key: String, _ field: FieldValue?, unmanaged value: Value?) {
        guard let owner else { unmanaged[key] = value; return }
        owner.changeCollection(index, as: Contents.self, { owner.modifyMap(index) { $0[key] = field } }) { contents in
            // Exactly what a fresh read would hold (the same conversion, the same skips).
            contents.set(key, field, in: owner.realm)
        }
    }

    private func checkedKey(_ key: Key) -> String {
        let text = key._mapKeyString
        if let problem = MapKeyRule.problem(text) {
            preconditionFailure("\(owner.map { "\($0.bound.className).\($0.bound.schema.properties[index].name)" } ?? "Map"): \(problem)")
        }
        return text
    }

    // MARK: Reading

    /// The number of entries.
    public var count: Int {
        guard let owner else { return unmanaged.count }
        return contents(owner).fields.count
    }
    /// Whether the map has no entries.
    public var isEmpty: Bool { count == 0 }
    /// The keys, in key order.
    public var keys: [Key] { sortedKeys.map(Key.init(_mapKeyString:)) }
    /// The values, in the order of their keys.
    public var values: [Value] {
        let entries = current
        return sortedKeys.compactMap { entries[$0] }
    }

    private var sortedKeys: [String] { current.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }

    /// The value for `key` (nil when absent); setting nil removes the key. Setting needs a
    /// write when the map is managed, and traps for a key Realm refuses.
    public subscript(key: Key) -> Value? {
        get { value(for: key._mapKeyString) }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeObject(for: key)
            }
        }
    }

    /// The value for `key`, as Realm Swift's `object(forKey:)`.
    public func object(forKey key: Key) -> Value? { value(for: key._mapKeyString) }

    /// Iterates `(key, value)` pairs in key order.
    public func makeIterator() -> IndexingIterator<[(key: Key, value: Value)]> {
        let entries = current
        return sortedKeys.compactMap { key in entries[key].map { (Key(_mapKeyString: key), $0) } }.makeIterator()
    }

    // MARK: Changing

    /// Sets the value for `key`.
    public func updateValue(_ value: Value, forKey key: Key) {
        let text = checkedKey(key)
        if let owner {
            store(text, owner.fieldForAssignment { try value._field(in: owner.realm) }, unmanaged: nil)
        } else {
            unmanaged[text] = value
        }
    }

    /// Sets the value for `key` from a plain value (Realm Swift's key-value coding form);
    /// nil removes the key. Traps when the value does not fit `Value`.
    public func setValue(_ value: Any?, forKey key: String) {
        let typedKey = Key(_mapKeyString: key)
        guard FieldValue.unwrap(value) != nil || Value.self is ExpressibleByNilLiteral.Type else {
            removeObject(for: typedKey)
            return
        }
        do {
            let element: Value = try CollectionErasure.element(from: value, context: "Map[\(key)]", realm: owner?.realm)
            updateValue(element, forKey: typedKey)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// Removes `key` and its value, if present.
    public func removeObject(for key: Key) {
        let text = key._mapKeyString
        store(text, nil, unmanaged: nil)
    }

    /// Removes every entry.
    public func removeAll() {
        guard let owner else { unmanaged = [:]; return }
        owner.modifyMap(index) { $0 = [:] }
    }

    /// `Map<Key, Value>[key: value, …]`.
    public var description: String {
        "Map<\(Key.self), \(Value.self)>[" + map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
    }

    // MARK: Erased

    override var _anyElements: [Any?] { values.map { CollectionErasure.anyValue($0) } }
    override var _anyValue: Any? { current.mapValues { CollectionErasure.anyValue($0) } }
    override var _emptyField: FieldValue { .map([:]) }

    override func _replaceAll(withAny value: Any?, property: String) throws {
        let entries = try Self.entries(from: value, property: property, realm: owner?.realm)
        removeAll()
        for (key, value) in entries { updateValue(value, forKey: Key(_mapKeyString: key)) }
    }

    /// The entries a plain value holds (a dictionary or another map), checked.
    private static func entries(from value: Any?, property: String, realm: Realm?) throws -> [String: Value] {
        guard let value = FieldValue.unwrap(value) else { return [:] }
        let items = try FieldValue.entries(of: value, context: property)
        var entries: [String: Value] = [:]
        for (key, item) in items {
            try MapKeyRule.check(key, context: property)
            entries[key] = try CollectionErasure.element(from: item, context: "\(property)[\(key)]", realm: realm)
        }
        return entries
    }

    override func _field(in realm: Realm) throws -> FieldValue {
        var fields: [String: FieldValue] = [:]
        for (key, value) in current {
            try MapKeyRule.check(key, context: "Map")
            fields[key] = try value._field(in: realm)
        }
        return .map(fields)
    }

    override func _managedCopy(state: ObjectState, index: Int) -> _ListBase {
        Map<Key, Value>(owner: state, index: index)
    }

    override func _unmanagedCopy(_ copier: inout DeepCopier) -> _ListBase {
        let copy = Map<Key, Value>()
        for (key, value) in current {
            if let object = value as? Object { copy.unmanaged[key] = (copier.copy(object) as! Value) } else { copy.unmanaged[key] = value }
        }
        return copy
    }
}

// Realm Swift's map aggregates and merge.
extension Map {
    /// Merges `other` into the map, `combine` choosing the value of a key present in both
    /// (the map's first, then `other`'s), as `Dictionary.merge` does. Inside a write for a
    /// managed map.
    public func merge<S: Sequence>(_ other: S, uniquingKeysWith combine: (Value, Value) throws -> Value) rethrows
        where S.Element == (key: Key, value: Value) {
        for (key, value) in other {
            updateValue(try self[key].map { try combine($0, value) } ?? value, forKey: key)
        }
    }

    /// Merges a dictionary into the map, as the sequence form does.
    public func merge(_ other: [Key: Value], uniquingKeysWith combine: (Value, Value) throws -> Value) rethrows {
        try merge(other.map { (key: $0.key, value: $0.value) }, uniquingKeysWith: combine)
    }
}

extension Map where Value: Comparable {
    /// The values in order, ascending or not (Realm Swift's `sorted(ascending:)`; Realm
    /// returns them as live `Results`, Strata as an array of the values now).
    public func sorted(ascending: Bool = true) -> [Value] {
        ascending ? values.sorted() : values.sorted(by: >)
    }

    /// The smallest value, or nil for an empty map.
    public func min() -> Value? { values.min() }
    /// The largest value, or nil for an empty map.
    public func max() -> Value? { values.max() }
}

extension Map where Value: AdditiveArithmetic {
    /// The sum of the values (zero for an empty map).
    public func sum() -> Value { values.reduce(.zero, +) }
}

extension Map where Value: BinaryFloatingPoint {
    /// The mean of the values, or nil for an empty map.
    public func average() -> Value? { isEmpty ? nil : sum() / Value(count) }
}

extension Map where Value: BinaryInteger {
    /// The mean of the values, or nil for an empty map.
    public func average() -> Double? { isEmpty ? nil : Double(sum()) / Double(count) }
}

extension Map: _PersistedProperty {
    public static var _schemaTemplate: PropertySchema {
        PropertySchema(name: "", kind: Value._propertyKind, isOptional: Value.self is ExpressibleByNilLiteral.Type,
                       objectClassName: Value._typeName, isMap: true)
    }
    public static var _defaultPropertyValue: Map<Key, Value> { Map() }
    public func _propertySlot() -> _Slot {
        guard owner != nil else { return .list(self) }
        let copy = Map<Key, Value>()
        copy.unmanaged = current
        return .list(copy)
    }
    public static func _fromPropertySlot(_ slot: _Slot) -> Map<Key, Value> {
        if case .list(let map) = slot, let typed = map as? Map<Key, Value> { return typed }
        return Map()
    }
    public static func _managedGet(_ state: ObjectState, _ index: Int) -> Map<Key, Value> {
        Map(owner: state, index: index)
    }
    public static func _canRead(_ field: FieldValue) -> Bool {
        guard case .map(let entries) = field else { return false }
        if Value._propertyKind == .object { return true }
        return entries.values.allSatisfy { Value._fromField($0, in: nil) != nil }
    }
    public static func _managedSet(_ value: Map<Key, Value>, _ state: ObjectState, _ index: Int) {
        if value.owner === state && value.index == index { return }
        let entries = value.current
        state.setField(index, state.fieldForAssignment {
            var fields: [String: FieldValue] = [:]
            for (key, element) in entries {
                try MapKeyRule.check(key, context: "\(state.bound.className).\(state.bound.schema.properties[index].name)")
                fields[key] = try element._field(in: state.realm)
            }
            return .map(fields)
        })
    }
}

extension Map: FreezableCollection {
    var ownerAndIndex: (owner: ObjectState?, index: Int) { (owner, index) }
    static func make(owner: ObjectState, index: Int) -> Self { Self(owner: owner, index: index) }

    /// Whether the owning object is frozen (an unmanaged map is not).
    public var isFrozen: Bool { owner?.realm.isFrozen ?? false }

    /// Whether the owning object was deleted or its realm invalidated (an unmanaged map
    /// never is).
    public var isInvalidated: Bool { owner?.isInvalidated ?? false }

    /// This map as of the commit its realm reads now (Realm's `freeze()`): the property
    /// of the frozen owning object, readable on any thread. Traps for an unmanaged map,
    /// a deleted owner, or inside a write transaction, as Realm raises.
    public func freeze() -> Map<Key, Value> { freezeCollection() }

    /// The live map of a frozen one, in a realm opened here (Realm's `thaw()`); nil if
    /// its object was deleted since. A live or unmanaged map returns itself.
    public func thaw() -> Map<Key, Value>? { thawCollection() }
}
