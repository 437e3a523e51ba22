// Notification tokens and the per-realm observer registry.

import Foundation

/// Keeps an observation alive: hold it for as long as you want notifications. Calling
/// ``invalidate()`` (from any thread) or releasing the token stops them.
public final class NotificationToken: @unchecked Sendable {
    private let state = Locked<(valid: Bool, onInvalidate: (@Sendable () -> Void)?)>((true, nil))

    init() {}

    /// Whether notifications are still delivered.
    public var isValid: Bool { state.withLock { $0.valid } }

    /// Stops delivery; no callback runs after this returns on the observing thread.
    public func invalidate() {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.valid else { return nil }
            state.valid = false
            defer { state.onInvalidate = nil }
            return state.onInvalidate
        }
        action?()
    }

    func onInvalidate(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if !state.valid { return true }
            state.onInvalidate = action
            return false
        }
        if runNow { action() }
    }
}

/// Something that reacts when its realm advances.
protocol RealmObserver: AnyObject {
    /// Held weakly: the observation ends when its owner releases the token.
    var token: NotificationToken? { get }
    /// Brings the observer up to date; calls its block unless `silent`.
    func realmDidAdvance(_ realm: Realm, old: Snapshot, changes: CommitChanges?, silent: Bool)
}

/// The observers of one realm, called in registration order.
final class ObserverRegistry {
    private var observers: [any RealmObserver] = []
    private var silenced: Set<ObjectIdentifier> = []

    func add(_ observer: any RealmObserver) { observers.append(observer) }

    /// Whether no observer is registered (an advance then needs no change set).
    var isEmpty: Bool { observers.isEmpty }

    func removeAll() { observers.removeAll() }

    /// Runs `body` with the observers of `tokens` kept silent.
    func skipping(_ tokens: [NotificationToken], _ body: () -> Void) {
        silenced = Set(tokens.map(ObjectIdentifier.init))
        defer { silenced = [] }
        body()
    }

    func deliver(realm: Realm, old: Snapshot, changes: CommitChanges?) {
        observers.removeAll { !($0.token?.isValid ?? false) }
        for observer in observers {
            guard let token = observer.token, token.isValid else { continue }
            observer.realmDidAdvance(realm, old: old, changes: changes, silent: silenced.contains(ObjectIdentifier(token)))
        }
    }
}

/// Carries a value the caller promises to use on one thread at a time across a dispatch.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
}
