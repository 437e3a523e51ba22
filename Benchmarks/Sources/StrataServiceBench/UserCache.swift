// The seam between the HTTP routes and a store: the same service, the same routes, a Strata
// or a GRDB cache behind them.

import Foundation
import Hummingbird

/// A cache of users behind the service's routes. Every method is called from a request
/// handler's task; what it returns is plain, Sendable data (JSON bytes or a response body).
protocol UserCache: Sendable {
    /// "Strata" or "GRDB".
    static var name: String { get }
    /// The durability setting, for the report.
    static var durability: String { get }

    /// Opens (creating if needed) the cache in `directory`.
    init(directory: URL) throws

    /// Runs `body` (the service's whole life) with the store open, and closes it after.
    func withOpenStore<R>(_ body: () async throws -> R) async throws -> R

    /// Loads `users` in one transaction.
    func preload(_ users: [UserValue]) async throws

    /// `PUT /users/:id`: merges the JSON user into the cached one (keys left out keep their
    /// values), durably; returns the stored user as JSON. Throws `BadRequest` for bad input.
    func put(id: Int, body: ByteBuffer) async throws -> ByteBuffer

    /// `GET /users/:id`: the user as JSON, nil if absent.
    func user(id: Int) async throws -> ByteBuffer?

    /// `GET /users?city=&sort=&limit=`: a JSON array.
    func users(city: String, sort: UserSort, limit: Int) async throws -> ByteBuffer

    /// `GET /events`: NDJSON lines — first the city's top `limit` users as they are, then one
    /// line per change of the city's users — ending after `maxEvents` changes or `seconds`.
    func events(city: String, limit: Int, maxEvents: Int, seconds: Double) async throws -> ResponseBody

    /// The stored users with these ids, read back after the service stopped.
    func readBack(ids: [Int]) async throws -> [Int: UserValue]
}

/// The first line of an event stream.
struct SnapshotEvent: Encodable {
    var count: Int
    var top: [UserValue]
}

/// `source`'s elements, ending after `maxEvents` of them or `seconds`, whichever comes first
/// (and stopping `source` then).
func bounded<S: AsyncSequence & Sendable>(_ source: S, maxEvents: Int, seconds: Double) -> AsyncStream<S.Element>
where S.Element: Sendable {
    let (stream, continuation) = AsyncStream.makeStream(of: S.Element.self)
    let forward = Task {
        var seen = 0
        do {
            for try await element in source {
                continuation.yield(element)
                seen += 1
                if seen >= maxEvents { break }
            }
        } catch {}
        continuation.finish()
    }
    let timer = Task {
        try? await Task.sleep(for: .seconds(seconds))
        continuation.finish()
    }
    continuation.onTermination = { _ in
        forward.cancel()
        timer.cancel()
    }
    return stream
}

/// One NDJSON line.
func ndjsonLine(_ value: some Encodable) throws -> ByteBuffer {
    var data = try JSONCoding.encoder().encode(value)
    data.append(UInt8(ascii: "\n"))
    return ByteBuffer(bytes: data)
}
