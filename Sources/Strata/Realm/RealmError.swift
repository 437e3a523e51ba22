// RealmError: what the object layer throws. Every case says what went wrong and where,
// in words a developer can act on.

/// An error from the object layer. Engine failures arrive as ``storage(_:)``.
public enum RealmError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store's schema differs from the declared one and `schemaVersion` was not raised.
    /// Each line names one difference.
    case schemaMismatch([String])
    /// A model class cannot be used as declared.
    case invalidSchema(String)
    /// A realm, object or results was used from a thread other than its own.
    case incorrectThread
    /// An object with this primary key already exists (`add(_:update: .error)`, `create`).
    case primaryKeyExists(type: String, key: String)
    /// A write API was called outside a write transaction.
    case notInWriteTransaction
    /// `beginWrite()` inside a write transaction.
    case alreadyInWriteTransaction
    /// The object was deleted or belongs to another realm.
    case invalidObject(String)
    /// A value does not fit the property it was given for, in a way the cases below do not
    /// name (a malformed collection, a Double outside Decimal's range, a row too large …).
    case invalidValue(String)
    /// A property name the type does not have (`create(value:)`, `value(forProperty:)`,
    /// a migration's dictionaries; `object["name"]` reads nil and traps on a set instead).
    case unknownProperty(type: String, property: String)
    /// `create(value:)` or `add` of an object without the primary key its type needs.
    case missingPrimaryKey(type: String, property: String)
    /// A value of a type the property cannot hold, or out of its range: `property` says
    /// where (`User.rank`, `User.tags[2]`), `expected` the property's type, `found` what was
    /// given (`Int 5`, `300, out of range`, `nil`).
    case typeMismatch(property: String, expected: String, found: String)
    /// A `ColumnDecodable` type could not be built from what the store holds.
    case columnDecodingFailed(type: String, object: String, property: String)
    /// The type is not part of this realm's schema.
    case unknownType(String)
    /// The realm is read-only.
    case readOnly
    /// The migration block failed or asked for something impossible.
    case migrationFailed(String)
    /// The realm was invalidated (closed).
    case invalidated
    /// A write was attempted on a frozen realm or object (frozen values never change;
    /// `Realm.thaw(_:)` finds the live object).
    case frozenRealm
    /// A string query that cannot be read or does not fit the type: the query, the offset
    /// (in characters) where the problem is, and what was expected there.
    case invalidQuery(query: String, offset: Int, reason: String)
    /// A stored object that cannot be read: its record failed its checksum or its row does
    /// not decode. Reads that cannot throw treat it as absent (or read its properties' zero
    /// values) and list it in ``Realm/readErrors``; `strata verify` names the file and
    /// offset, and `strata recover` salvages everything else.
    case damagedObject(type: String, key: String, reason: String)
    /// An error from the storage engine.
    case storage(StoreError)

    /// A message naming what went wrong and where.
    public var description: String {
        switch self {
        case .schemaMismatch(let lines):
            return "Migration is required due to the following errors:\n- " + lines.joined(separator: "\n- ")
        case .invalidSchema(let reason): return "invalid schema: \(reason)"
        case .incorrectThread: return "Realm accessed from incorrect thread"
        case .primaryKeyExists(let type, let key):
            return "Attempting to create an object of type '\(type)' with an existing primary key value \(key)"
        case .notInWriteTransaction: return "Cannot modify managed objects outside of a write transaction"
        case .alreadyInWriteTransaction: return "The Realm is already in a write transaction"
        case .invalidObject(let reason): return "invalid object: \(reason)"
        case .invalidValue(let reason): return "invalid value: \(reason)"
        case .unknownProperty(let type, let property): return "invalid value: \(type) has no property '\(property)'"
        case .missingPrimaryKey(let type, let property): return "invalid value: \(type) needs its primary key '\(property)'"
        case .typeMismatch(let property, let expected, let found): return "invalid value: \(property) expects \(expected); got \(found)"
        case .columnDecodingFailed(let type, let object, let property):
            return "\(type) could not be decoded from the value stored in \(object).\(property)"
        case .unknownType(let name): return "Object type '\(name)' is not managed by this Realm; add it to Configuration.objectTypes"
        case .readOnly: return "The Realm was opened read-only"
        case .migrationFailed(let reason): return "migration failed: \(reason)"
        case .invalidated: return "The Realm has been invalidated"
        case .frozenRealm: return "Can't perform transactions on a frozen Realm"
        case .invalidQuery(let query, let offset, let reason): return "invalid query at offset \(offset) of \"\(query)\": \(reason)"
        case .damagedObject(let type, let key, let reason):
            return "\(type)(\(key)) is damaged in the store and cannot be read: \(reason) (strata verify names the file; strata recover salvages the rest)"
        case .storage(let error): return error.description
        }
    }
}

extension RealmError {
    /// Wraps engine errors; passes realm errors through.
    static func wrap(_ error: any Error) -> any Error {
        if let store = error as? StoreError { return RealmError.storage(store) }
        return error
    }
}

extension Realm {
    /// Realm Swift's name for the errors a realm throws (`catch let error as Realm.Error`).
    public typealias Error = RealmError
}

extension RealmError {
    /// The kind of an error in Realm Swift's terms (`RLMError.Code`), for code that compares
    /// `error.code`: each case of ``RealmError`` and of the engine's `StoreError` maps to the nearest one.
    public enum Code: Int, Sendable {
        /// Anything without a more specific code.
        case fail = 1
        /// The store's files could not be read or written.
        case fileAccess = 2
        /// The process may not open the store's files.
        case filePermissionDenied = 3
        /// A file that was to be created exists.
        case fileExists = 4
        /// A file that was to be opened does not exist.
        case fileNotFound = 5
        /// The store was written by a newer format, or needs an upgrade this version cannot make.
        case fileFormatUpgradeRequired = 6
        /// Another process holds the store in a way that excludes this open.
        case incompatibleLockFile = 8
        /// The stored schema differs from the declared one.
        case schemaMismatch = 10
        /// The store's files are damaged.
        case invalidDatabase = 13
        /// The encryption key does not open the store.
        case decryptionFailed = 14
    }

    /// This error's code in Realm Swift's terms.
    public var code: Code {
        switch self {
        case .schemaMismatch: return .schemaMismatch
        case .storage(let error):
            switch error {
            case .locked: return .incompatibleLockFile
            case .corrupted: return .invalidDatabase
            case .io(_, _, let errno):
                switch errno {
                case EACCES, EPERM, EROFS: return .filePermissionDenied
                case ENOENT: return .fileNotFound
                case EEXIST: return .fileExists
                default: return .fileAccess
                }
            case .diskFull: return .fileAccess
            case .formatVersion: return .fileFormatUpgradeRequired
            case .wrongKey: return .decryptionFailed
            default: return .fail
            }
        default: return .fail
        }
    }
}
