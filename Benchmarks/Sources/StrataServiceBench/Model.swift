// The service's model — a user as a REST cache keeps it — once per back end, and the plain
// Sendable value both back ends hand out when data leaves the store.

import Foundation
import GRDB
import Strata
import Hummingbird
import NIOFoundationCompat

/// The Strata model.
final class User: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var city: String = ""
    @Persisted var name: String = ""
    @Persisted var email: String = ""
    @Persisted var rank: Int = 0
    @Persisted var score: Double = 0
    @Persisted var updatedAt: Date? = nil
}

/// A user as plain data: the JSON the service speaks, the GRDB record, and what leaves a
/// back end (it is Sendable).
struct UserValue: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "user"

    var id: Int
    var city: String
    var name: String
    var email: String
    var rank: Int
    var score: Double
    var updatedAt: Date?

    enum Columns {
        static let id = Column(CodingKeys.id)
        static let city = Column(CodingKeys.city)
        static let name = Column(CodingKeys.name)
        static let rank = Column(CodingKeys.rank)
    }
}

/// The PUT body of `PUT /users/:id` as a patch, or `BadRequest` naming what is wrong (bad
/// JSON, or an id other than the path's).
func decodePatch(_ body: ByteBuffer, id: Int) throws -> UserPatch {
    let patch: UserPatch
    do {
        patch = try JSONCoding.decoder().decode(UserPatch.self, from: Data(buffer: body))
    } catch {
        throw BadRequest(description: "\(error)")
    }
    guard patch.id == nil || patch.id == id else { throw BadRequest(description: "the body's id is not the path's \(id)") }
    return patch
}

/// A PUT body for the GRDB back end: every key optional, and `updatedAt` told apart as
/// absent (keep) or null (clear). Strata's RealmCoder does this merge itself.
struct UserPatch: Decodable {
    var id: Int?
    var city: String?
    var name: String?
    var email: String?
    var rank: Int?
    var score: Double?
    var updatedAt: Date??

    enum CodingKeys: String, CodingKey { case id, city, name, email, rank, score, updatedAt }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(Int.self, forKey: .id)
        city = try c.decodeIfPresent(String.self, forKey: .city)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        email = try c.decodeIfPresent(String.self, forKey: .email)
        rank = try c.decodeIfPresent(Int.self, forKey: .rank)
        score = try c.decodeIfPresent(Double.self, forKey: .score)
        if c.contains(.updatedAt) {
            updatedAt = .some(try c.decodeNil(forKey: .updatedAt) ? nil : try c.decode(Date.self, forKey: .updatedAt))
        }
    }

    /// The stored user with this patch applied (a new user when there is none yet).
    func merged(into old: UserValue?, id: Int) -> UserValue {
        var user = old ?? UserValue(id: id, city: "", name: "", email: "", rank: 0, score: 0, updatedAt: nil)
        if let city { user.city = city }
        if let name { user.name = name }
        if let email { user.email = email }
        if let rank { user.rank = rank }
        if let score { user.score = score }
        if let updatedAt { user.updatedAt = updatedAt }
        return user
    }
}

/// The sort keys `GET /users?sort=` accepts.
enum UserSort: String, Sendable {
    case rank, name
}

/// The pre-loaded data set: the same users, in the same order, for both back ends.
enum Dataset {
    static let cities = 50

    static func city(_ i: Int) -> String { "city\(i % cities)" }

    static func user(_ i: Int) -> UserValue {
        var rng = UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15
        rng ^= rng >> 29
        return UserValue(id: i, city: city(i), name: "User \(String(rng % 1_000_000, radix: 36)) \(i)",
                         email: "user\(i)@example.com", rank: Int(rng % 1000), score: Double(rng % 10_000) / 100,
                         updatedAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(i)))
    }
}

/// JSON as both back ends write dates: ISO-8601, whole seconds.
enum JSONCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

/// A request the service refuses (mapped to 400).
struct BadRequest: Error, CustomStringConvertible {
    var description: String
}
