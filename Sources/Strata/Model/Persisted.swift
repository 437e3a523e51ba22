// @Persisted: the property wrapper that makes a stored property of an Object part of its
// schema. Values live in the enclosing object (unmanaged: in its slots; managed: in the
// store), so the wrapper itself holds only the property's position and flags.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Declares a stored property of an ``Object``:
///
/// ```swift
/// final class User: Object {
///     @Persisted(primaryKey: true) var objId: String = ""
///     @Persisted(indexed: true) var city: String = ""
///     @Persisted var tags: List<String>
///     @Persisted var car: Car?
/// }
/// ```
///
/// The property's position in the schema is its position among the class's `@Persisted`
/// properties, counted when an instance is initialized. An initial value may create
/// another object (`@Persisted var dog: Dog? = Dog()`): adding the object adds it too.
@propertyWrapper
public struct Persisted<Value: _PersistedProperty> {
    @usableFromInline let index: Int
    @usableFromInline let isPrimaryKey: Bool
    @usableFromInline let isIndexed: Bool

    @usableFromInline
    init(slot: _Slot, primaryKey: Bool, indexed: Bool) {
        index = ObjectConstruction.register(slot)
        isPrimaryKey = primaryKey
        isIndexed = indexed
    }

    /// A property with an initial value.
    @inlinable
    public init(wrappedValue: Value) {
        self.init(slot: wrappedValue._propertySlot(), primaryKey: false, indexed: false)
    }

    /// A property with its type's default value: zero, empty, false, nil or an empty list.
    public init() {
        self.init(slot: Value._defaultPropertyValue._propertySlot(), primaryKey: false, indexed: false)
    }

    /// The primary key (`Int`, its widths, `String` or `UUID`), or an indexed property.
    public init(wrappedValue: Value, primaryKey: Bool = false, indexed: Bool = false) {
        self.init(slot: wrappedValue._propertySlot(), primaryKey: primaryKey, indexed: indexed)
    }

    /// The primary key or an indexed property, with its type's default value.
    public init(primaryKey: Bool = false, indexed: Bool = false) {
        self.init(slot: Value._defaultPropertyValue._propertySlot(), primaryKey: primaryKey, indexed: indexed)
    }

    /// Not available: `@Persisted` works only on properties of an ``Object`` subclass.
    @available(*, unavailable, message: "@Persisted can only be used as a property on an Object subclass")
    public var wrappedValue: Value {
        get { fatalError("@Persisted can only be used as a property on an Object subclass") }
        // swiftlint:disable:next unused_setter_value
        set { fatalError("@Persisted can only be used as a property on an Object subclass") }
    }

    /// The accessor Swift calls for a wrapped property of a class.
    @inlinable
    public static subscript<EnclosingSelf: Object>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>
    ) -> Value {
        // Always inlined, so the storage key path is a literal the optimizer resolves to a
        // field access instead of a runtime key-path projection.
        @inline(__always) get {
            let index = object[keyPath: storageKeyPath].index &- object._slotBase
            if let state = object._state { return Value._managedGet(state, index) }
            object._probe?.record(index, wrappedKeyPath)
            return Value._fromPropertySlot(object._slots[index])
        }
        @inline(__always) set {
            let index = object[keyPath: storageKeyPath].index &- object._slotBase
            if let state = object._state {
                Value._managedSet(newValue, state, index)
            } else {
                object._slots[index] = newValue._propertySlot()
            }
        }
    }
}

/// What schema discovery reads from a `Persisted` found by reflection.
protocol PersistedDescriptor {
    var index: Int { get }
    var schemaTemplate: PropertySchema { get }
    var isPrimaryKey: Bool { get }
    var isIndexed: Bool { get }
    /// Whether a stored field can be read as the property's type.
    func canRead(_ field: FieldValue) -> Bool
    /// The class a link, embedded or collection-of-objects property holds.
    var objectType: Object.Type? { get }
}

extension Persisted: PersistedDescriptor {
    var schemaTemplate: PropertySchema { Value._schemaTemplate }
    func canRead(_ field: FieldValue) -> Bool { Value._canRead(field) }
    var objectType: Object.Type? { (Value.self as? any _ObjectContainer.Type)?._objectType }
}

/// A property type that holds objects (a link, an embedded object, a collection of them):
/// which class, known without a realm (unmanaged JSON decoding needs it).
protocol _ObjectContainer {
    static var _objectType: Object.Type? { get }
}

extension Optional: _ObjectContainer where Wrapped: _PersistableValue {
    static var _objectType: Object.Type? { Wrapped.self as? Object.Type }
}
extension List: _ObjectContainer {
    static var _objectType: Object.Type? { Element.self as? Object.Type }
}
extension MutableSet: _ObjectContainer {
    static var _objectType: Object.Type? { Element.self as? Object.Type }
}
extension Map: _ObjectContainer {
    static var _objectType: Object.Type? { Value.self as? Object.Type ?? (Value.self as? any _ObjectContainer.Type)?._objectType }
}

