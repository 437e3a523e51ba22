// The Strata back end, written the way docs/server.md tells a server developer to: a realm
// opened inside each handler (confined to the request's task, valid across its awaits),
// writes through `asyncWrite` (returns once durable, never blocks the cooperative pool),
// JSON in and out through RealmCoder, and Sendable values (`FrozenResults`, change sets)
// for whatever leaves the request's task.

import Foundation
import Hummingbird
import NIOFoundationCompat
import Strata

struct StrataCache: UserCache {
    static let name = "Strata"
    static let durability = "StoreOptions.durability = .full (fdatasync per commit, shared by concurrent committers)"

    let configuration: Realm.Configuration

    init(directory: URL) {
        var configuration = Realm.Configuration(directory: directory)
        configuration.objectTypes = [User.self]
        configuration.storeOptions.durability = .full
        self.configuration = configuration
    }

    func withOpenStore<R>(_ body: () async throws -> R) async throws -> R {
        // The store stays open while any realm of it is alive; this one keeps it open for the
        // service's life, so a request's realm never pays for opening the files. It is never
        // used: releasing it at the end closes the store.
        let lifetime = try Realm(configuration: configuration)
        defer { lifetime.invalidate() }
        return try await body()
    }

    func preload(_ users: [UserValue]) async throws {
        let realm = try Realm(configuration: configuration)
        try await realm.asyncWrite {
            try realm.add(users.map(User.init(value:)), update: .all)
        }
    }

    func put(id: Int, body: ByteBuffer) async throws -> ByteBuffer {
        let json = Data(buffer: body)
        let realm = try Realm(configuration: configuration)
        do {
            let stored = try await realm.asyncWrite {
                // Decoding inside the write: the merge with the cached user and the commit are
                // one transaction, so concurrent PUTs of one user never lose each other's keys.
                let coder = RealmCoder(realm: realm)
                let user = try coder.decode(User.self, from: json)
                guard user.id == id else { throw BadRequest(description: "the body's id is not the path's \(id)") }
                return try coder.encode(user)
            }
            return ByteBuffer(data: stored)
        } catch let error as JSONMappingError {
            throw BadRequest(description: "\(error)")
        }
    }

    func user(id: Int) async throws -> ByteBuffer? {
        let realm = try Realm(configuration: configuration)
        guard let user = realm.object(ofType: User.self, forPrimaryKey: id) else { return nil }
        return ByteBuffer(data: try RealmCoder(realm: realm).encode(user))
    }

    func users(city: String, sort: UserSort, limit: Int) async throws -> ByteBuffer {
        let realm = try Realm(configuration: configuration)
        let results = Self.users(in: realm, city: city, sort: sort)
        return ByteBuffer(data: try RealmCoder(realm: realm).encodeArray(results.prefix(limit)))
    }

    static func users(in realm: Realm, city: String, sort: UserSort) -> Results<User> {
        let inCity = realm.objects(User.self).filter(#Predicate { $0.city == city })
        switch sort {
        case .rank: return inCity.sorted(by: \.rank, ascending: false)
        case .name: return inCity.sorted(by: \.name)
        }
    }

    func events(city: String, limit: Int, maxEvents: Int, seconds: Double) async throws -> ResponseBody {
        let realm = try Realm(configuration: configuration)
        let results = Self.users(in: realm, city: city, sort: .rank)
        // Both go into the response body's @Sendable writer: a frozen page and a stream of
        // Sendable change sets. The realm itself stays in this task.
        let page = results.frozen()
        let changes = bounded(results.changes.dropFirst(), maxEvents: maxEvents, seconds: seconds)
        return ResponseBody { writer in
            let top = page.prefix(limit).map(UserValue.init(frozen:))
            try await writer.write(ndjsonLine(SnapshotEvent(count: page.count, top: top)))
            for await change in changes {
                try await writer.write(ndjsonLine(ChangeEvent(change)))
            }
            try await writer.finish(nil)
        }
    }

    func readBack(ids: [Int]) async throws -> [Int: UserValue] {
        let realm = try Realm(configuration: configuration)
        var found: [Int: UserValue] = [:]
        for id in ids {
            if let user = realm.object(ofType: User.self, forPrimaryKey: id) { found[id] = UserValue(user) }
        }
        return found
    }
}

/// One change of the observed users, as an event line.
struct ChangeEvent: Encodable {
    var count: Int
    var deletions: [Int]
    var insertions: [Int]
    var modifications: [Int]

    init(_ change: CollectionChangeSet) {
        count = change.count
        deletions = change.deletions
        insertions = change.insertions
        modifications = change.modifications
    }
}

extension User {
    convenience init(value: UserValue) {
        self.init()
        id = value.id
        city = value.city
        name = value.name
        email = value.email
        rank = value.rank
        score = value.score
        updatedAt = value.updatedAt
    }
}

extension UserValue {
    init(_ user: User) {
        self.init(id: user.id, city: user.city, name: user.name, email: user.email, rank: user.rank,
                  score: user.score, updatedAt: user.updatedAt)
    }

    init(frozen user: Frozen<User>) {
        self.init(id: user.id, city: user.city, name: user.name, email: user.email, rank: user.rank,
                  score: user.score, updatedAt: user.updatedAt)
    }
}

/// For comparison only (`--backends strata-sync`): the Strata back end with a synchronous
/// `realm.write` in the PUT handler — what docs/server.md says not to do — which holds a
/// thread of the cooperative pool through the writer lock and the fdatasync.
struct StrataSyncWriteCache: UserCache {
    static let name = "Strata-sync"
    static let durability = StrataCache.durability

    let strata: StrataCache

    init(directory: URL) { strata = StrataCache(directory: directory) }

    func withOpenStore<R>(_ body: () async throws -> R) async throws -> R { try await strata.withOpenStore(body) }
    func preload(_ users: [UserValue]) async throws { try await strata.preload(users) }

    func put(id: Int, body: ByteBuffer) async throws -> ByteBuffer {
        let json = Data(buffer: body)
        let realm = try Realm(configuration: strata.configuration)
        do {
            let stored = try realm.write {
                let coder = RealmCoder(realm: realm)
                let user = try coder.decode(User.self, from: json)
                guard user.id == id else { throw BadRequest(description: "the body's id is not the path's \(id)") }
                return try coder.encode(user)
            }
            return ByteBuffer(data: stored)
        } catch let error as JSONMappingError {
            throw BadRequest(description: "\(error)")
        }
    }

    func user(id: Int) async throws -> ByteBuffer? { try await strata.user(id: id) }
    func users(city: String, sort: UserSort, limit: Int) async throws -> ByteBuffer {
        try await strata.users(city: city, sort: sort, limit: limit)
    }
    func events(city: String, limit: Int, maxEvents: Int, seconds: Double) async throws -> ResponseBody {
        try await strata.events(city: city, limit: limit, maxEvents: maxEvents, seconds: seconds)
    }
    func readBack(ids: [Int]) async throws -> [Int: UserValue] { try await strata.readBack(ids: ids) }
}
