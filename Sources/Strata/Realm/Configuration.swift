// Realm.Configuration: where the store lives and what it holds.

import Foundation
import Logging

extension Realm {
    /// Called when `schemaVersion` is raised: move data from the old schema to the new.
    public typealias MigrationBlock = @Sendable (_ migration: Migration, _ oldSchemaVersion: UInt64) throws -> Void

    /// How to open a realm: the store's location and options, the object types, and what
    /// to do when the stored schema is older.
    public struct Configuration: Sendable {
        /// The store directory (created if missing). Ignored when ``inMemoryIdentifier`` is set.
        public var directory: URL? {
            didSet { directoryIdentity = Self.identity(of: directory) }
        }
        /// The standardized path of `directory`, worked out once: standardizing a URL costs
        /// more than the rest of opening a realm on an open store.
        private var directoryIdentity: String?
        /// The model classes this realm manages (links must point to listed classes).
        public var objectTypes: [Object.Type] {
            get { objectTypeBox.types }
            set { objectTypeBox = ObjectTypeList(types: newValue) }
        }
        private var objectTypeBox = ObjectTypeList(types: [])
        /// The version of the declared schema; raise it when the models change.
        public var schemaVersion: UInt64 = 0
        /// Moves data when the stored `schemaVersion` is older.
        public var migrationBlock: MigrationBlock?
        /// When a migration would be needed, delete every stored object instead.
        public var deleteRealmIfMigrationNeeded = false
        /// Asked once per open with the store's disk bytes and live bytes; true compacts first.
        public var shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)?
        /// Opens the store read-only (several processes may read; nothing may write).
        public var readOnly = false
        /// Options passed through to the storage engine.
        public var storeOptions = StoreOptions()
        /// Where the store reports recovery truncations, slow syncs and compaction decisions
        /// (`StoreOptions.logger`); nil, the default, is silent.
        public var logger: Logger? {
            get { storeOptions.logger }
            set { storeOptions.logger = newValue }
        }
        /// Encrypts the realm's files at rest: 64 bytes (as Realm's key), or nil for a plain
        /// store (the default); the same as `storeOptions.encryptionKey`. Every file is
        /// encrypted and authenticated with AES-256-GCM; opening with another key, no key for
        /// an encrypted realm, or a key for a plain one throws
        /// `RealmError.storage(.wrongKey(_:))`, and a key of another size
        /// `RealmError.storage(.invalidArgument(_:))`. A realm is created encrypted or plain
        /// and stays so. Keep the key outside the store (a keychain or secrets manager).
        public var encryptionKey: Data? {
            get { storeOptions.encryptionKey }
            set { storeOptions.encryptionKey = newValue }
        }
        /// Non-nil: the realm lives in memory (tmpfs when available) under this name, shared
        /// by every realm of the process with the same identifier, and is gone when the last closes.
        public var inMemoryIdentifier: String?

        /// The configuration `Realm()` (and every `Realm(…)` given no configuration) opens
        /// (Realm Swift's name): set it once at start-up, read it from any thread. Strata
        /// has no default location: until set, it names no store and opening it throws
        /// ``RealmError/invalidValue(_:)`` saying so.
        ///
        /// ```swift
        /// Realm.Configuration.defaultConfiguration = Realm.Configuration(directory: cacheURL, objectTypes: [User.self])
        /// let realm = try Realm()
        /// ```
        public static var defaultConfiguration: Configuration {
            get { defaultStorage.withLock { $0 } }
            set { defaultStorage.withLock { $0 = newValue } }
        }
        private static let defaultStorage = Locked(Configuration())

        /// A configuration for the store in `directory`.
        public init(directory: URL? = nil, objectTypes: [Object.Type] = [], schemaVersion: UInt64 = 0,
                    migrationBlock: MigrationBlock? = nil, inMemoryIdentifier: String? = nil) {
            self.directory = directory
            directoryIdentity = Self.identity(of: directory)
            self.objectTypes = objectTypes
            self.schemaVersion = schemaVersion
            self.migrationBlock = migrationBlock
            self.inMemoryIdentifier = inMemoryIdentifier
        }

        /// Realm Swift's initializer, with its labels in its order: `fileURL` names the
        /// store's location (a directory in Strata: `…/app.realm` becomes a directory of
        /// that name), or `inMemoryIdentifier` an in-memory store. Realm's default location
        /// does not exist on Linux: give one of the two.
        ///
        /// ```swift
        /// let config = Realm.Configuration(fileURL: cacheURL.appendingPathComponent("app.realm"),
        ///                                  schemaVersion: 2, objectTypes: [User.self])
        /// ```
        public init(fileURL: URL?, inMemoryIdentifier: String? = nil, encryptionKey: Data? = nil,
                    readOnly: Bool = false, schemaVersion: UInt64 = 0, migrationBlock: MigrationBlock? = nil,
                    deleteRealmIfMigrationNeeded: Bool = false,
                    shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)? = nil,
                    objectTypes: [Object.Type]? = nil) {
            self.init(directory: fileURL, objectTypes: objectTypes ?? [], schemaVersion: schemaVersion,
                      migrationBlock: migrationBlock, inMemoryIdentifier: inMemoryIdentifier)
            self.encryptionKey = encryptionKey
            self.readOnly = readOnly
            self.deleteRealmIfMigrationNeeded = deleteRealmIfMigrationNeeded
            self.shouldCompactOnLaunch = shouldCompactOnLaunch
        }

        /// Realm Swift's in-memory form: `Configuration(inMemoryIdentifier: "test",
        /// objectTypes: [User.self])`, labels in Realm's order.
        public init(inMemoryIdentifier: String, encryptionKey: Data? = nil, readOnly: Bool = false,
                    schemaVersion: UInt64 = 0, migrationBlock: MigrationBlock? = nil,
                    deleteRealmIfMigrationNeeded: Bool = false, objectTypes: [Object.Type]? = nil) {
            self.init(fileURL: nil, inMemoryIdentifier: inMemoryIdentifier, encryptionKey: encryptionKey,
                      readOnly: readOnly, schemaVersion: schemaVersion, migrationBlock: migrationBlock,
                      deleteRealmIfMigrationNeeded: deleteRealmIfMigrationNeeded, objectTypes: objectTypes)
        }

        /// Realm Swift's name for the store's location: the same as ``directory``.
        public var fileURL: URL? {
            get { directory }
            set { directory = newValue }
        }

        /// The key that identifies the store: in-memory name or standardized directory path.
        var storeIdentity: String? {
            if let name = inMemoryIdentifier { return "memory:" + name }
            return directoryIdentity
        }

        private static func identity(of directory: URL?) -> String? {
            directory.map { "file:" + $0.standardizedFileURL.path }
        }
    }
}

/// Metatypes are immutable and safe to share.
struct ObjectTypeList: @unchecked Sendable {
    var types: [Object.Type]
}
