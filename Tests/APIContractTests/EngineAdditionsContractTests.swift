// docs/API.md §9 as a user writes it (`import Strata` only): encryption at rest from the engine
// and from the object layer, file modes, a wrong key, and a lost segment named.

import Foundation
import Strata
import XCTest

final class EngineAdditionsContractTests: XCTestCase {
    private var url: URL!

    override func setUp() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("contract-9-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: url)
    }

    func testEncryptionAtRestFileModesWrongKeyAndMissingSegment() throws {
        let key64 = Data((0 ..< 64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
        var options = StoreOptions()
        options.encryptionKey = key64        // Data of 64 bytes (Realm's size), nil = plain
        options.fileMode = 0o600             // mode of every created file (default 0o600; directories 0o700)
        let engine = url.appendingPathComponent("engine")
        let store = try Store(directory: engine, options: options)
        _ = try store.write { try $0.put(table: 1, key: Array("k".utf8), value: Array("a secret value".utf8)) }
        try store.close()

        // Everything on disk is encrypted: the value appears in no file.
        for name in try FileManager.default.contentsOfDirectory(atPath: engine.path) {
            let bytes = try Data(contentsOf: engine.appendingPathComponent(name))
            XCTAssertNil(bytes.range(of: Data("a secret value".utf8)), name)
            let mode = try FileManager.default.attributesOfItem(atPath: engine.appendingPathComponent(name).path)[.posixPermissions] as? Int
            XCTAssertEqual(mode, 0o600, name)
        }
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: engine.path)[.posixPermissions] as? Int, 0o700)

        // A wrong key (or none) throws wrongKey at open, not corrupted.
        var wrong = options
        wrong.encryptionKey = Data(repeating: 7, count: 64)
        XCTAssertThrowsError(try Store(directory: engine, options: wrong)) { error in
            guard case StoreError.wrongKey = error else { return XCTFail("\(error)") }
        }
        var none = options
        none.encryptionKey = nil
        XCTAssertThrowsError(try Store(directory: engine, options: none)) { error in
            guard case StoreError.wrongKey = error else { return XCTFail("\(error)") }
        }
        let reopened = try Store(directory: engine, options: options)
        XCTAssertEqual(try reopened.get(table: 1, key: Array("k".utf8)), Array("a secret value".utf8))
        try reopened.close()

        // The same from the object layer.
        var config = Realm.Configuration(directory: url.appendingPathComponent("realm"))
        config.objectTypes = [Car.self]
        config.encryptionKey = key64         // the same from the object layer
        do {
            let realm = try Realm(configuration: config)
            try realm.write { try realm.create(Car.self, value: ["vin": "WVWZZZ1JZXW000001"]) }
        }
        var wrongConfig = config
        wrongConfig.encryptionKey = Data(repeating: 9, count: 64)
        XCTAssertThrowsError(try Realm(configuration: wrongConfig)) { error in
            guard case RealmError.storage(.wrongKey) = error else { return XCTFail("\(error)") }
        }

        // A missing segment is corrupted, naming it, never stale data.
        let segment = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: engine.path).first { $0.hasSuffix(".seg") })
        try FileManager.default.removeItem(at: engine.appendingPathComponent(segment))
        XCTAssertThrowsError(try Store(directory: engine, options: options)) { error in
            guard case StoreError.corrupted(let name, _, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(name, segment, "the error names the missing file")
        }
    }
}
