// Realm Swift's Decimal128, as ported code uses it: literals, exact arithmetic, parsing
// with errors, and properties stored, queried, sorted and summed as decimals.

import Foundation
import Strata
import XCTest

final class Invoice: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var total: Decimal128
    @Persisted var discount: Decimal128?
    @Persisted var lines: List<Decimal128>
}

final class PortingDecimal128ContractTests: PortingStoreTestCase {
    func testLiteralsArithmeticAndParsing() throws {
        let a: Decimal128 = 0.1, b: Decimal128 = 0.2, c: Decimal128 = "0.3"
        XCTAssertEqual(a + b, c, "exact decimal arithmetic")
        XCTAssertEqual((10 as Decimal128) / 4, Decimal128(number: 2.5))
        XCTAssertEqual(Decimal128(value: "12.50"), 12.5)
        XCTAssertEqual(Decimal128(value: 7), 7)
        XCTAssertEqual(try Decimal128(string: "-1.25e2"), -125)
        XCTAssertEqual(try Decimal128(string: " 42 "), 42)
        XCTAssertEqual(Set([try Decimal128(string: "1.0"), Decimal128(1), 1.00]).count, 1, "equal values hash alike")
        XCTAssertLessThan(Decimal128(-3), 2)
        XCTAssertEqual(Decimal128(-3).magnitude, 3)
        var n: Decimal128 = 5
        n.negate()
        n *= 2
        XCTAssertEqual(n, -10)
        XCTAssertEqual(n.stringValue, "-10")
        XCTAssertEqual(Decimal128(exactly: UInt64.max), nil, "beyond Int64: not exact")

        for bad in ["", "abc", "1.5x", "1e", ".", "--1", "1e9999"] {
            XCTAssertThrowsError(try Decimal128(string: bad), bad) { error in
                guard case RealmError.invalidValue(let message) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(message.contains("is not a Decimal128"), message)
            }
        }
        let nan = try Decimal128(string: "NaN")
        XCTAssertTrue(nan.isNaN)
        XCTAssertEqual(nan, Decimal128(value: "not a number"), "NaN equals NaN (a total order)")
        XCTAssertLessThan(nan, Decimal128(-1_000_000))

        let encoded = try JSONEncoder().encode([Decimal128(string: "19.99")])
        XCTAssertEqual(String(decoding: encoded, as: UTF8.self), "[\"19.99\"]")
        XCTAssertEqual(try JSONDecoder().decode([Decimal128].self, from: Data("[\"19.99\", 3.5]".utf8)), [try Decimal128(string: "19.99"), 3.5])
    }

    func testStoredQueriedSortedAndSummedAsDecimals() throws {
        let (realm, config) = try contractRealm("decimal128", types: [Invoice.self])
        directories.append(config.directory!)
        XCTAssertEqual(Invoice.sharedSchema()?["total"]?.kind, .decimal)
        XCTAssertEqual(Invoice().total, 0)
        try realm.write {
            for (id, total) in [(1, "19.99"), (2, "100.10"), (3, "5")] {
                let invoice = Invoice()
                invoice.id = id
                invoice.total = try Decimal128(string: total)
                invoice.lines.append(objectsIn: [invoice.total, 1])
                try realm.add(invoice)
            }
            realm.object(ofType: Invoice.self, forPrimaryKey: 2)!.discount = 0.5
            try realm.create(Invoice.self, value: ["id": 4, "total": Decimal128(string: "0.01")] as [String: Any])
        }
        let invoices = realm.objects(Invoice.self)
        XCTAssertEqual(invoices.filter("total > 10").sorted(byKeyPath: "total").map(\.id), [1, 2])
        XCTAssertEqual(invoices.sum(of: \.total), try Decimal128(string: "125.10"))
        XCTAssertEqual(invoices.max(of: \.total), try Decimal128(string: "100.10"))
        XCTAssertEqual(realm.object(ofType: Invoice.self, forPrimaryKey: 2)?.discount, 0.5)
        XCTAssertNil(realm.object(ofType: Invoice.self, forPrimaryKey: 1)?.discount)
        XCTAssertEqual(Array(realm.object(ofType: Invoice.self, forPrimaryKey: 1)!.lines), [try Decimal128(string: "19.99"), 1])

        try realm.write { realm.object(ofType: Invoice.self, forPrimaryKey: 3)!.total = Decimal128(value: "x") }
        XCTAssertEqual(realm.object(ofType: Invoice.self, forPrimaryKey: 3)?.total.isNaN, true, "NaN is stored, as in Realm")
    }
}
