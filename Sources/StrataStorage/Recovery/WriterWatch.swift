// WriterWatch: a following store's thread that refreshes it as soon as the writer in
// another process publishes a new durable state.
//
// Why a thread woken by the kernel: the writer rewrites `HEAD` after every sync, so a
// change of that file is exactly "something new is durable". On Linux, inotify on the
// store's directory wakes the thread when `HEAD` is written, created (a new writer makes a
// new file) or removed (the writer closed: its last commits are read up to where its
// clean-shutdown marker says the log ends); elsewhere, or if inotify is unavailable, the thread polls every
// `pollInterval`. Either way it also refreshes every `pollInterval` at the latest, so a
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

    /// Starts watching the store at `path`; `refresh` is called on the thread after each
    /// change of `HEAD` (and at least every `pollInterval`) until ``stop()``.
    init(path: String, pollInterval: Double, refresh: @escaping @Sendable () -> Void) {
        #if os(Linux)
        watchDescriptor = inotify_init1(Int32(IN_CLOEXEC))
        if watchDescriptor >= 0,
           inotify_add_watch(watchDescriptor, path, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE)) < 0 {
            close(watchDescriptor)
            watchDescriptor = -1
        }
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

    private func run(pollInterval: Double, refresh: @Sendable () -> Void) {
        // (Caller's value: anything not a number of seconds means the default.)
        let seconds = pollInterval.isFinite && pollInterval > 0 ? pollInterval : 0.5
        let timeout = Int32(max(1, min(60_000, seconds * 1000)))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopped.withLock({ $0 }) {
            if watchDescriptor >= 0 {
                var fds = [pollfd(fd: watchDescriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&fds, nfds_t(wakeDescriptor >= 0 ? 2 : 1), timeout)
                if stopped.withLock({ $0 }) { return }
                if ready > 0, fds[0].revents & Int16(POLLIN) != 0, !headChanged(in: &buffer) { continue }
            } else {
                usleep(UInt32(timeout) * 1000)
                if stopped.withLock({ $0 }) { return }
            }
            refresh()
        }
    }

    /// Drains the pending events; whether one of them names `HEAD` (the segments' own
    /// appends, also in this directory, wake the thread without a refresh).
    private func headChanged(in buffer: inout [UInt8]) -> Bool {
        #if os(Linux)
        let count = buffer.withUnsafeMutableBytes { read(watchDescriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return true }
        var offset = 0, found = false
        buffer.withUnsafeBytes { raw in
            let headerSize = MemoryLayout<inotify_event>.size
            while offset + headerSize <= count {
                let nameLength = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let nameStart = offset + headerSize
                if nameLength > 0, nameStart + nameLength <= count {
                    let name = raw[nameStart ..< nameStart + nameLength].prefix { $0 != 0 }
                    if name.elementsEqual(Beacon.fileName.utf8) { found = true }
                }
                offset = nameStart + nameLength
            }
        }
        return found
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
