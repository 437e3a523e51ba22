// Monitor: a mutex with a condition variable. The write gate (one writer at a time) and
// the group-commit coordinator wait on conditions, which Synchronization.Mutex lacks.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class Monitor: @unchecked Sendable {
    // Heap-allocated so their addresses never move.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a broadcast; the caller must hold the lock.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a broadcast or until `seconds` pass; the caller must hold the lock.
    func wait(seconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanos = Int(now.tv_nsec) + Int(seconds * 1e9)
        var deadline = timespec(tv_sec: now.tv_sec + nanos / 1_000_000_000, tv_nsec: nanos % 1_000_000_000)
        pthread_cond_timedwait(condition, mutex, &deadline)
    }

    func broadcast() { pthread_cond_broadcast(condition) }
}

/// Runs `body` on a new detached thread (the `.normal` durability syncer); false if none could start.
@discardableResult
func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box: @unchecked Sendable { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    let box = Unmanaged.passRetained(Box(body))
    #if canImport(Darwin)
    // Darwin: pthread_t is a pointer (created into an optional), the argument non-optional.
    var thread: pthread_t?
    let result = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
        box.body()
        return nil
    }, box.toOpaque())
    if result == 0 {
        if let thread { pthread_detach(thread) }
        return true
    }
    #else
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, box.toOpaque())
    if result == 0 {
        pthread_detach(thread)
        return true
    }
    #endif
    box.release()
    return false
}

/// A value behind a pthread mutex. Used instead of Synchronization.Mutex because
/// ThreadSanitizer understands pthread mutexes, so `make tsan` checks the engine's real
/// synchronisation rather than reporting false races. The object layer uses it too
/// (`package`), so there is one such type.
package final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let monitor = Monitor()

    package init(_ value: Value) { self.value = value }

    @inline(__always)
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        monitor.lock()
        defer { monitor.unlock() }
        return try body(&value)
    }
}
