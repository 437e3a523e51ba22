// Realm Swift's helpers for a realm's files: the stored schema version, deleting a
// realm's files, and running a migration ahead of use. A Strata store is a directory;
// `fileURL` names it (Configuration.fileURL).

import Foundation
import StrataStorage

/// The schema version stored at `fileURL` (Realm Swift's `schemaVersionAtURL`), read from
/// the store open in this process, or from the directory (opened read-only and closed).
///
/// - Throws: ``RealmError/storage(_:)`` when there is no store there, it is damaged or the
///   key is wrong; ``RealmError/invalidSchema(_:)`` when it holds no schema.
public func schemaVersionAtURL(_ fileURL: URL, encryptionKey: Data? = nil) throws -> UInt64 {
    var configuration = Realm.Configuration(fileURL: fileURL, encryptionKey: encryptionKey)
    configuration.readOnly = true
    if let identity = configuration.storeIdentity, let shared = SharedStore.open(identity: identity) {
        return shared.schema.version
    }
    guard FileManager.default.fileExists(atPath: fileURL.path) else {
        throw RealmError.storage(.io(op: "open", path: fileURL.path, errno: ENOENT))
    }
    var options = StoreOptions()
    options.readOnly = true
    options.encryptionKey = encryptionKey
    let store: Store
    do {
        store = try Store(directory: fileURL, options: options)
    } catch {
        throw RealmError.wrap(error)
    }
    defer { try? store.close() }
    guard let schema = try SharedStore.loadSchema(store) else {
        throw RealmError.invalidSchema("the store in \(fileURL.path) holds no schema (no realm was opened on it)")
    }
    return schema.version
}

extension Realm {
    /// Deletes the store of `configuration` (Realm Swift's `deleteFiles(for:)`): true when
    /// there was one. An in-memory configuration has no files (false).
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` while a realm of it is open in this process
    ///   (invalidate or release them first); ``RealmError/storage(_:)`` when removing fails.
    @discardableResult
    public static func deleteFiles(for configuration: Realm.Configuration) throws -> Bool {
        guard configuration.inMemoryIdentifier == nil, let directory = configuration.directory,
              let identity = configuration.storeIdentity else { return false }
        if SharedStore.open(identity: identity) != nil {
            throw RealmError.invalidValue("cannot delete \(directory.path) while a realm of it is open in this process")
        }
        guard FileManager.default.fileExists(atPath: directory.path) else { return false }
        do {
            try FileManager.default.removeItem(at: directory)
        } catch {
            throw RealmError.storage(.io(op: "remove", path: directory.path, errno: (error as NSError).code == NSFileNoSuchFileError ? ENOENT : EIO))
        }
        return true
    }

    /// Opens the store of `configuration` and runs its migration now, if the schema needs
    /// one (Realm Swift's `performMigration(for:)`), then closes it again unless a realm of
    /// it is open.
    ///
    /// - Throws: as ``init(configuration:isolation:)``.
    public static func performMigration(for configuration: Realm.Configuration = .defaultConfiguration) throws {
        _ = try SharedStore.open(configuration).0.release()
    }
}

extension Realm {
    /// Writes a compacted copy of the realm, as this realm reads it now, to a new store at
    /// `fileURL` (Realm Swift's `writeCopy(toFile:encryptionKey:)`), encrypted with
    /// `encryptionKey` or not at all: open it with a configuration whose `fileURL` is that
    /// location. Other realms may go on writing meanwhile; the copy holds this realm's
    /// snapshot.
    ///
    /// ```swift
    /// try realm.writeCopy(toFile: backups.appendingPathComponent("cache-2026-11-28.realm"))
    /// ```
    ///
    /// - Throws: ``RealmError/alreadyInWriteTransaction`` inside a write (its changes are
    ///   not committed); ``RealmError/storage(_:)`` when something is already at `fileURL`
    ///   (`invalidArgument`), a stored record is damaged (the copy stops rather than come
    ///   out short) or writing fails.
    public func writeCopy(toFile fileURL: URL, encryptionKey: Data? = nil) throws {
        var destination = configuration
        destination.fileURL = fileURL
        destination.inMemoryIdentifier = nil
        destination.encryptionKey = encryptionKey
        try writeCopy(configuration: destination)
    }

    /// Writes a compacted copy of the realm to the store `configuration` names (its
    /// `fileURL`, `encryptionKey` and store options); see ``writeCopy(toFile:encryptionKey:)``.
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` for a configuration without a `fileURL`; as
    ///   ``writeCopy(toFile:encryptionKey:)``.
    public func writeCopy(configuration: Realm.Configuration) throws {
        try checkThread()
        if writeState != nil { throw RealmError.alreadyInWriteTransaction }
        guard configuration.inMemoryIdentifier == nil, let directory = configuration.directory else {
            throw RealmError.invalidValue("writeCopy needs a configuration with a fileURL (an in-memory realm has no files to write)")
        }
        var options = configuration.storeOptions
        options.readOnly = false
        do {
            _ = try snapshot.writeCopy(into: directory, options: options)
        } catch {
            throw RealmError.wrap(error)
        }
    }
}
