// Issue 13, finding 2: file numbers past 99,999,999 need more than 8 digits. Names and the
// parser must agree for every UInt32 file number, or a segment written under a 9-digit name
// is ignored by the next open (and overwritten by a later roll).

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class ReliabilityFileNumberTests: XCTestCase {
    func testNamesAndParserAgreeForEveryWidth() {
        for number: UInt32 in [1, 9, 12_345_678, 99_999_999, 100_000_000, 999_999_999, 1_000_000_000, 4_000_000_000, .max - 1, .max] {
            XCTAssertEqual(Store.parseSegmentName(segmentName(number)), number, segmentName(number))
            XCTAssertEqual(Store.parseSegmentNumber(hintName(number), suffix: ".hint"), number, hintName(number))
        }
        XCTAssertEqual(segmentName(7), "00000007.seg")
        XCTAssertEqual(segmentName(100_000_000), "100000000.seg")
        XCTAssertEqual(hintName(.max), "4294967295.hint")
        // Only the names we write: no other paddings, widths, signs or overflow.
        for name in ["0000007.seg", "000000007.seg", "0100000000.seg", "4294967296.seg", "99999999999.seg",
                     "+0000007.seg", "0000000a.seg", "00000007.seg.tmp", "00000007.hint", ".seg"] {
            XCTAssertNil(Store.parseSegmentName(name), name)
        }
    }

    /// The in-memory table of sealed segments spans the live file numbers only: sealing
    /// segment 4,000,000,001 must not allocate four billion slots (it used to index from 0),
    /// nor may an old segment beside new ones (a far id is kept aside instead).
    func testSealedSegmentTableSpansOnlyTheLiveNumbers() {
        var directory = KeyDirectory()
        let region = MappedRegion(base: nil, length: 0)
        func seal(_ id: UInt32) { directory.setSealed(SegmentView(id: id, region: region, length: 48, cipher: nil)) }
        for id: UInt32 in [4_000_000_005, 4_000_000_001, 4_000_000_003] { seal(id) }
        XCTAssertEqual(directory.sealedSlots, 5)
        directory.removeSealed(.max)
        directory.removeSealed(3)
        for id: UInt32 in [4_000_000_001, 4_000_000_003, 4_000_000_005] { XCTAssertEqual(directory.segment(id)?.id, id) }
        for id: UInt32 in [0, 1, 4_000_000_000, 4_000_000_002, 4_000_000_006, .max] { XCTAssertNil(directory.segment(id)) }
        directory.removeSealed(4_000_000_001)
        XCTAssertEqual(directory.sealedSlots, 3)
        // Far apart: 7 and .max are kept aside; the window stays small.
        seal(7)
        seal(.max)
        XCTAssertLessThanOrEqual(directory.sealedSlots, 3)
        for id: UInt32 in [7, 4_000_000_003, 4_000_000_005, .max] { XCTAssertEqual(directory.segment(id)?.id, id) }
        XCTAssertNil(directory.segment(8))
        // Dense ids still go to the window, and one it comes to cover is found there.
        for id: UInt32 in 4_000_000_006 ... 4_000_002_000 { seal(id) }
        XCTAssertLessThanOrEqual(directory.sealedSlots, 2_000)
        for id: UInt32 in [7, 4_000_000_003, 4_000_001_000, 4_000_002_000, .max] { XCTAssertEqual(directory.segment(id)?.id, id) }
        for id: UInt32 in [7, .max, 4_000_000_003] { directory.removeSealed(id) }
        for id: UInt32 in [7, .max, 4_000_000_003] { XCTAssertNil(directory.segment(id)) }
        XCTAssertEqual(directory.segment(4_000_000_005)?.id, 4_000_000_005)
        var reopened = KeyDirectory()
        // Ascending from a low id, as an open might: small, then far, then adjacent to the far one.
        for id: UInt32 in [1, 2, 99_999_999, 100_000_000, 100_000_001] {
            reopened.setSealed(SegmentView(id: id, region: region, length: 48, cipher: nil))
        }
        XCTAssertLessThan(reopened.sealedSlots, 1_024)
        for id: UInt32 in [1, 2, 99_999_999, 100_000_000, 100_000_001] { XCTAssertEqual(reopened.segment(id)?.id, id) }
    }

    /// Replaces the only segment of the closed store in `dir` by one numbered `number`.
    private func renumberOnlySegment(in dir: TemporaryDirectory, to number: UInt32) throws {
        let fm = FileManager.default
        for name in try fm.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".hint") || name == "CLEAN" {
            try fm.removeItem(atPath: dir.path + "/" + name)
        }
        var segment = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path + "/00000001.seg")))
        segment.replaceSubrange(0 ..< SegmentHeader.size, with: SegmentHeader.encode(number: number))
        try Data(segment).write(to: URL(fileURLWithPath: dir.path + "/" + segmentName(number)))
        try fm.removeItem(atPath: dir.path + "/00000001.seg")
        var manifest = Manifest()
        manifest.entries[number] = Manifest.Entry(kind: .log, sealedLength: nil)
        try Data(manifest.encode()).write(to: URL(fileURLWithPath: dir.path + "/" + Manifest.fileName))
    }

    /// The last file number: a writable open refuses cleanly (a roll would need the next
    /// number); a read-only open reads.
    func testTheLastFileNumberIsRefusedForWritingNotTrapped() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        try renumberOnlySegment(in: dir, to: .max)
        XCTAssertThrowsError(try Store(directory: dir.url)) { error in
            guard case .invalidArgument(let message) = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.hasPrefix("segment 4294967295.seg has the last file number"), message)
        }
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(directory: dir.url, options: options)
        XCTAssertEqual(try store.get(table: 1, key: bytes("k")), bytes("v"))
        try store.close()
    }

    /// A store whose file-number counter is near the 8-digit limit (seeded by renaming its
    /// only segment to 99,999,999 with a matching header) rolls into 100000000.seg; the next
    /// open must read it.
    func testSegmentsPastNineNinesSurviveReopen() throws {
        let dir = TemporaryDirectory()
        var options = StoreOptions()
        options.segmentSize = 4096
        options.durability = .none
        do {
            let store = try Store(directory: dir.url, options: options)
            try store.write { try $0.put(table: 1, key: bytes("first"), value: bytes("one")) }
            try store.close()
        }
        // Seed: 00000001.seg becomes 99999999.seg (its header names the new number).
        let fm = FileManager.default
        try renumberOnlySegment(in: dir, to: 99_999_999)
        do {
            let store = try Store(directory: dir.url, options: options)
            XCTAssertEqual(try store.get(table: 1, key: bytes("first")), bytes("one"))
            for i in 0 ..< 8 {
                try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 2000)) }
            }
            try store.close()
        }
        let names = try fm.contentsOfDirectory(atPath: dir.path)
        XCTAssertTrue(names.contains("100000000.seg"), "\(names.sorted())")
        let store = try Store(directory: dir.url, options: options)
        XCTAssertEqual(try store.get(table: 1, key: bytes("first")), bytes("one"))
        for i in 0 ..< 8 {
            XCTAssertEqual(try store.get(table: 1, key: key(i)), value(UInt64(i), length: 2000), "key \(i)")
        }
        XCTAssertTrue(try store.verify().problems.isEmpty)
        try store.close()
    }
}
