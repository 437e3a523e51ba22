// Realm instances: as in Realm Swift, opening a realm where one of the same configuration
// is already open — the same thread, serial queue, task or actor — returns that instance.
// Realm code opens `try Realm()` in every function: a helper called inside a write then
// writes in that write, and `realm == other` holds. Entries are weak: the instance lives as
// long as its users keep it, and an invalidated one is never handed out again.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The open realm instances of the process, by where they belong and what they open.
final class RealmInstances: @unchecked Sendable {
    static let shared = RealmInstances()

    /// Where a realm belongs, as a hashable value.
    enum Owner: Hashable {
        case thread(UInt)
        case queue(ObjectIdentifier)
        case task(UnsafeCurrentTask)
        case actor(ObjectIdentifier)

        init?(_ confinement: Confinement) {
            switch confinement {
            case .thread(let thread):
                #if canImport(Glibc)
                self = .thread(UInt(thread))
                #else
                self = .thread(UInt(bitPattern: thread))
                #endif
            case .queue(_, let identity): self = .queue(ObjectIdentifier(identity))
            case .task(let identity): self = .task(identity.task)
            case .actor(let identity):
                guard let actor = identity.actor else { return nil }
                self = .actor(ObjectIdentifier(actor))
            case .frozen: return nil
            }
        }
    }

    /// What makes two configurations open the same realm: the store, and everything that
    /// changes how this instance reads it (types bound, schema version, access, key).
    struct ConfigurationKey: Hashable {
        let store: String
        let types: [ObjectIdentifier]
        let schemaVersion: UInt64
        let readOnly: Bool
        let encryptionKey: Data?

        init?(_ configuration: Realm.Configuration) {
            guard let store = configuration.storeIdentity else { return nil }
            self.store = store
            types = configuration.objectTypes.map { ObjectIdentifier($0) }
            schemaVersion = configuration.schemaVersion
            readOnly = configuration.readOnly
            encryptionKey = configuration.encryptionKey
        }
    }

    private struct Key: Hashable {
        let owner: Owner
        let configuration: ConfigurationKey
    }

    private final class Entry {
        weak var realm: Realm?
    }

    private let lock = NSLock()
    private var entries: [Key: Entry] = [:]
    /// Entries are swept of released realms when the table doubles past this.
    private var sweepAt = 64

    /// The instance open for `configuration` where `confinement` belongs, or one made by
    /// `open` (and kept for the next call there).
    func instance(_ configuration: Realm.Configuration, confinement: Confinement,
                  open: (Confinement) throws -> Realm) throws -> Realm {
        guard let owner = Owner(confinement), let configurationKey = ConfigurationKey(configuration) else {
            return try open(confinement)
        }
        // One lookup: the entry stays in the table when its realm is released, and the next
        // open there refills it (a realm per request hashed its key twice before).
        let key = Key(owner: owner, configuration: configurationKey)
        let (entry, cached) = lock.withLock { () -> (Entry, Realm?) in
            if let entry = entries[key] { return (entry, entry.realm) }
            if entries.count >= sweepAt {
                entries = entries.filter { $0.value.realm != nil }
                sweepAt = max(64, entries.count * 2)
            }
            let entry = Entry()
            entries[key] = entry
            return (entry, nil)
        }
        if let realm = cached, !realm.isClosed, realm.confinement.isCurrent { return realm }
        let realm = try open(confinement)
        lock.withLock { entry.realm = realm }
        return realm
    }
}
