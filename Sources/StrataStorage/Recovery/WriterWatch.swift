// WriterWatch: a following store's thread that refreshes it as soon as the writer in
// another process publishes a new durable state.
//
// Why a thread woken by the kernel: the writer rewrites `HEAD` after every sync, so a
// change of that file is exactly "something new is durable". On Linux, inotify wakes the
// thread when `HEAD` is written (a watch on the file itself), created (a new writer makes a
// new file: the watch on the directory, for names only, then watches the new file) or
// removed (the writer closed: its last commits are read up to where its clean-shutdown
// marker says the log ends). Not a modify-watch on the whole directory: every append to a
// segment would then queue an event in the writer's write path and wake this thread for
// nothing. And at most one refresh a millisecond: a commit after a quiet spell is read at
// once, a burst of commits (thousands a second) a millisecond's worth at a time — a refresh
// per commit cost a writer of single-record durable commits 15% of its rate on 2 cores.
// Elsewhere, or if inotify is unavailable, the thread polls every `pollInterval`. Either way it also refreshes every `pollInterval` at the latest, so a
// missed event costs latency, never a stale follower. Close wakes it through a pipe.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The background thread behind ``Store/watchWriter(pollInterval:_:)``.
final class WriterWatch: @unchecked Sendable {
    // @unchecked: the descriptors are set in init and closed in deinit; `stopped` is locked.
    private let stopped = Locked(false)
    /// A pipe: `stop()` writes a byte to the second, the thread polls the first.
    private var wakeDescriptors: [Int32] = [-1, -1]
    private var wakeDescriptor: Int32 { wakeDescriptors[0] }
    private var watchDescriptor: Int32 = -1
    /// The watch on `HEAD` itself (-1: none, the file is missing), re-added when it is created.
    private var headWatch: Int32 = -1
    private let headPath: String

    /// Starts watching the store at `path`; `refresh` is called on the thread after each
    /// change of `HEAD` (and at least every `pollInterval`) until ``stop()``.
    init(path: String, pollInterval: Double, refresh: @escaping @Sendable () -> Void) {
        headPath = path + "/" + Beacon.fileName
        #if os(Linux)
        watchDescriptor = inotify_init1(Int32(IN_CLOEXEC))
        if watchDescriptor >= 0,
           inotify_add_watch(watchDescriptor, path, UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE)) < 0 {
            close(watchDescriptor)
            watchDescriptor = -1
        }
        watchHead()
        if pipe(&wakeDescriptors) == 0 {
            for descriptor in wakeDescriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        } else {
            wakeDescriptors = [-1, -1]
        }
        #endif
        let watch = self
        _ = startThread { watch.run(pollInterval: pollInterval, refresh: refresh) }
    }

    /// Tells the thread to leave.
    func stop() {
        stopped.withLock { $0 = true }
        #if os(Linux)
        if wakeDescriptors[1] >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeDescriptors[1], &byte, 1)
        }
        #endif
    }

    deinit {
        // Only once the thread has left (it holds this object) and `stop()` returned (its
        // caller holds it): no descriptor is closed under a poll or a write.
        if watchDescriptor >= 0 { close(watchDescriptor) }
        for descriptor in wakeDescriptors where descriptor >= 0 { close(descriptor) }
    }

    /// The shortest time between two refreshes (seconds).
    static let minimumInterval = 0.001

    private func run(pollInterval: Double, refresh: @Sendable () -> Void) {
        // (Caller's value: anything not a number of seconds means the default.)
        let seconds = pollInterval.isFinite && pollInterval > 0 ? pollInterval : 0.5
        let timeout = Int32(max(1, min(60_000, seconds * 1000)))
        var buffer = [UInt8](repeating: 0, count: 4096)
        var lastRefresh = 0.0
        while !stopped.withLock({ $0 }) {
            if watchDescriptor >= 0 {
                var fds = [pollfd(fd: watchDescriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&fds, nfds_t(wakeDescriptor >= 0 ? 2 : 1), timeout)
                if stopped.withLock({ $0 }) { return }
                // Other files' events do not put off the poll's refresh for ever.
                if ready > 0, fds[0].revents & Int16(POLLIN) != 0, !headChanged(in: &buffer),
                   monotonicSeconds() - lastRefresh < seconds { continue }
            } else {
                usleep(UInt32(timeout) * 1000)
                if stopped.withLock({ $0 }) { return }
            }
            let wait = lastRefresh + WriterWatch.minimumInterval - monotonicSeconds()
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
            lastRefresh = monotonicSeconds()
            refresh()
        }
    }

    /// Watches `HEAD` for writes (a new writer's `HEAD` is a new file: called again when
    /// the directory says it was created).
    private func watchHead() {
        #if os(Linux)
        guard watchDescriptor >= 0 else { return }
        headWatch = inotify_add_watch(watchDescriptor, headPath, UInt32(IN_MODIFY))
        #endif
    }

    /// Drains the pending events; whether one of them is a write to `HEAD` or names it in
    /// the directory (other files' creations and removals wake the thread without a refresh).
    private func headChanged(in buffer: inout [UInt8]) -> Bool {
        #if os(Linux)
        let count = buffer.withUnsafeMutableBytes { read(watchDescriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return true }
        var offset = 0, written = false, named = false
        let headWatch = self.headWatch
        buffer.withUnsafeBytes { raw in
            let headerSize = MemoryLayout<inotify_event>.size
            while offset + headerSize <= count {
                let watch = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let nameLength = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let nameStart = offset + headerSize
                if watch == headWatch && headWatch >= 0 { written = true }
                // Events were lost (a HEAD created among them?): watch HEAD again and refresh.
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { named = true }
                if nameLength > 0, nameStart + nameLength <= count {
                    let name = raw[nameStart ..< nameStart + nameLength].prefix { $0 != 0 }
                    if name.elementsEqual(Beacon.fileName.utf8) { named = true }
                }
                offset = nameStart + nameLength
            }
        }
        if named { watchHead() }
        return written || named
        #else
        return true
        #endif
    }
}

extension Store {
    /// For a store following a writer in another process: refreshes it (``refresh()``) on
    /// a background thread whenever the writer publishes a newer durable state — woken by
    /// the kernel on Linux, at the latest every `pollInterval` seconds — and calls `onAdvance`
    /// with the new sequence after each refresh that read something. Runs until the store
    /// closes; one watch per store (a second call replaces the first). Does nothing for a
    /// store that follows no writer. A refresh that fails is retried at the next change.
    ///
    /// Realms opened read-only beside a writer use this already (their store is watched
    /// while they are open); call it for an engine store you follow yourself.
    public func watchWriter(pollInterval: Double = 0.5, _ onAdvance: @escaping @Sendable (UInt64) -> Void) {
        guard isFollowingAWriter else { return }
        let watch = WriterWatch(path: path, pollInterval: pollInterval) { [weak self] in
            guard let store = self, (try? store.refresh()) == true else { return }
            onAdvance(store.lastSequence)
        }
        writerWatch.withLock { current in
            current?.stop()
            current = watch
        }
    }
}
