// EmbeddedObject: an object owned by one parent, stored inside the parent's row as a
// nested row (no key, no table of its own). Deleting the parent, or replacing the
// property's value, deletes it; a change inside it is a change of its parent's property.

/// The base class of embedded model types (Realm Swift's `EmbeddedObject`):
///
/// ```swift
/// final class Address: EmbeddedObject {
///     @Persisted var street = ""
///     @Persisted var city = ""
/// }
/// final class Contact: Object {
///     @Persisted(primaryKey: true) var name = ""
///     @Persisted var address: Address?          // one embedded object
///     @Persisted var previous: List<Address>    // or a list of them
/// }
/// ```
///
/// An embedded object has no primary key and no identity of its own: it is part of its
/// parent. It cannot be added to a realm on its own or queried with `objects(_:)`;
/// assigning one that another parent already holds traps ("Cannot set a link to an existing
/// managed embedded object", as in Realm Swift) — assign a copy instead.
open class EmbeddedObject: Object {}

extension Object {
    /// The stored field of an embedded object: its values as a nested row (links inside it
    /// become links, adding their unmanaged targets; nested embedded objects nest). A
    /// managed embedded object gives a copy of its current values.
    func embeddedField(in realm: Realm?) throws -> FieldValue {
        if let state = _state {
            guard let fields = state.allFields() else { throw RealmError.invalidObject("\(Self.className) was deleted") }
            return .embedded(fields)
        }
        let properties = ObjectType.info(for: type(of: self)).schema.properties.count
        guard _slots.count == properties else {
            throw Realm.misregistered(Self.className, values: _slots.count, properties: properties)
        }
        var fields: [FieldValue] = []
        fields.reserveCapacity(_slots.count)
        for slot in _slots {
            switch slot {
            case .value(let field):
                fields.append(field)
            case .object(let target):
                guard let target else { fields.append(.null); continue }
                fields.append(try target._field(in: realm))
            case .list(let collection):
                guard let realm else { fields.append(collection._emptyField); continue }
                fields.append(try collection._field(in: realm))
            }
        }
        return .embedded(fields)
    }
}

extension Realm {
    /// Makes `object`, an unmanaged embedded object whose values were just stored in
    /// `parent`'s property `index` (at `position`), that managed embedded object — and so
    /// on for the embedded objects inside it.
    func adoptEmbedded(_ object: Object, parent: ObjectState, index: Int, position: Int?) {
        guard object is EmbeddedObject, object._state == nil,
              let bound = try? boundType(for: type(of: object)) else { return }
        let slots = object._slots
        let state = ObjectState(embeddedIn: parent, bound: bound, index: index, position: position)
        object._state = state
        adoptEmbeddedChildren(slots, parent: state)
    }

    /// Adopts the unmanaged embedded objects an object's slots held (its values were just stored).
    func adoptEmbeddedChildren(_ slots: [_Slot], parent: ObjectState) {
        for (index, slot) in slots.enumerated() {
            switch slot {
            case .object(let target?) where target is EmbeddedObject:
                adoptEmbedded(target, parent: parent, index: index, position: nil)
            case .list(let collection) where parent.bound.schema.properties[index].kind == .embedded:
                for (position, element) in collection._anyElements.enumerated() {
                    if let element = element as? Object { adoptEmbedded(element, parent: parent, index: index, position: position) }
                }
            default:
                continue
            }
        }
    }

    /// Refuses managed embedded objects about to be stored in another place ("Cannot add an
    /// existing managed embedded object to a List", as Realm Swift says).
    static func checkNotOwned<Element>(_ elements: some Sequence<Element>, context: @autoclosure () -> String) {
        guard Element.self is EmbeddedObject.Type || Element.self is EmbeddedObject?.Type else { return }
        for element in elements where (element as? Object)?._state != nil {
            preconditionFailure("\(context()): Cannot add an existing managed embedded object to a List (add a copy, such as its deepCopy())")
        }
    }
}
