// Realm.asyncOpen and Realm.open: Realm Swift's callback and async forms of opening a realm
// off the caller's thread. The store is opened (and migrated, the slow part) in the
// background; the realm handed back is then made where the caller runs, confined there.

import Foundation

extension Realm {
    /// Opens the store of `configuration` in the background, then calls `callback` on
    /// `callbackQueue` with a realm confined to it (the main queue: the main thread), or the
    /// error (Realm Swift's `asyncOpen`).
    ///
    /// ```swift
    /// Realm.asyncOpen(configuration: config, callbackQueue: queue) { result in
    ///     guard case .success(let realm) = result else { return }
    ///     print(realm.objects(User.self).count)
    /// }
    /// ```
    @discardableResult
    public static func asyncOpen(configuration: Realm.Configuration = .defaultConfiguration, callbackQueue: DispatchQueue = .main,
                                 callback: @escaping (Result<Realm, any Swift.Error>) -> Void) -> AsyncOpenTask {
        let task = AsyncOpenTask()
        let deliver = UncheckedSendable(value: callback)
        DispatchQueue.global(qos: .userInitiated).async {
            // Opening once here does the store's work (recovery, migration); the realm made
            // on the callback queue then shares the open store.
            let opening: UncheckedSendable<Realm?>, failure: (any Swift.Error)?
            do {
                opening = UncheckedSendable(value: try Realm(configuration: configuration))
                failure = nil
            } catch {
                opening = UncheckedSendable(value: nil)
                failure = error
            }
            callbackQueue.async {
                guard !task.isCancelled else { return }
                if let failure { return deliver.value(.failure(failure)) }
                let result = Result { () throws -> Realm in
                    callbackQueue === DispatchQueue.main
                        ? try Realm(configuration: configuration)
                        : try Realm(configuration: configuration, queue: callbackQueue)
                }
                withExtendedLifetime(opening) { deliver.value(result) }
            }
        }
        return task
    }

    /// Opens the store of `configuration` off the caller's actor or thread (recovery and a
    /// migration can take a while), then returns a realm confined to the caller, as
    /// ``init(configuration:isolation:)`` does (Realm Swift's `Realm.open`):
    ///
    /// ```swift
    /// @MainActor func load() async throws {
    ///     let realm = try await Realm.open(configuration: config)   // the main actor's realm
    /// }
    /// ```
    ///
    /// - Throws: as ``init(configuration:isolation:)``.
    public static func open(configuration: Realm.Configuration = .defaultConfiguration,
                            isolation: isolated (any Actor)? = #isolation) async throws -> Realm {
        // Opened once in the background, kept open until the caller's realm shares it.
        let opening = try await Task.detached(priority: .userInitiated) {
            UncheckedSendable(value: try Realm(configuration: configuration, isolation: nil))
        }.value
        return try withExtendedLifetime(opening) { try Realm(configuration: configuration, isolation: isolation) }
    }
}

/// An `asyncOpen` in progress; ``cancel()`` keeps its callback from being called.
public final class AsyncOpenTask: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false

    var isCancelled: Bool { lock.withLock { cancelled } }

    /// Stops the open: the callback is not called (a store already opened stays open for
    /// the other realms of the process, or closes with the last).
    public func cancel() { lock.withLock { cancelled = true } }
}
