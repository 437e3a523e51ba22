// The store behind the studio. Read-only (the default): one read-only store kept open
// and refreshed for each request, reading only the log written since (`Store.refresh()`),
// whether a writer (a service, an app) holds the store or not — a read-only open follows
// the writers and never keeps one out. Only a store a crashed writer left (no clean
// marker) is opened for each request and closed after it, as it lies (that open holds the
// store's lock while it reads; a writer's open, which would repair the store, waits for
// it). Either way every request sees the newest durable commits. Writable (`--writable`):
// the studio holds the store open for writing (other writers wait or are refused) and
// reads a new snapshot per request.

import Foundation
import Strata

/// One compaction the studio ran, for the stats page's history.
public struct CompactionRecord: Sendable {
    public var date: Date
    public var report: CompactionReport
}

/// A failure the studio shows as a page (and the executable as one line on stderr).
public struct StudioFailure: Error, CustomStringConvertible, Sendable {
    public var status: HTTPStatus
    public var message: String
    public var description: String { message }

    public enum HTTPStatus: Int, Sendable {
        case badRequest = 400, forbidden = 403, notFound = 404, methodNotAllowed = 405, unavailable = 503, serverError = 500
    }

    public init(_ status: HTTPStatus, _ message: String) {
        self.status = status
        self.message = message
    }
}

public final class StudioStore: @unchecked Sendable {
    public let path: String
    public let writable: Bool
    /// The key of an encrypted store, used for every open.
    private let encryptionKey: Data?
    private let lock = NSLock()
    private var writer: Store?
    /// Read-only: the store kept open and refreshed per request (it follows the writers).
    private var follower: Store?
    private var history: [CompactionRecord] = []

    /// Opens the store once to check that it can be read (and, writable, keeps it open).
    /// - Throws: ``StudioFailure`` saying why it cannot be opened (absent, locked by a writer, damaged).
    /// - Parameter encryptionKey: the key of an encrypted store (``StoreOptions/encryptionKey``).
    public init(path: String, writable: Bool, encryptionKey: Data? = nil) throws {
        self.path = path
        self.writable = writable
        self.encryptionKey = encryptionKey
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StudioFailure(.notFound, "no store at \(path) (not a directory)")
        }
        if writable {
            writer = try open(readOnly: false)
        } else {
            try open(readOnly: true).close()
        }
    }

    private func open(readOnly: Bool) throws -> Store {
        var options = StoreOptions()
        options.encryptionKey = encryptionKey
        options.readOnly = readOnly
        options.autoCompaction = .disabled
        do {
            return try Store(path: path, options: options)
        } catch let error as StoreError {
            if case .locked = error {
                throw StudioFailure(.unavailable, "\(error)")
            }
            throw StudioFailure(.serverError, "cannot open the store at \(path): \(error)")
        }
    }

    /// Runs `body` on the store as it is now (one request's view).
    public func read<T>(_ body: (Store) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if let writer { return try body(writer) }
        if let follower {
            if (try? follower.refresh()) != nil { return try body(follower) }
            // A log that does not read now: open the store again for this request.
            try? follower.close()
            self.follower = nil
        }
        let store = try open(readOnly: true)
        if store.isFollowingAWriter {
            follower = store
            return try body(store)
        }
        defer { try? store.close() }
        return try body(store)
    }

    /// Whether the studio reads through one store kept open and refreshed per request,
    /// following the writers (as of the last request); false for a store a crashed writer
    /// left, opened per request.
    public var isFollowingAWriter: Bool {
        lock.lock()
        defer { lock.unlock() }
        return follower != nil
    }

    /// Runs `body` with an inspector of the store's objects (nil: the store has no object schema).
    public func inspect<T>(_ body: (StoreInspector?) throws -> T) throws -> T {
        try read { store in try body(try StoreInspector(store: store)) }
    }

    /// Compacts the store (writable mode only) and remembers the report.
    public func compact() throws -> CompactionReport {
        lock.lock()
        defer { lock.unlock() }
        guard let writer else { throw StudioFailure(.forbidden, "the studio is read-only: start it with --writable to compact") }
        let report = try writer.compact()
        history.append(CompactionRecord(date: Date(), report: report))
        return report
    }

    /// The compactions this studio ran, oldest first.
    public var compactions: [CompactionRecord] {
        lock.lock()
        defer { lock.unlock() }
        return history
    }

    /// A token that changes whenever the store's files change (a commit, a compaction),
    /// read from the directory without opening the store or taking its lock.
    public func fingerprint() -> String {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
        var hasher = Hasher()
        var text = ""
        for name in names where name != "LOCK" {
            var info = stat()
            guard stat(path + "/" + name, &info) == 0 else { continue }
            text += "\(name):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec);"
        }
        hasher.combine(text)
        // Hasher is seeded per process; the digest below is stable for one server's life.
        return String(UInt64(bitPattern: Int64(hasher.finalize())), radix: 16)
    }

    /// Closes the writable store, or the one following a writer.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        try? writer?.close()
        writer = nil
        try? follower?.close()
        follower = nil
    }
}
