// Models shared by the object-layer tests: docs/API.md §2's User with everything it links to.

import Strata

enum Kind: Int, PersistableEnum, Codable, Sendable {
    case free, pro, enterprise
}

final class Car: Object {
    @Persisted(primaryKey: true) var vin: String = ""
    @Persisted var model: String = ""
    @Persisted var year: Int = 0
}

final class Phone: Object {
    @Persisted var number: String = ""
    @Persisted var label: String = "home"
}

final class User: Object {
    @Persisted(primaryKey: true) var objId: String = ""
    @Persisted var username: String = ""
    @Persisted var firstName: String = ""
    @Persisted var lastName: String = ""
    @Persisted var rank: Int = -1
    @Persisted var score: Double = 0
    @Persisted var active: Bool = false
    @Persisted var joined: Date? = nil
    @Persisted var avatar: Data? = nil
    @Persisted var id: UUID = UUID()
    @Persisted(indexed: true) var city: String = ""
    @Persisted var tags: List<String>
    @Persisted var car: Car?
    @Persisted var phones: List<Phone>
    @Persisted var kind: Kind = .free
    @Persisted var location: Location? = nil
}

/// Every supported scalar type, plain and optional.
final class AllTypes: Object {
    @Persisted(primaryKey: true) var key: Int = 0
    @Persisted var bool: Bool = false
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var double: Double = 0
    @Persisted var float: Float = 0
    @Persisted var string: String = ""
    @Persisted var data: Data = Data()
    @Persisted var date: Date = Date(timeIntervalSince1970: 0)
    @Persisted var uuid: UUID = UUID()
    @Persisted var decimal: Decimal = 0
    @Persisted var optBool: Bool?
    @Persisted var optInt: Int?
    @Persisted var optDouble: Double?
    @Persisted var optString: String?
    @Persisted var optDate: Date?
    @Persisted var optUUID: UUID?
    @Persisted var optDecimal: Decimal?
    @Persisted var ints: List<Int>
    @Persisted var optionalStrings: List<String?>
    @Persisted var dates: List<Date>
    @Persisted var kind: Kind = .pro
}

/// A type without a primary key: objects get hidden ids.
final class LogEntry: Object {
    @Persisted var message: String = ""
    @Persisted(indexed: true) var level: Int = 0
}

/// Links that form a cycle, for deep copies.
final class Node: Object {
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var next: Node?
    @Persisted var children: List<Node>
}

let allModelTypes: [Object.Type] = [User.self, Car.self, Phone.self, AllTypes.self, LogEntry.self, Node.self]
