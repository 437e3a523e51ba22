// Issue 13, finding 7: a Double that a Decimal cannot hold (±infinity, NaN, beyond about
// ±1e146, where Foundation's Decimal(Double) gives NaN) is refused with an error naming the
// property, never a trap and never a stored NaN that later reads as a damaged row.

import XCTest
@testable import Strata

enum DecimalV1 {
    final class Price: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var amount: Double = 0
    }
}

enum DecimalV2 {
    /// `amount` changes from Double to Decimal.
    final class Price: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var amount: Decimal = 5
    }
}

final class ReliabilityDecimalTests: RealmTestCase {
    func testNonFiniteAndHugeDoublesIntoADecimalAreRefusedNamingTheProperty() throws {
        let realm = try openRealm(types: [DecimalV2.Price.self])
        for (index, bad) in [Double.infinity, -Double.infinity, Double.nan, 1e200, -3.5e165, 1e147].enumerated() {
            XCTAssertThrowsError(try realm.write { try realm.create(DecimalV2.Price.self, value: ["id": index, "amount": bad]) }, "\(bad)") { error in
                guard case .invalidValue(let message) = error as? RealmError else { return XCTFail("\(bad): \(error)") }
                XCTAssertTrue(message.contains("Price.amount"), message)
            }
        }
        // Also through the dynamic subscript's checked path and an unmanaged object.
        let unmanaged = DecimalV2.Price()
        XCTAssertThrowsError(try unmanaged.setDynamicValue(Double.infinity, index: 1))
        XCTAssertEqual(realm.objects(DecimalV2.Price.self).count, 0)
        // What Decimal can hold still converts; tiny values round to zero, as they do in JSON.
        try realm.write {
            try realm.create(DecimalV2.Price.self, value: ["id": 100, "amount": 12.5])
            try realm.create(DecimalV2.Price.self, value: ["id": 101, "amount": 1e140])
            try realm.create(DecimalV2.Price.self, value: ["id": 102, "amount": 1e-120])
            try realm.create(DecimalV2.Price.self, value: ["id": 103, "amount": 1e-200])
        }
        XCTAssertEqual(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 100)?.amount, Decimal(string: "12.5"))
        XCTAssertFalse(try XCTUnwrap(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 101)).amount.isNaN)
        XCTAssertEqual(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 102)?.amount, Decimal(string: "1e-120"))
        XCTAssertEqual(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 103)?.amount, 0)
    }

    func testDecimalNaNAssignedDirectlyReadsBackInsteadOfDamagingTheRow() throws {
        let realm = try openRealm(types: [DecimalV2.Price.self])
        try realm.write {
            let price = DecimalV2.Price()
            price.id = 1
            price.amount = .nan
            try realm.add(price)
        }
        XCTAssertTrue(try XCTUnwrap(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 1)).amount.isNaN)
    }

    func testJSONNumberBeyondDecimalIsATypeMismatchNotAStoredNaN() throws {
        let realm = try openRealm(types: [DecimalV2.Price.self])
        let coder = RealmCoder(realm: realm)
        XCTAssertThrowsError(try coder.decode(DecimalV2.Price.self, from: Data(#"{"id": 1, "amount": 1e200}"#.utf8))) { error in
            XCTAssertTrue("\(error)".contains("amount"), "\(error)")
        }
        XCTAssertNil(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 1))
        _ = try coder.decode(DecimalV2.Price.self, from: Data(#"{"id": 2, "amount": 0.25}"#.utf8))
        XCTAssertEqual(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 2)?.amount, Decimal(string: "0.25"))
    }

    func testMigrationFromDoubleToDecimalKeepsTheInitialValueForInfinity() throws {
        do {
            let realm = try Realm(configuration: configuration(types: [DecimalV1.Price.self], version: 1))
            try realm.write {
                try realm.create(DecimalV1.Price.self, value: ["id": 1, "amount": Double.infinity])
                try realm.create(DecimalV1.Price.self, value: ["id": 2, "amount": 2.5])
                try realm.create(DecimalV1.Price.self, value: ["id": 3, "amount": 1e300])
            }
        }
        // The automatic conversion (under try?) must not trap; what does not convert keeps the
        // declared initial value, as any other value that does not fit the new type does.
        let realm = try Realm(configuration: configuration(types: [DecimalV2.Price.self], version: 2))
        XCTAssertEqual(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 1)?.amount, 5)
        XCTAssertEqual(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 2)?.amount, Decimal(string: "2.5"))
        XCTAssertEqual(realm.object(ofType: DecimalV2.Price.self, forPrimaryKey: 3)?.amount, 5)
    }
}
