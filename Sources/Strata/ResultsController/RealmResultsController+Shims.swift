// RealmResultsController's Realm and Object extensions, so ported code compiles unchanged:
// addNotified / createNotified / deleteNotified (plain add / create / delete: Strata sees
// every committed change without them), notifyChange() (a no-op), objectIdentifier()
// ("ClassName-primaryKey") and NotificationCenter posts under that name after each commit
// that changes such an object. Only identifiers that were asked for are watched, so commits
// of a store nobody watches pay nothing.

import Foundation

extension Realm {
    /// RealmResultsController's `addNotified`: `add(_:update:)`, callable inside a write
    /// without `try`, as the seed's examples call it:
    ///
    /// ```swift
    /// try realm.write { realm.addNotified(task, update: true) }
    /// ```
    ///
    /// `update: true` is ``UpdatePolicy/all`` (what Realm's Boolean `update:` meant), `false`
    /// is ``UpdatePolicy/error``. The change needs no announcing: results controllers,
    /// observers and ``Object/objectIdentifier()`` posts see every commit.
    ///
    /// Like the seed (where Realm raised an exception) the call returns nothing, so a failure
    /// — no write transaction, a duplicate primary key with `update: false`, an object of
    /// another realm — stops the program with a message naming the call and the error. Call
    /// `try add(_:update:)` to handle errors instead.
    public func addNotified(_ object: Object, update: Bool = false) {
        Self.watchForIdentifiers(self)
        do {
            try add(object, update: update ? .all : .error)
        } catch {
            fatalError("Realm.addNotified(_:update:) of \(type(of: object).className): \(error) (use try realm.add(_:update:) to handle it)")
        }
    }

    /// RealmResultsController's `addNotified` for a sequence: `add(_:update:)` without
    /// `try` (see `addNotified(_:update:)` for `update` and failures).
    public func addNotified<S: Sequence>(_ objects: S, update: Bool = false) where S.Element: Object {
        Self.watchForIdentifiers(self)
        do {
            try add(objects, update: update ? .all : .error)
        } catch {
            fatalError("Realm.addNotified(_:update:) of a sequence of \(S.Element.className): \(error) (use try realm.add(_:update:) to handle it)")
        }
    }

    /// RealmResultsController's `createNotified`: ``create(_:value:update:)`` without `try`,
    /// returning nil when it fails (nothing is created then), as the seed's `-> T?` does.
    /// `update: true` is ``UpdatePolicy/all``. Unlike the seed, a type without a primary key
    /// is created too (the seed returned nil for it without creating anything).
    @discardableResult
    public func createNotified<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: Bool = false) -> T? {
        Self.watchForIdentifiers(self)
        return try? create(type, value: value, update: update ? .all : .error)
    }

    /// RealmResultsController's `deleteNotified`: `delete(_:)` without `try`.
    /// A failure (no write transaction, an unmanaged or deleted object) stops the program
    /// with a message, as Realm's exception did; call `try delete(_:)` to handle it.
    public func deleteNotified(_ object: Object) {
        Self.watchForIdentifiers(self)
        do {
            try delete(object)
        } catch {
            fatalError("Realm.deleteNotified(_:) of \(type(of: object).className): \(error) (use try realm.delete(_:) to handle it)")
        }
    }

    /// RealmResultsController's `deleteNotified` for a sequence: `delete(_:)` without
    /// `try` (failures as in `deleteNotified(_:)`).
    public func deleteNotified<S: Sequence>(_ objects: S) where S.Element: Object {
        Self.watchForIdentifiers(self)
        do {
            try delete(objects)
        } catch {
            fatalError("Realm.deleteNotified(_:) of a sequence of \(S.Element.className): \(error) (use try realm.delete(_:) to handle it)")
        }
    }

    /// Makes sure commits to this realm's store post the notifications of watched identifiers.
    static func watchForIdentifiers(_ realm: Realm) {
        IdentifierWatch.install(on: realm.shared)
    }
}

extension Object {
    /// RealmResultsController's `notifyChange()`: does nothing. The seed needed it because
    /// its controller could not see changes to single objects inside a write; Strata sees
    /// every committed change (results controllers, observers and ``objectIdentifier()``
    /// posts included), so `task.name = "x"; task.notifyChange()` behaves as
    /// `task.name = "x"`.
    public func notifyChange() {
        if let realm { Realm.watchForIdentifiers(realm) }
    }

    /// RealmResultsController's `objectIdentifier()`: `"ClassName-PrimaryKeyValue"`
    /// (`"TaskModel-7"`, `"User-ada"`; a UUID key in its usual text form), the name under which
    /// `NotificationCenter.default` posts after every commit that inserts, modifies or deletes
    /// the object:
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: Notification.Name(task.objectIdentifier()),
    ///                                        object: nil, queue: nil) { note in
    ///     let change = note.userInfo?[RealmResultsChangeType.userInfoKey] as? RealmResultsChangeType
    /// }
    /// ```
    ///
    /// The notification has no object; its `userInfo` holds the change under
    /// ``RealmResultsChangeType/userInfoKey``: `.insert`, `.update` or `.delete`. It is posted
    /// after the commit is visible, on the committing thread (or task), once per commit that
    /// changes the object — any realm of the process committing to the same store, changes
    /// made through relationships included. Use a `queue:` in `addObserver` to receive it
    /// elsewhere. Nothing is posted for commits that leave the object alone.
    ///
    /// Only objects whose identifier was asked for are watched (so other commits pay
    /// nothing), from then on and for the life of the process. Asking on a managed object
    /// watches its store at once; an identifier asked for while the object is unmanaged is
    /// watched in every store that a managed object's identifier or one of the `…Notified`
    /// calls (or ``notifyChange()``) has been used with — as in the seed, where only changes
    /// made through its methods were announced.
    ///
    /// A type without a primary key is named by the hidden object id of a managed object
    /// (`"Note-17"`); an unmanaged object of such a type has no identity yet, its identifier
    /// is `"Note-unmanaged"` and nothing is ever posted under it.
    public func objectIdentifier() -> String {
        let className = Self.className
        let key: PrimaryKeyValue?
        if let state = _state {
            key = state.primaryKey
        } else if let index = ObjectType.info(for: type(of: self)).primaryKeyIndex {
            key = unmanagedField(index).flatMap(PrimaryKeyValue.init(field:))
        } else {
            key = nil
        }
        guard let key else { return "\(className)-unmanaged" }
        let identifier = "\(className)-\(key.anyValue)"
        IdentifierWatch.watch(identifier, className: _state?.bound.className ?? className, key: _state?.key ?? key.keyBytes)
        if let realm { Realm.watchForIdentifiers(realm) }
        return identifier
    }
}

