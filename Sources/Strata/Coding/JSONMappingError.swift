// JSONMappingError: what the JSON front ends (RealmCoder, Realm+JSON, EntityMapping) throw
// when a payload does not fit the model, each case naming its place in the payload.

/// A mapping failure, naming where in the JSON it happened.
public enum JSONMappingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A value of the wrong type: `users[3].rank: expected Int, found String "12"`.
    case typeMismatch(path: String, expected: String, found: String)
    /// JSON null for a property that cannot be nil.
    case nullValue(path: String, property: String)
    /// An object without the primary key its type needs.
    case missingPrimaryKey(path: String, type: String, property: String)
    /// The JSON does not have the shape the call expects (an object, an array, an envelope).
    case unexpectedShape(path: String, expected: String)
    /// A weak relationship names an object that does not exist.
    case unknownObject(path: String, type: String, key: String)
    /// The JSON text itself is not valid.
    case invalidJSON(JSONError)

    /// The path and the problem, in words (`users[3].rank: expected Int, found String "12"`).
    public var description: String {
        switch self {
        case .typeMismatch(let path, let expected, let found): return "\(path): expected \(expected), found \(found)"
        case .nullValue(let path, let property): return "\(path): null for non-optional property '\(property)'"
        case .missingPrimaryKey(let path, let type, let property): return "\(path): \(type) needs its primary key '\(property)'"
        case .unexpectedShape(let path, let expected): return "\(path): expected \(expected)"
        case .unknownObject(let path, let type, let key): return "\(path): no \(type) with primary key \(key)"
        case .invalidJSON(let error): return "invalid JSON: \(error)"
        }
    }
}
