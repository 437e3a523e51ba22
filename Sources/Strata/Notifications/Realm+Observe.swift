// Realm-level notifications: one callback after each commit the realm sees.

extension Realm {
    /// What a realm observer is told.
    public enum Notification: Sendable {
        /// The realm advanced to a newer commit (its own or another thread's).
        case didChange
        /// Reserved: a realm that does not advance by itself has newer data to read.
        case refreshRequired
    }

    /// Calls `block` after every commit this realm advances over (on ``refresh()``, at the
    /// start of a write, after its own commits, and — queue-confined — when others commit).
    public func observe(_ block: @escaping (_ notification: Notification, _ realm: Realm) -> Void) -> NotificationToken {
        verifyThread()
        precondition(writeState == nil, "Cannot register notification blocks from within write transactions.")
        let token = NotificationToken()
        observers.add(RealmLevelObserver(token: token, block: block))
        return token
    }
}

final class RealmLevelObserver: RealmObserver {
    private(set) weak var token: NotificationToken?
    let block: (Realm.Notification, Realm) -> Void

    init(token: NotificationToken, block: @escaping (Realm.Notification, Realm) -> Void) {
        self.token = token
        self.block = block
    }

    func realmDidAdvance(_ realm: Realm, old: Snapshot, changes: CommitChanges?, silent: Bool) {
        if !silent { block(.didChange, realm) }
    }
}