extension RealmResultsChangeType {
    /// The `userInfo` key of an ``Object/objectIdentifier()`` notification: the change
    /// (`.insert`, `.update` or `.delete`).
    public static let userInfoKey = "changeType"
}

/// Watches the stores whose commits may change objects whose identifiers were asked for,
/// and posts their notifications. One watcher per store, registered as a commit listener
/// (called by every commit on the committing thread once the commit is visible).
final class IdentifierWatch: CommitListener, @unchecked Sendable {
    /// Watched identifiers by class name, then by engine key (a process-wide registry, as
    /// notification names are process-wide).
    private static let watched = Locked<[String: [ObjectKey: String]]>([:])
    /// Each store's watcher, kept alive here (a store holds its listeners weakly).
    private static let watchers = Locked<[ObjectIdentifier: IdentifierWatch]>([:])

    private weak var store: SharedStore?
    /// Table numbers to class names, read from the store's schema once per table.
    private let classNames = Locked<[UInt32: String]>([:])

    private init(store: SharedStore) {
        self.store = store
    }

    static func watch(_ identifier: String, className: String, key: [UInt8]) {
        watched.withLock { $0[className, default: [:]][ObjectKey(key)] = identifier }
    }

    /// Listens to `store`'s commits, once.
    static func install(on store: SharedStore) {
        let id = ObjectIdentifier(store)
        let added: IdentifierWatch? = watchers.withLock { watchers in
            if let existing = watchers[id], existing.store === store { return nil }
            // A closed store's watcher goes (its address may be reused by a new store).
            watchers = watchers.filter { $0.value.store != nil }
            let watcher = IdentifierWatch(store: store)
            watchers[id] = watcher
            return watcher
        }
        if let added { store.addListener(added) }
    }

    func storeDidCommit(sequence: UInt64) {
        let watched = Self.watched.withLock { $0 }
        guard !watched.isEmpty, let store, sequence > 0,
              let changes = store.log.changes(after: sequence - 1, through: sequence) else { return }
        var posts: [(identifier: String, change: RealmResultsChangeType)] = []
        for (table, tableChanges) in changes.tables where !tableChanges.isEmpty {
            guard let className = className(of: table, in: store), let keys = watched[className] else { continue }
            // Whichever side is smaller is walked: the watched keys or the changed ones.
            if keys.count <= tableChanges.count {
                for (key, identifier) in keys {
                    if tableChanges.deleted.contains(key) {
                        posts.append((identifier, .delete))
                    } else if tableChanges.inserted.contains(key) {
                        posts.append((identifier, .insert))
                    } else if tableChanges.modified[key] != nil {
                        posts.append((identifier, .update))
                    }
                }
            } else {
                for key in tableChanges.deleted { if let identifier = keys[key] { posts.append((identifier, .delete)) } }
                for key in tableChanges.inserted where !tableChanges.deleted.contains(key) {
                    if let identifier = keys[key] { posts.append((identifier, .insert)) }
                }
                for key in tableChanges.modified.keys where !tableChanges.deleted.contains(key) && !tableChanges.inserted.contains(key) {
                    if let identifier = keys[key] { posts.append((identifier, .update)) }
                }
            }
        }
        for post in posts.sorted(by: { $0.identifier < $1.identifier }) {
            NotificationCenter.default.post(name: Notification.Name(post.identifier), object: nil,
                                            userInfo: [RealmResultsChangeType.userInfoKey: post.change])
        }
    }

    private func className(of table: UInt32, in store: SharedStore) -> String? {
        if let known = classNames.withLock({ $0[table] }) { return known }
        guard let name = store.schema.objectSchemas.first(where: { StoreLayout.objectTable($0.tableNumber) == table })?.className else {
            return nil
        }
        classNames.withLock { $0[table] = name }
        return name
    }
}

extension RealmResultsController where T == U {
    /// The seed's special form without mapper or filter, sectioned by a property named by a
    /// string: `RealmResultsController<TaskModel, TaskModel>(request: request, sectionKeyPath:
    /// "projectID")`. Its objects are unmanaged copies (`deepCopy()`), free to use on any thread.
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` when `sectionKeyPath` does not name a stored
    ///   property of `T`; what the mapper form throws.
    public convenience init(request: RealmRequest<T>, sectionKeyPath: String) throws {
        try self.init(request: request, sectionKeyPath: sectionKeyPath, mapper: { $0.deepCopy() }, filter: nil)
    }
}
