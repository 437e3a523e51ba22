// The record codec, checksums and compression, byte for byte.

import XCTest
import CStrataSupport
import StrataTestSupport
@testable import StrataStorage

final class RecordFormatTests: XCTestCase {
    func testCRC32CKnownVectors() {
        // RFC 3720 (iSCSI) test vectors for CRC32C.
        XCTAssertEqual(Checksum.crc32c(Array("123456789".utf8)), 0xE306_9283)
        XCTAssertEqual(Checksum.crc32c([UInt8](repeating: 0, count: 32)), 0x8A91_36AA)
        XCTAssertEqual(Checksum.crc32c([UInt8](repeating: 0xFF, count: 32)), 0x62A8_AB43)
        XCTAssertEqual(Checksum.crc32c(Array(0 ..< 32)), 0x46DD_794E)
    }

    func testHardwareAndPortableCRCAgree() {
        var rng = SplitMix64(seed: 7)
        for length in [0, 1, 7, 8, 9, 63, 64, 65, 1000, 4097] {
            let data = (0 ..< length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let hw = data.withUnsafeBytes { strata_crc32c(0, $0.baseAddress, length) }
            let sw = data.withUnsafeBytes { strata_crc32c_portable(0, $0.baseAddress, length) }
            XCTAssertEqual(hw, sw, "length \(length)")
        }
    }

    /// The three-lane check (index image pages): hardware and portable paths agree, it is
    /// the CRC32C of each lane combined as documented, and a flipped bit anywhere changes it.
    func testTheLaneChecksumIsItsLanesCRCsAndSeesEveryBit() {
        var rng = SplitMix64(seed: 8)
        func rotl(_ v: UInt32, _ n: UInt32) -> UInt32 { (v << n) | (v >> (32 - n)) }
        for length in [0, 1, 8, 23, 24, 25, 100, 1000, 4097, 32 * 350] {
            let data = (0 ..< length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let hw = data.withUnsafeBytes { strata_crc32c_lanes($0.baseAddress, length) }
            XCTAssertEqual(hw, data.withUnsafeBytes { strata_crc32c_lanes_portable($0.baseAddress, length) }, "length \(length)")
            let lane = length / 24 * 8
            let parts = [0 ..< lane, lane ..< 2 * lane, 2 * lane ..< 3 * lane, 3 * lane ..< length].map { Checksum.crc32c(Array(data[$0])) }
            XCTAssertEqual(hw, parts[0] ^ rotl(parts[1], 8) ^ rotl(parts[2], 16) ^ rotl(parts[3], 24), "length \(length)")
            for _ in 0 ..< min(length, 64) {
                var damaged = data
                damaged[Int(rng.next() % UInt64(length))] ^= UInt8(1) << (rng.next() % 8)
                XCTAssertNotEqual(Checksum.lanes(damaged), hw, "length \(length)")
            }
        }
    }

    private func encode(_ kind: RecordKind, key: [UInt8], value: [UInt8], threshold: Int? = nil,
                        compressor: LZ4Compressor = LZ4Compressor()) -> [UInt8] {
        let buffer = ByteBuffer(capacity: 64)
        key.withUnsafeBytes { k in
            value.withUnsafeBytes { v in
                _ = RecordFormat.appendRecord(to: buffer, kind: kind, table: 9, sequence: 42, key: k, value: v,
                                              compressAtLeast: threshold, compressor: compressor)
            }
        }
        return Array(buffer.bytes)
    }

    /// One compression state serves every value a writer compresses (it was set up afresh,
    /// a 16 KiB memset, per value): each block must still stand alone. These values share
    /// text with the ones before them, so a block that referred back to an earlier value
    /// would not decode alone (the decoder is given no dictionary). The bytes may differ
    /// from a fresh state's (the reused state hashes positions as 32-bit offsets, a fresh
    /// one of a small input as 16-bit ones); the sizes must not grow.
    func testAReusedCompressionStateGivesIndependentBlocks() throws {
        var rng = SplitMix64(seed: 25)
        let shared = LZ4Compressor()
        var compressedCount = 0, reusedBytes = 0, freshBytes = 0
        for i in 0 ..< 500 {
            let length = 20 + Int(rng.next() % 600)
            let words = ["\"name\":", "\"city\":\"Raleigh\"", "\"rank\":", "{", "}", ",", "user\(i)"]
            var value: [UInt8] = []
            while value.count < length { value += Array(words[Int(rng.next() % UInt64(words.count))].utf8) }
            let reused = encode(.put, key: bytes("k\(i)"), value: value, threshold: 16, compressor: shared)
            let fresh = encode(.put, key: bytes("k\(i)"), value: value, threshold: 16)
            reusedBytes += reused.count
            freshBytes += fresh.count
            try reused.withUnsafeBytes { raw in
                let record = try RecordView.parse(raw, at: 0).get()
                if record.compressed { compressedCount += 1 }
                XCTAssertEqual(record.value(), value, "value \(i)")
            }
        }
        XCTAssertGreaterThan(compressedCount, 400, "the values were compressed")
        XCTAssertLessThanOrEqual(Double(reusedBytes), Double(freshBytes) * 1.01, "a reused state compressed worse")
    }

    func testPutRoundTrip() throws {
        let record = encode(.put, key: bytes("alpha"), value: bytes("one two three"))
        XCTAssertEqual(record.count % 8, 0)
        XCTAssertEqual(record.count, align8(32 + 5 + 13))
        try record.withUnsafeBytes { raw in
            let view = try RecordView.parse(raw, at: 0).get()
            XCTAssertEqual(view.kind, .put)
            XCTAssertEqual(view.table, 9)
            XCTAssertEqual(view.sequence, 42)
            XCTAssertEqual(Array(view.key), bytes("alpha"))
            XCTAssertEqual(view.value(), bytes("one two three"))
            XCTAssertFalse(view.compressed)
        }
    }

    func testCompressionOnlyWhenItSaves() throws {
        let compressible = value(1, length: 4000, compressible: true)
        let random = value(2, length: 4000)
        let small = encode(.put, key: [1], value: compressible, threshold: 256)
        XCTAssertLessThan(small.count, 1000)
        try small.withUnsafeBytes { raw in
            let view = try RecordView.parse(raw, at: 0).get()
            XCTAssertTrue(view.compressed)
            XCTAssertEqual(view.value(), compressible)
        }
        let incompressible = encode(.put, key: [1], value: random, threshold: 256)
        try incompressible.withUnsafeBytes { raw in
            XCTAssertFalse(try RecordView.parse(raw, at: 0).get().compressed)
        }
        let below = encode(.put, key: [1], value: Array(compressible.prefix(100)), threshold: 256)
        try below.withUnsafeBytes { raw in
            XCTAssertFalse(try RecordView.parse(raw, at: 0).get().compressed)
        }
    }

    func testEveryFlippedBitIsCaught() {
        let record = encode(.put, key: bytes("k"), value: bytes("some value"))
        let unpadded = 32 + 1 + 10
        for byte in 0 ..< unpadded {
            for bit in 0 ..< 8 {
                var damaged = record
                damaged[byte] ^= UInt8(1 << bit)
                damaged.withUnsafeBytes { raw in
                    if case .success = RecordView.parse(raw, at: 0) {
                        XCTFail("flip of bit \(bit) in byte \(byte) went unnoticed")
                    }
                }
            }
        }
    }

    func testTruncatedAndHostileLengths() {
        let record = encode(.put, key: bytes("key"), value: bytes("value"))
        for cut in 0 ..< record.count {
            Array(record.prefix(cut)).withUnsafeBytes { raw in
                if case .success = RecordView.parse(raw, at: 0) { XCTFail("prefix of \(cut) bytes parsed") }
            }
        }
        var hostile = record
        hostile.replaceSubrange(12 ..< 16, with: [0xFF, 0xFF, 0xFF, 0x7F])   // key length 2 GiB
        hostile.withUnsafeBytes { raw in
            guard case .failure(.malformed) = RecordView.parse(raw, at: 0) else { return XCTFail("hostile length accepted") }
        }
    }

    func testCommitRecordCarriesCountAndWatermark() throws {
        let buffer = ByteBuffer(capacity: 16)
        RecordFormat.appendCommit(to: buffer, sequence: 5, recordCount: 3, durableWatermark: 4096)
        XCTAssertEqual(buffer.count, RecordFormat.commitRecordSize)
        try Array(buffer.bytes).withUnsafeBytes { raw in
            let view = try RecordView.parse(raw, at: 0).get()
            XCTAssertEqual(view.kind, .commit)
            XCTAssertEqual(view.commitRecordCount, 3)
            XCTAssertEqual(view.commitDurableWatermark, 4096)
        }
    }

    func testIndexKeyInlineAndHeap() {
        for length in [0, 1, 8, 14, 15, 16, 17, 100] {
            let raw = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let key = IndexKey(raw)
            XCTAssertEqual(key.bytes, raw)
            XCTAssertEqual(key.count, length)
            XCTAssertEqual(key, IndexKey(raw))
            XCTAssertEqual(key.hashValue, IndexKey(raw).hashValue)
            if length > 0 {
                var other = raw
                other[length - 1] ^= 1
                XCTAssertNotEqual(key, IndexKey(other))
            }
        }
        XCTAssertNotEqual(IndexKey([0]), IndexKey([0, 0]), "length is part of the key")
        XCTAssertEqual(MemoryLayout<IndexKey>.size, 24)
    }

    func testHintFileRoundTripAndRejection() throws {
        let keyA = bytes("a"), keyB = bytes("bee")
        try keyA.withUnsafeBytes { a in
            try keyB.withUnsafeBytes { b in
                let entries = [
                    ScannedEntry(kind: .put, table: 1, key: a, location: Location(segment: 3, offset: 48, size: 40), sequence: 7),
                    ScannedEntry(kind: .delete, table: 2, key: b, location: Location(segment: 3, offset: 88, size: 40), sequence: 8),
                ]
                let encoded = HintFile.encode(segmentID: 3, segmentLength: 200, entries: entries, lastSequence: 8,
                                              rawValueBytes: 10, storedValueBytes: 9)
                try encoded.withUnsafeBytes { raw in
                    let decoded = try XCTUnwrap(HintFile.decode(raw, segmentID: 3, segmentLength: 200, previousSequence: 6))
                    XCTAssertEqual(decoded.entries.count, 2)
                    XCTAssertEqual(Array(decoded.entries[1].key), keyB)
                    XCTAssertEqual(decoded.entries[1].location, Location(segment: 3, offset: 88, size: 40))
                    XCTAssertEqual(decoded.lastSequence, 8)
                    XCTAssertNil(HintFile.decode(raw, segmentID: 4, segmentLength: 200, previousSequence: 6), "wrong segment")
                    XCTAssertNil(HintFile.decode(raw, segmentID: 3, segmentLength: 199, previousSequence: 6), "segment length changed")
                    XCTAssertNil(HintFile.decode(raw, segmentID: 3, segmentLength: 200, previousSequence: 7), "sequence overlap")
                }
                for i in 0 ..< encoded.count {
                    var damaged = encoded
                    damaged[i] ^= 0x40
                    damaged.withUnsafeBytes { raw in
                        XCTAssertNil(HintFile.decode(raw, segmentID: 3, segmentLength: 200, previousSequence: 6), "flip at \(i)")
                    }
                }
            }
        }
    }
}