/// The slots of the objects being initialized on this thread. Stored-property initializers
/// run before `Object.init()`, in declaration order (subclass first), so each `Persisted`
/// appends its initial value (its position: the number of slots registered before it) and
/// `Object.init()` takes the object's own slots: the last ones, as many as the class has
/// `@Persisted` properties. An initial value that creates another object (`= Dog()`)
/// registers and takes that object's slots in the middle of this one's; the slots below
/// stay for the object whose initializers are still running, and each object subtracts the
/// position its own slots started at (`Object._slotBase`).
///
/// An initializer that assigns a property before `super.init()` makes Swift build its
/// wrapper twice: the first slot is orphaned. When the object's properties do not then hold
/// the last positions in declaration order, it takes the slots from its lowest position up
/// (never below: those may be another object's), marked so that adding it throws; orphans
/// left below are dropped once more than `2 * keptSlots` slots wait, oldest first (no
/// object being initialized has that many below it). Positions are counted from the first
/// slot ever registered on the thread (`Buffer.first` is the position of `slots[0]`), so
/// dropping old slots moves no position.
@usableFromInline
enum ObjectConstruction {
    final class Buffer {
        var slots: [_Slot] = []
        /// The position of `slots[0]`.
        var first = 0
        /// Set while a managed object is materialized: its slots are never read, so only
        /// positions are counted.
        var countOnly = false
        var counted = 0
        /// `@Persisted` properties per class, counted once per thread by reflection (the
        /// last class asked kept apart: objects are mostly made in runs of one class).
        var propertyCounts: [ObjectIdentifier: Int] = [:]
        var lastClass: ObjectIdentifier?
        var lastCount = 0
    }

    /// Slots kept below the objects being initialized (far more than any nesting of
    /// initial values registers); orphans beyond twice as many are dropped.
    static let keptSlots = 4096

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            Unmanaged<Buffer>.fromOpaque(pointer).release()
            #else
            if let pointer { Unmanaged<Buffer>.fromOpaque(pointer).release() }
            #endif
        }
        return key
    }()

    static var current: Buffer {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Buffer>.fromOpaque(pointer).takeUnretainedValue() }
        let buffer = Buffer()
        pthread_setspecific(key, Unmanaged.passRetained(buffer).toOpaque())
        return buffer
    }

    @usableFromInline
    static func register(_ slot: _Slot) -> Int {
        // (Once per property of every object made: the thread's key holds the buffer, so it
        // is borrowed, not retained and released; that pair was 15% of a point read.)
        guard let pointer = pthread_getspecific(key) else { return register(slot, in: current) }
        return Unmanaged<Buffer>.fromOpaque(pointer)._withUnsafeGuaranteedRef { register(slot, in: $0) }
    }

    @inline(__always)
    private static func register(_ slot: _Slot, in buffer: Buffer) -> Int {
        if buffer.countOnly {
            buffer.counted += 1
            return buffer.counted - 1
        }
        buffer.slots.append(slot)
        return buffer.first + buffer.slots.count - 1
    }

    /// Initializes an object of `type` for the managed state the caller attaches at once.
    static func makeManaged(_ type: Object.Type) -> Object {
        let buffer = current
        let outer = buffer.countOnly
        buffer.countOnly = true
        defer { buffer.countOnly = outer }
        return type.init()
    }

    /// The slots `object`'s properties registered, and the position the first of them was
    /// registered at (its properties' positions minus it are their indices). The slots of
    /// an object whose properties were registered out of order (see above) end with one
    /// more, unread slot: the count that `Realm.add` checks.
    static func take(for object: Object) -> (slots: [_Slot], base: Int) {
        let buffer = current
        let total = buffer.countOnly ? buffer.counted : buffer.first + buffer.slots.count
        let count = propertyCount(of: object, buffer)
        var base = total - count
        var orphansFrom = base
        var misregistered = false
        if buffer.countOnly ? base != 0 : base != buffer.first {
            // More slots than this object's properties (or fewer): check where its own are.
            let positions = persistedPositions(of: object)
            if positions != Array(total - count ..< total) {
                misregistered = true
                base = min(positions.min() ?? total, total)
                // Each property's first slot is at or above the object's first position
                // plus its declaration rank: below the least of those, slots are others'.
                orphansFrom = min(base, positions.enumerated().map { $0.element - $0.offset }.min() ?? base)
            }
        }
        if buffer.countOnly {
            buffer.counted = max(0, orphansFrom)
            return ([], base)
        }
        let start = max(0, base - buffer.first), cut = max(0, min(start, orphansFrom - buffer.first))
        var slots: [_Slot]
        if cut == 0 {
            // The common case: every slot is this object's (the array moves, not copied).
            slots = buffer.slots
            buffer.slots = []
            buffer.slots.reserveCapacity(slots.count)
            if start > 0 { slots.removeFirst(start) }
        } else {
            slots = Array(buffer.slots[start...])
            buffer.slots.removeSubrange(cut...)
        }
        if misregistered { slots.append(.value(.null)) }
        if buffer.slots.count > 2 * keptSlots {
            let dropped = buffer.slots.count - keptSlots
            buffer.slots.removeFirst(dropped)
            buffer.first += dropped
        }
        return (slots, base)
    }

    /// How many `@Persisted` properties `object`'s class declares (with its superclasses').
    private static func propertyCount(of object: Object, _ buffer: Buffer) -> Int {
        let id = ObjectIdentifier(type(of: object))
        if buffer.lastClass == id { return buffer.lastCount }
        let count: Int
        if let known = buffer.propertyCounts[id] {
            count = known
        } else {
            count = persistedPositions(of: object).count
            buffer.propertyCounts[id] = count
        }
        buffer.lastClass = id
        buffer.lastCount = count
        return count
    }

    /// The registered positions of `object`'s properties, in declaration order (subclass
    /// first: the order their initializers ran).
    private static func persistedPositions(of object: Object) -> [Int] {
        var positions: [Int] = []
        var mirror: Mirror? = Mirror(reflecting: object)
        while let current = mirror {
            for child in current.children {
                if let descriptor = child.value as? PersistedDescriptor { positions.append(descriptor.index) }
            }
            mirror = current.superclassMirror
        }
        return positions
    }
}
