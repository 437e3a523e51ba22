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
