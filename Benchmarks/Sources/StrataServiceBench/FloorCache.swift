// The floor: no store at all. Users in a dictionary, each answer encoded once and then
// served from memory, a PUT merged in memory (not durable). What it measures is what the
// service costs without any back end — Hummingbird, the sockets, the load driver — the
// ceiling every back end's rate sits under, so a ratio between two back ends can be read
// against what the floor leaves for them (`--backends floor,strata,grdb`).

import Foundation
import Hummingbird
import NIOFoundationCompat

struct FloorCache: UserCache {
    static let name = "floor"
    static let durability = "none: in memory, each answer encoded once"

    private final class State: @unchecked Sendable {
        let lock = NSLock()
        var users: [Int: UserValue] = [:]
        var encodedUsers: [Int: ByteBuffer] = [:]
        var lists: [String: ByteBuffer] = [:]
    }

    /// The state of each directory's "store", kept for the process, so the read-back after
    /// a run (a new instance for the same directory) finds the acknowledged writes.
    private final class Registry: @unchecked Sendable {
        let lock = NSLock()
        var states: [String: State] = [:]
    }

    private static let registry = Registry()

    private let state: State

    init(directory: URL) throws {
        let registry = Self.registry
        state = registry.lock.withLock {
            if let known = registry.states[directory.path] { return known }
            let made = State()
            registry.states[directory.path] = made
            return made
        }
    }

    func withOpenStore<R>(_ body: () async throws -> R) async throws -> R { try await body() }

    func preload(_ users: [UserValue]) async throws {
        state.lock.withLock {
            for user in users { state.users[user.id] = user }
        }
    }

    func put(id: Int, body: ByteBuffer) async throws -> ByteBuffer {
        let patch = try decodePatch(body, id: id)
        let stored = state.lock.withLock {
            let user = patch.merged(into: state.users[id], id: id)
            state.users[id] = user
            state.encodedUsers[id] = nil
            state.lists = [:]
            return user
        }
        return ByteBuffer(data: try JSONCoding.encoder().encode(stored))
    }

    func user(id: Int) async throws -> ByteBuffer? {
        if let known = state.lock.withLock({ state.encodedUsers[id] }) { return known }
        guard let user = state.lock.withLock({ state.users[id] }) else { return nil }
        let encoded = ByteBuffer(data: try JSONCoding.encoder().encode(user))
        state.lock.withLock { state.encodedUsers[id] = encoded }
        return encoded
    }

    func users(city: String, sort: UserSort, limit: Int) async throws -> ByteBuffer {
        let key = "\(city)|\(sort.rawValue)|\(limit)"
        if let known = state.lock.withLock({ state.lists[key] }) { return known }
        let users = state.lock.withLock { Array(state.users.values.filter { $0.city == city }) }
        let sorted = users.sorted { a, b in
            switch sort {
            case .rank: return a.rank != b.rank ? a.rank > b.rank : a.id < b.id
            case .name: return a.name != b.name ? a.name < b.name : a.id < b.id
            }
        }
        let encoded = ByteBuffer(data: try JSONCoding.encoder().encode(Array(sorted.prefix(limit))))
        state.lock.withLock { state.lists[key] = encoded }
        return encoded
    }

    func events(city: String, limit: Int, maxEvents: Int, seconds: Double) async throws -> ResponseBody {
        let users = state.lock.withLock { state.users.values.filter { $0.city == city } }
        let first = try ndjsonLine(SnapshotEvent(count: users.count, top: Array(users.prefix(limit))))
        return ResponseBody { writer in
            try await writer.write(first)
            try await writer.finish(nil)
        }
    }

    func readBack(ids: [Int]) async throws -> [Int: UserValue] {
        state.lock.withLock { ids.reduce(into: [:]) { found, id in found[id] = state.users[id] } }
    }
}
