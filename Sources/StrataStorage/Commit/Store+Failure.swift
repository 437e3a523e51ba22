// Whether the store stopped taking writes after a failed sync (see Store+Sync.swift): what
// the object layer asks to fall back to the last durable state.

extension Store {
    /// Whether a sync failed and the store takes no more writes (until reopened). Readers
    /// still read the last durable commit, which ``snapshot()`` gives.
    package var hasFailed: Bool { syncMonitor.withLock { failure != nil } }
}
