// Realm Swift's CustomPersistable and FailableCustomPersistable, as ported code declares
// them: stored as the persisted type, queried and sorted as it.

import Foundation
import Strata
import XCTest

struct Celsius: CustomPersistable, Hashable {
    var degrees: Double
    init(degrees: Double) { self.degrees = degrees }
    init(persistedValue: Double) { degrees = persistedValue }
    var persistableValue: Double { degrees }
}

/// Refuses odd stored values.
struct EvenNumber: FailableCustomPersistable, Hashable {
    var value: Int
    init?(persistedValue: Int) {
        guard persistedValue % 2 == 0 else { return nil }
        value = persistedValue
    }
    var persistableValue: Int { value }
}

extension URL: FailableCustomPersistable {
    public init?(persistedValue: String) { self.init(string: persistedValue) }
    public var persistableValue: String { absoluteString }
}

final class Reading: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var temperature: Celsius
    @Persisted var source: URL?
    @Persisted var home: URL = URL(string: "https://home.example")!
    @Persisted var even: EvenNumber = EvenNumber(persistedValue: 2)!
    @Persisted var maybeEven: EvenNumber?
    @Persisted var history: List<Celsius>
}

final class PortingCustomPersistableContractTests: PortingStoreTestCase {
    func testStoredAsThePersistedTypeQueriedAndSortedAsIt() throws {
        let (realm, config) = try contractRealm("custom-persistable", types: [Reading.self])
        directories.append(config.directory!)
        XCTAssertEqual(Reading.sharedSchema()?["temperature"]?.kind, .double)
        XCTAssertEqual(Reading.sharedSchema()?["source"]?.kind, .string)
        XCTAssertEqual(Reading.sharedSchema()?["source"]?.isOptional, true)
        XCTAssertEqual(Reading().temperature, Celsius(degrees: 0), "no initial value: the persisted type's zero")

        try realm.write {
            for (id, degrees) in [(1, 21.5), (2, 18.0), (3, 30.25)] {
                let reading = Reading()
                reading.id = id
                reading.temperature = Celsius(degrees: degrees)
                reading.source = URL(string: "https://sensor.example/\(id)")
                reading.history.append(objectsIn: [Celsius(degrees: degrees - 1), Celsius(degrees: degrees)])
                try realm.add(reading)
            }
        }
        let first = try XCTUnwrap(realm.object(ofType: Reading.self, forPrimaryKey: 1))
        XCTAssertEqual(first.temperature.degrees, 21.5)
        XCTAssertEqual(first.source?.path, "/1")
        XCTAssertEqual(first.home.host, "home.example")
        XCTAssertEqual(Array(first.history), [Celsius(degrees: 20.5), Celsius(degrees: 21.5)])
        XCTAssertEqual(realm.objects(Reading.self).filter("temperature > 20").sorted(byKeyPath: "temperature").map(\.id), [1, 3])
        XCTAssertEqual(realm.objects(Reading.self).filter("source ENDSWITH '/2'").map(\.id), [2])
        XCTAssertEqual(try XCTUnwrap(realm.dynamicObject(ofType: "Reading", forPrimaryKey: 3))["temperature"] as? Double, 30.25,
                       "stored as a plain Double")
    }

    func testAStoredValueTheTypeRefusesIsReportedNotTrapped() throws {
        let (realm, config) = try contractRealm("failable-persistable", types: [Reading.self])
        directories.append(config.directory!)
        try realm.write {
            try realm.add({ let r = Reading(); r.id = 1; r.maybeEven = EvenNumber(persistedValue: 4); return r }())
            // Another writer (an older app, the dynamic API) stored odd numbers.
            let dynamic = try XCTUnwrap(realm.dynamicObject(ofType: "Reading", forPrimaryKey: 1))
            dynamic["even"] = 3
            dynamic["maybeEven"] = 5
        }
        let reading = try XCTUnwrap(realm.object(ofType: Reading.self, forPrimaryKey: 1))
        XCTAssertNil(reading.maybeEven, "optional: nil")
        XCTAssertEqual(reading.even.value, 2, "non-optional: the declared initial value")
        XCTAssertTrue(realm.readErrors.contains { "\($0)".contains("even") }, "\(realm.readErrors)")
    }
}
