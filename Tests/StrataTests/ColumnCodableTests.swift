// Custom column types (docs/API.md §5): Value's representations and conversions, a hand-written
// ColumnCodable, and ColumnJSONCodable's free JSON-in-a-BLOB.

import Foundation
import Strata
import XCTest

/// A hand-written column type, as in WCDB's documentation: stored as text "lat,lng".
struct Coordinate: ColumnCodable, Equatable {
    var lat: Double
    var lng: Double
    static var columnType: ColumnType { .text }
    func archivedValue() -> Value { Value("\(lat),\(lng)") }
    init(lat: Double, lng: Double) {
        self.lat = lat
        self.lng = lng
    }
    init?(with value: Value) {
        let parts = value.stringValue.split(separator: ",")
        guard parts.count == 2, let lat = Double(parts[0]), let lng = Double(parts[1]) else { return nil }
        self.init(lat: lat, lng: lng)
    }
}

/// docs/API.md §5's example.
struct Location: ColumnJSONCodable, Equatable {
    var lat: Double
    var lng: Double
}

final class Settings: ColumnJSONCodable {
    var theme = "dark"
    var fontSize = 14
}

final class ColumnCodableTests: XCTestCase {
    func testValueRepresentations() {
        XCTAssertEqual(Value(Int64(42)).type, .integer64)
        XCTAssertEqual(Value(42).type, .integer64)
        XCTAssertEqual(Value(Int8(-3)).int64Value, -3)
        XCTAssertEqual(Value(2.5).type, .float)
        XCTAssertEqual(Value("hi").type, .text)
        XCTAssertEqual(Value(Data([1, 2])).type, .BLOB)
        XCTAssertEqual(Value(nil).type, .null)
        XCTAssertTrue(Value.null.isNull)
        XCTAssertEqual(Value(nil), Value.null)
    }

    func testConversionsFollowSQLite() {
        XCTAssertEqual(Value(2.9).int64Value, 2)
        XCTAssertEqual(Value(-2.9).int64Value, -2)
        XCTAssertEqual(Value("17").int64Value, 17)
        XCTAssertEqual(Value(" 3.75 ").int64Value, 3)
        XCTAssertEqual(Value("abc").int64Value, 0)
        XCTAssertEqual(Value(Double.infinity).int64Value, 0)
        XCTAssertEqual(Value(1e30).int64Value, .max)
        XCTAssertEqual(Value(Int64(9_007_199_254_740_993)).int64Value, 9_007_199_254_740_993, "64-bit integers are exact")
        XCTAssertEqual(Value(Int64(5)).doubleValue, 5)
        XCTAssertEqual(Value("2.5").doubleValue, 2.5)
        XCTAssertEqual(Value(Int64(12)).stringValue, "12")
        XCTAssertEqual(Value(Data("héllo".utf8)).stringValue, "héllo")
        XCTAssertEqual(Value("héllo").dataValue, Data("héllo".utf8))
        XCTAssertEqual(Value(nil).stringValue, "")
        XCTAssertEqual(Value(nil).dataValue, Data())
        XCTAssertEqual(Value(Int64(70_000)).int32Value, 70_000)
    }

    func testHandWrittenColumnCodableRoundTrips() {
        let c = Coordinate(lat: 35.78, lng: -78.64)
        XCTAssertEqual(Coordinate.columnType, .text)
        XCTAssertEqual(Coordinate(with: c.archivedValue()), c)
        XCTAssertNil(Coordinate(with: Value("not a coordinate")), "a failing init reports nil for the object layer to name")
    }

    func testColumnJSONCodableIsJSONInABlob() throws {
        let location = Location(lat: 38.72, lng: -9.14)
        XCTAssertEqual(Location.columnType, .BLOB)
        let stored = location.archivedValue()
        XCTAssertEqual(stored.type, .BLOB)
        XCTAssertEqual(stored.stringValue, #"{"lat":38.72,"lng":-9.14}"#, "sorted keys: equal values store equal bytes")
        XCTAssertEqual(Location(with: stored), location)
        XCTAssertEqual(Location(with: Value(#"{"lat":1,"lng":2}"#)), Location(lat: 1, lng: 2), "text holding JSON reads too")
        XCTAssertNil(Location(with: Value(#"{"lat":"north"}"#)))
        XCTAssertNil(Location(with: Value(Int64(3))))
        XCTAssertNil(Location(with: .null))
        // Classes conform the same way.
        let settings = Settings()
        settings.fontSize = 18
        let decoded = try XCTUnwrap(Settings(with: settings.archivedValue()))
        XCTAssertEqual(decoded.fontSize, 18)
        XCTAssertEqual(decoded.theme, "dark")
    }
}
