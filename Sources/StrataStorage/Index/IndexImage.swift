// IndexImage: the key index written to one file (`INDEX`) so that the next open maps it
// instead of rebuilding the index from every hint file.
//
// Why: rebuilding a million keys from their hints took 0.25–0.4 s an open (the hints are
// read in 20 ms; the time is building the trie). The image holds the trie's pages exactly
// as they lie in memory (32-byte slots, HashIndex.swift), so opening is: check the header
// and the directory (the trie's shape, every page's place), and point the page nodes at
// the mapping. Each page is checked when first touched — its checksum and, in C, its
// slots (every used one an inline key or a key among the page's own long keys) — by
// whichever reader or writer touches it first, and by a background pass the open starts,
// so a page is never read unchecked and the open costs the directory alone (checking
// every page up front took ~10 ms a million keys: reading 46 MiB once). A page is copied
// into memory the first time a commit changes it, as a page shared with a snapshot is
// today. Keys longer than 15 bytes are read in place too (slots marked `mappedMarker`,
// holding the offset of their bytes in the image).
//
// A page that fails its check is rebuilt from the log the image covers (CoveredLog.swift:
// its segments as they were then, never the current log, whose newer entries a snapshot
// older than them must not see) and written over its bytes in this process's private
// copy of the mapping; readers waiting on it then read it like any other. Only if that
// log cannot be read either (today's open would have thrown `corrupted`) is the page
// marked damaged: its reads throw, writes are refused, and nothing is answered from it.
//
// It is a cache, like a hint: written off the commit path (at close, after the segments
// are synced, and by the background hint writer every few rolls), never synced itself, and
// used only when it checks out — its checksums, and its list of the segments it covers
// against the segments the manifest lists. Anything else
// (a compaction since, a damaged directory, another byte order) and the open rebuilds from
// the hints as before. Encrypted stores write none: the image would hold their keys in clear.
//
// Layout (docs/FORMAT.md, "Index image"; integers little-endian, slots in native order,
// which the loader requires to be little-endian):
//   header, 64 bytes:
//     0  8  magic "STRATAIX"      8  4  version (3)         12 4  zero
//     16 8  hash seed             24 8  sequence: the last commit the image reflects
//     32 8  pages start (64)      40 8  keys start (end of the pages)
//     48 8  directory start (end of the keys)   56 4  directory length   60 4  CRC32C of 0..<60
//   pages: each page's slots, 32 bytes each; an empty slot is all zeros
//   keys: the bytes of long keys, back to back, each page's together
//   directory (CRC32C as its last 4 bytes):
//     u32 segment count, then per segment: u32 id, u8 state (0 sealed, 1 active),
//       u64 bytes covered, u64 raw value bytes, u64 stored value bytes, u64 live bytes
//     u32 table count, then per table: u32 table, u64 key count, its root node
//     node: u8 kind; a branch (0): u8 shift, u8 fan-out bits, u16 children present, then
//       per child u16 position and the child node; a page (1): u8 shift, u32 capacity,
//       u32 count, u64 offset of its slots, u64 offset of its long keys, u32 their length,
//       u32 lane checksum of its slots then its long keys (Checksum.lanes of each, xored
//       with the second rotated by 16)

import CStrataSupport
import Logging

/// A loaded image's mapping, kept alive by every index (and copy of one) with pages or
/// keys in it, and the state of each page's check.
final class IndexImage: @unchecked Sendable {
    // @unchecked: `pages` and `states` are set while loading, before any other thread can
    // see the image; afterwards a page is checked by the one thread that claimed it (in
    // `claimedPages`, under `claims`), its state changes only under `checking`, with release
    // ordering, and its bytes are written (a rebuild) only before that store.

    let region: MappedRegion
    /// The image's first byte (slots hold key offsets from here).
    var base: UnsafeRawPointer { region.base! }
    /// Where each page lies and what its check expects (from the checksummed directory).
    private(set) var pages: [Page] = []
    /// Per page: `unchecked`, `checked` (or rebuilt) or `damaged`.
    private var states: UnsafeMutablePointer<UInt8>?
    /// 1 once any page is damaged (just after the states).
    private var damagedFlag: UnsafeMutablePointer<UInt8>?
    private let checking = Locked(Checking())
    /// Pages being checked now, each by the one thread that claimed it. The check itself
    /// (a checksum of 10–40 KiB) runs outside every lock: a reader that needs one page waits
    /// only for that page, never behind the open's background pass checking the others (a
    /// first query after a reopen waited milliseconds for it, the pass re-taking one lock
    /// page after page).
    private let claims = Monitor()
    private var claimedPages = Set<Int>()

    private static let unchecked: UInt8 = 0, damaged: UInt8 = 2
    static let checked: UInt8 = 1

    /// A page as the directory describes it.
    struct Page {
        var table: UInt32
        var offset: Int
        var capacity: Int
        var count: Int
        var keys: Range<Int>
        var checksum: UInt32
        /// The hash bits the branches above route it by: every key in it has
        /// `tag >> routeShift == route`.
        var routeShift: Int
        var route: UInt32
    }

    /// What checks share: the pages left to check, and the log a damaged page is rebuilt from
    /// (released once every page is checked).
    private struct Checking {
        var remaining = 0
        /// Pages that failed their check (rebuilt or damaged).
        var failed = 0
        var log: CoveredLog?
        /// The covered log's index, built at the first rebuild (released with `log`).
        var logIndex: [UInt32: HashIndex]?
        /// How many times the covered log was read (tests: once however many pages fail).
        var logReads = 0
        /// Why the covered log could not be read, once it could not (not read again).
        var logFailure: String?
        var logger: Logger?
        var damage: StoreError?
    }

    init(region: MappedRegion) {
        self.region = region
    }

    deinit { states?.deallocate() }

    static let fileName = "INDEX"
    static let magic: [UInt8] = Array("STRATAIX".utf8)
    /// 3: each page's long keys lie together and its checksum covers them, so a page is
    /// checked alone when first touched. (2: one checksum over all keys, checked at open;
    /// 1 filed keys by the hash before IndexHash.swift seeded both operands. Both are
    /// refused: the open rebuilds and writes a new image.)
    static let version: UInt32 = 3
    static let headerSize = 64
    private static let slotSize = MemoryLayout<IndexSlot>.stride

    /// A segment as the image saw it.
    struct CoveredSegment: Equatable, Sendable {
        var id: UInt32
        /// True for the segment that was active (being appended to) when the image was written.
        var wasActive: Bool
        /// Its bytes the image reflects (the whole segment, if sealed).
        var length: Int
        var rawValueBytes: Int
        var storedValueBytes: Int
        var liveBytes: Int
    }

    /// What an image reflects: the segments (in file number order) and the last commit.
    struct Coverage: Equatable, Sendable {
        var segments: [CoveredSegment]
        var sequence: UInt64
    }

    /// A loaded image: the index it holds and what it covers.
    struct Loaded {
        var image: IndexImage
        var tables: [UInt32: HashIndex]
        var seed: UInt64
        var coverage: Coverage
    }

    /// Why an image was not used (logged; the open rebuilds instead).
    struct Unusable: Error {
        var reason: String
    }

    // MARK: Writing

    /// The image of `tables` (keyed by `seed`) covering `coverage`. Throws if a page of the
    /// image they were loaded from is damaged (and could not be rebuilt): no image then.
    static func encode(tables: [UInt32: HashIndex], seed: UInt64, coverage: Coverage) throws -> [UInt8] {
        let ordered = tables.keys.sorted()
        // Pass 1: where the keys start, the pages' total size being known.
        var slotBytes = 0
        func sizePages(_ node: IndexNode) {
            if node.slots != nil { slotBytes += node.capacity * slotSize; return }
            for child in node.children { if let child { sizePages(child) } }
        }
        for table in ordered { if let root = tables[table]!.root { sizePages(root) } }
        let keysStart = headerSize + slotBytes

        var out = [UInt8](repeating: 0, count: headerSize)
        out.reserveCapacity(keysStart + 64)
        var keys: [UInt8] = []
        var directory: [UInt8] = []
        directory.appendLE32(UInt32(coverage.segments.count))
        for segment in coverage.segments {
            directory.appendLE32(segment.id)
            directory.append(segment.wasActive ? 1 : 0)
            directory.appendLE64(UInt64(segment.length))
            directory.appendLE64(UInt64(segment.rawValueBytes))
            directory.appendLE64(UInt64(segment.storedValueBytes))
            directory.appendLE64(UInt64(bitPattern: Int64(segment.liveBytes)))
        }
        func writeNode(_ node: IndexNode, image oldBase: UnsafeRawPointer?) throws {
            if node.isLeaf {
                try node.checkReadable()
                let slots = node.slots!
                // The page copied whole, then its empty slots zeroed (they may hold a removed
                // key's stale words) and its long keys moved into the keys section.
                let start = out.count, keysBefore = keys.count
                out.append(contentsOf: UnsafeRawBufferPointer(start: slots, count: node.capacity * slotSize))
                out.withUnsafeMutableBytes { raw in
                    let copied = (raw.baseAddress! + start).assumingMemoryBound(to: IndexSlot.self)
                    for i in 0 ..< node.capacity {
                        if copied[i].tag == 0 {
                            copied[i] = IndexSlot(k0: 0, k1: 0, segment: 0, offset: 0, size: 0, tag: 0)
                        } else if !copied[i].isInline {
                            let offset = keysStart + keys.count
                            let length = slots[i].withLongKey(image: oldBase) { bytes in
                                keys.append(contentsOf: bytes)
                                return bytes.count
                            }
                            copied[i].k0 = UInt64(offset)
                            copied[i].k1 = IndexSlot.mappedMarker | UInt64(length)
                        }
                    }
                }
                let slotsChecksum = out.withUnsafeBytes { Checksum.lanes(UnsafeRawBufferPointer(rebasing: $0[start...])) }
                let keysChecksum = keys.withUnsafeBytes { Checksum.lanes(UnsafeRawBufferPointer(rebasing: $0[keysBefore...])) }
                directory.append(1)
                directory.append(UInt8(node.shift))
                directory.appendLE32(UInt32(node.capacity))
                directory.appendLE32(UInt32(node.count))
                directory.appendLE64(UInt64(start))
                directory.appendLE64(UInt64(keysStart + keysBefore))
                directory.appendLE32(UInt32(keys.count - keysBefore))
                directory.appendLE32(pageChecksum(slots: slotsChecksum, keys: keysChecksum))
                return
            }
            directory.append(0)
            directory.append(UInt8(node.shift))
            directory.append(UInt8(node.children.count.trailingZeroBitCount))
            directory.appendLE16(UInt16(node.children.lazy.filter { $0 != nil }.count))
            for (position, child) in node.children.enumerated() {
                guard let child else { continue }
                directory.appendLE16(UInt16(position))
                try writeNode(child, image: oldBase)
            }
        }
        let present = ordered.filter { tables[$0]!.count > 0 }
        directory.appendLE32(UInt32(present.count))
        for table in present {
            let index = tables[table]!
            directory.appendLE32(table)
            directory.appendLE64(UInt64(index.count))
            try writeNode(index.root!, image: index.image?.base)
        }
        precondition(out.count == keysStart, "index image pages sized wrongly")
        out.append(contentsOf: keys)
        let directoryStart = out.count
        directory.appendLE32(Checksum.crc32c(directory))
        out.append(contentsOf: directory)
        out.withUnsafeMutableBytes { raw in
            let p = raw.baseAddress!
            for (i, byte) in magic.enumerated() { p.storeBytes(of: byte, toByteOffset: i, as: UInt8.self) }
            p.storeLE32(version, at: 8)
            p.storeLE32(0, at: 12)
            p.storeLE64(seed, at: 16)
            p.storeLE64(coverage.sequence, at: 24)
            p.storeLE64(UInt64(headerSize), at: 32)
            p.storeLE64(UInt64(keysStart), at: 40)
            p.storeLE64(UInt64(directoryStart), at: 48)
            p.storeLE32(UInt32(directory.count), at: 56)
            p.storeLE32(Checksum.crc32c(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(raw)[0 ..< 60])), at: 60)
        }
        return out
    }

    // MARK: Reading

    /// The bytes of log an image covering `coverage` stands for, and those an open would
    /// read after it (the segments it does not cover, and what the one active then grew by).
    /// Applying entries onto the image one at a time costs about what building the index
    /// whole costs per entry, so an open uses the image only while `after` ≤ `covered`.
    static func replayBytes(_ coverage: Coverage, found: [(number: UInt32, size: Int, kind: SegmentKind)]) -> (covered: Int, after: Int) {
        let covered = Dictionary(coverage.segments.map { ($0.id, $0.length) }, uniquingKeysWith: { first, _ in first })
        var after = 0
        for segment in found { after += segment.size - min(segment.size, covered[segment.number] ?? 0) }
        return (coverage.segments.reduce(0) { $0 + $1.length }, after)
    }

    /// Why an image covering `coverage` cannot stand for the segments `found` (number, size,
    /// kind; in replay order, the last one active), or nil if it can: each covered segment is
    /// there, sealed ones as long as they were, the one active then at least as long (and a
    /// log segment); every segment it does not cover is a log segment newer than that one
    /// (a compaction output since, numbered above it too, is not).
    static func mismatch(_ coverage: Coverage, found: [(number: UInt32, size: Int, kind: SegmentKind)]) -> String? {
        let activeThen = coverage.segments.filter(\.wasActive)
        guard activeThen.count == 1, let wasActive = activeThen.first else { return "it covers no active segment" }
        let present = Dictionary(found.map { ($0.number, $0) }, uniquingKeysWith: { first, _ in first })
        for covered in coverage.segments {
            guard let segment = present[covered.id] else { return "segment \(segmentName(covered.id)) is gone" }
            if covered.wasActive {
                guard segment.kind == .log, segment.size >= covered.length else {
                    return "segment \(segmentName(covered.id)) is not the log segment it covered"
                }
            } else {
                guard segment.size == covered.length, segment.number != found.last?.number else {
                    return "segment \(segmentName(covered.id)) is \(segment.size) bytes, not the \(covered.length) it covered"
                }
            }
        }
        let coveredIDs = Set(coverage.segments.map(\.id))
        for segment in found where !coveredIDs.contains(segment.number) {
            guard segment.kind == .log, segment.number > wasActive.id else {
                return "segment \(segmentName(segment.number)) is newer than the image but not a later log segment"
            }
        }
        return nil
    }

    /// The image in `region` turned into an index: the header's and the directory's
    /// checksums, the directory's structure (the trie's shape as HashIndex builds it, every
    /// page and its long keys inside their sections, the counts) checked now; each page's
    /// own bytes when first touched (``checkReadable(_:)``). `region` must be a private
    /// writable mapping (a page rebuilt from the log is written over its bytes).
    static func load(_ region: MappedRegion) throws -> Loaded {
        #if _endian(big)
        throw Unusable(reason: "index images are read in place only on little-endian machines")
        #else
        let size = region.length
        guard let header = region.bytes(at: 0, count: headerSize, limit: size) else { throw Unusable(reason: "shorter than its header") }
        guard Array(header[0 ..< 8]) == magic else { throw Unusable(reason: "bad magic") }
        guard header.le32(60) == Checksum.crc32c(UnsafeRawBufferPointer(rebasing: header[0 ..< 60])) else {
            throw Unusable(reason: "header checksum mismatch")
        }
        guard header.le32(8) == version else { throw Unusable(reason: "version \(header.le32(8)) is not \(version)") }
        let seed = header.le64(16), sequence = header.le64(24)
        let pagesStart = header.le64(32), keysStart = header.le64(40), directoryStart = header.le64(48)
        let directoryLength = UInt64(header.le32(56))
        guard pagesStart == UInt64(headerSize), keysStart >= pagesStart, directoryStart >= keysStart,
              directoryLength >= 4, directoryStart <= UInt64(size), directoryLength <= UInt64(size) - directoryStart,
              (keysStart - pagesStart) % UInt64(slotSize) == 0 else {
            throw Unusable(reason: "sections out of bounds")
        }
        let directoryBytes = region.bytes(at: Int(directoryStart), count: Int(directoryLength), limit: size)!
        let body = UnsafeRawBufferPointer(rebasing: directoryBytes[0 ..< directoryBytes.count - 4])
        guard directoryBytes.le32(directoryBytes.count - 4) == Checksum.crc32c(body) else {
            throw Unusable(reason: "directory checksum mismatch")
        }
        let image = IndexImage(region: region)
        var reader = DirectoryReader(bytes: body)
        var segments: [CoveredSegment] = []
        let segmentCount = try reader.u32()
        for _ in 0 ..< segmentCount {
            let id = try reader.u32(), state = try reader.u8()
            guard state <= 1 else { throw Unusable(reason: "segment \(id): bad state \(state)") }
            let length = try reader.int(), raw = try reader.int(), stored = try reader.int()
            let live = Int(Int64(bitPattern: try reader.u64()))
            guard segments.last.map({ $0.id < id }) ?? true else { throw Unusable(reason: "segments out of order") }
            segments.append(CoveredSegment(id: id, wasActive: state == 1, length: length, rawValueBytes: raw,
                                           storedValueBytes: stored, liveBytes: live))
        }
        var shape = Shape(pages: Int(pagesStart) ..< Int(keysStart), keys: Int(keysStart) ..< Int(directoryStart))
        // A state per page, before the pages' nodes (each keeps a pointer to its own): the
        // directory has room for at most one page per 35 bytes (a page's entry, its kind and
        // position included); the last byte is the "any page damaged" flag.
        let maxPages = body.count / 35 + 1
        let states = UnsafeMutablePointer<UInt8>.allocate(capacity: maxPages + 1)
        states.initialize(repeating: unchecked, count: maxPages + 1)
        image.states = states
        image.damagedFlag = states + maxPages
        shape.maxPages = maxPages
        var tables: [UInt32: HashIndex] = [:]
        let tableCount = try reader.u32()
        for _ in 0 ..< tableCount {
            let table = try reader.u32(), count = try reader.int()
            guard tables[table] == nil else { throw Unusable(reason: "table \(table) listed twice") }
            shape.table = table
            shape.seen = 0
            let root = try readNode(&reader, parent: nil, image: image, shape: &shape)
            guard shape.seen == count, count > 0 else { throw Unusable(reason: "table \(table): count \(count) but \(shape.seen) keys") }
            tables[table] = HashIndex(root: root, count: count, seed: seed, image: image)
        }
        guard reader.atEnd else { throw Unusable(reason: "bytes after the directory's last table") }
        image.pages = shape.found
        image.checking.withLock { $0.remaining = shape.found.count }
        return Loaded(image: image, tables: tables, seed: seed, coverage: Coverage(segments: segments, sequence: sequence))
        #endif
    }

    /// What reading the directory's nodes tracks: the sections' bounds, the table being read,
    /// its keys counted so far, and the pages found (their numbers are their order here).
    private struct Shape {
        var pages: Range<Int>
        var keys: Range<Int>
        var table: UInt32 = 0
        var seen = 0
        var found: [Page] = []
        /// Where the next page's long keys may start: each page's follow the previous one's.
        var nextKeys: Int
        /// Pages the state array has room for.
        var maxPages = 0

        init(pages: Range<Int>, keys: Range<Int>) {
            self.pages = pages
            self.keys = keys
            nextKeys = keys.lowerBound
        }
    }

    /// A node of the trie as HashIndex shapes it: the root a branch at `rootShift` by
    /// `rootBits`, every other branch `branchBits` wide and 4 bits below its parent, never
    /// below `minimumSplitShift`; a page 4 bits below its parent. `parent`: the parent's
    /// shift and the hash bits from there up that lead here.
    private static func readNode(_ reader: inout DirectoryReader, parent: (shift: Int, route: UInt32)?, image: IndexImage,
                                 shape: inout Shape) throws -> IndexNode {
        let kind = try reader.u8(), shift = Int(try reader.u8())
        if let parent, shift != parent.shift - IndexNode.branchBits { throw Unusable(reason: "node at the wrong depth") }
        switch kind {
        case 0:
            let bits = Int(try reader.u8())
            if parent == nil {
                guard shift == IndexNode.rootShift, bits == IndexNode.rootBits else { throw Unusable(reason: "bad root") }
            } else {
                guard bits == IndexNode.branchBits, shift >= IndexNode.minimumSplitShift else { throw Unusable(reason: "bad branch") }
            }
            let branch = IndexNode(branchAt: shift, bits: bits)
            let present = Int(try reader.u16())
            var last = -1
            for _ in 0 ..< present {
                let position = Int(try reader.u16())
                guard position > last, position < branch.children.count else { throw Unusable(reason: "bad child position") }
                last = position
                let route = ((parent?.route ?? 0) << UInt32(bits)) | UInt32(position)
                branch.children[position] = try readNode(&reader, parent: (shift, route), image: image, shape: &shape)
            }
            return branch
        case 1:
            guard let parent else { throw Unusable(reason: "a page as root") }
            let capacity = Int(try reader.u32()), count = Int(try reader.u32())
            let offset = try reader.int(), keysOffset = try reader.int(), keysLength = Int(try reader.u32())
            let checksum = try reader.u32()
            // A probe ends at an empty slot: a page needs one.
            guard capacity > 0, count < capacity, offset % slotSize == 0, offset >= shape.pages.lowerBound,
                  capacity <= (shape.pages.upperBound - offset) / slotSize else {
                throw Unusable(reason: "page out of bounds")
            }
            guard keysOffset == shape.nextKeys, keysLength <= shape.keys.upperBound - keysOffset else {
                throw Unusable(reason: "page at \(offset): its long keys out of bounds")
            }
            shape.nextKeys += keysLength
            shape.seen += count
            let number = shape.found.count
            guard number < shape.maxPages else { throw Unusable(reason: "more pages than the directory has room for") }
            shape.found.append(Page(table: shape.table, offset: offset, capacity: capacity, count: count,
                                    keys: keysOffset ..< keysOffset + keysLength, checksum: checksum,
                                    routeShift: parent.shift, route: parent.route))
            let slots = UnsafeMutableRawPointer(mutating: image.base + offset).assumingMemoryBound(to: IndexSlot.self)
            return IndexNode(imagePageAt: shift, capacity: capacity, count: count, slots: slots, image: image, page: number)
        default:
            throw Unusable(reason: "bad node kind \(kind)")
        }
    }

    /// A page's checksum: its slots' and its long keys' lane checksums combined.
    static func pageChecksum(slots: UInt32, keys: UInt32) -> UInt32 {
        slots ^ ((keys << 16) | (keys >> 16))
    }

    // MARK: Checking pages

    /// Where page `page`'s state lies (valid while the image lives): a node reads it there.
    func state(of page: Int) -> UnsafePointer<UInt8> {
        UnsafePointer(states! + page)
    }

    /// Whether page `page` may be read: checked now if it was not yet (its checksum, its
    /// slots), and rebuilt from the log the image covers if it fails. False only when it
    /// is damaged and could not be rebuilt.
    @inline(__always)
    func isReadable(_ page: Int) -> Bool {
        let state = strata_load_acquire_u8(states! + page)
        if state == IndexImage.checked { return true }
        return checkSlowly(page)
    }

    /// The error for a read of a damaged page (the image's damage, as recorded).
    func damageError(page: Int) -> StoreError {
        checking.withLock { $0.damage }
            ?? .corrupted(segment: IndexImage.fileName, offset: pages.indices.contains(page) ? pages[page].offset : 0,
                          reason: "the index image page is damaged")
    }

    /// The first page found damaged and not rebuilt, if any: a store refuses writes then.
    var damage: StoreError? { checking.withLock { $0.damage } }

    /// Whether a page failed its check so far (rebuilt or not): the file on disk is then
    /// replaced at close even if it still fits.
    var hadFailures: Bool { checking.withLock { $0.failed > 0 } }

    /// How many times a rebuild read the covered log (tests).
    var coveredLogReads: Int { checking.withLock { $0.logReads } }

    /// Whether ``damage`` is set (one load: checked by every write).
    @inline(__always)
    var isDamaged: Bool { strata_load_acquire_u8(damagedFlag!) != 0 }

    /// Gives the image the log it covers, to rebuild a damaged page from, and where to
    /// report what it finds; the log is released once every page is checked.
    func setCoveredLog(_ log: CoveredLog, logger: Logger?) {
        checking.withLock {
            guard $0.remaining > 0 else { return }
            $0.log = log
            $0.logger = logger
        }
    }

    /// Checks every page not yet checked (the background pass an open starts).
    func checkAll() {
        for page in pages.indices { _ = isReadable(page) }
    }

    private func checkSlowly(_ page: Int) -> Bool {
        // Claim the page, or wait for the thread checking it and read its verdict.
        claims.lock()
        while true {
            let state = strata_load_acquire_u8(states! + page)
            if state != IndexImage.unchecked {
                claims.unlock()
                return state == IndexImage.checked
            }
            if !claimedPages.contains(page) { break }
            claims.wait()
        }
        claimedPages.insert(page)
        claims.unlock()
        let info = pages[page]
        let problem = check(info)
        let readable = checking.withLock { shared -> Bool in
            var result = IndexImage.checked
            if let problem {
                shared.failed += 1
                result = rebuild(info, problem: problem, shared: &shared)
            }
            strata_store_release_u8(states! + page, result)
            shared.remaining -= 1
            if shared.remaining == 0 {
                shared.log = nil
                shared.logIndex = nil
            }
            return result == IndexImage.checked
        }
        claims.withLock {
            claimedPages.remove(page)
            claims.broadcast()
        }
        return readable
    }

    /// Why page `info` cannot be read as it lies, or nil if it can.
    private func check(_ info: Page) -> String? {
        let bytes = region.bytes(at: info.offset, count: info.capacity * IndexImage.slotSize, limit: region.length)!
        let keys = region.bytes(at: info.keys.lowerBound, count: info.keys.count, limit: region.length)!
        guard IndexImage.pageChecksum(slots: Checksum.lanes(bytes), keys: Checksum.lanes(keys)) == info.checksum else {
            return "checksum mismatch"
        }
        var used = 0
        guard strata_index_page_scan(bytes.baseAddress, info.capacity, UInt64(info.keys.lowerBound),
                                     UInt64(info.keys.upperBound), &used) == 1 else {
            return "a slot is neither an inline key nor one of the page's long keys"
        }
        return used == info.count ? nil : "count \(info.count) but \(used) keys"
    }

    /// Page `info` rebuilt from the covered log and written over its bytes; the page's new
    /// state (`checked`, or `damaged` if the log could not give its keys).
    private func rebuild(_ info: Page, problem: String, shared: inout Checking) -> UInt8 {
        let place = "index image page at \(info.offset) (table \(info.table))"
        func fail(_ reason: String) -> UInt8 {
            shared.logger?.error("\(place): \(problem), and it cannot be rebuilt: \(reason). Reads of its keys fail and writes are refused; reopen the store to rebuild the index from the hint files")
            if shared.damage == nil {
                shared.damage = .corrupted(segment: IndexImage.fileName, offset: info.offset,
                                           reason: "the index image page is damaged (\(problem)) and the log it covers could not rebuild it: \(reason)")
                strata_store_release_u8(damagedFlag!, 1)
            }
            return IndexImage.damaged
        }
        if let failure = shared.logFailure { return fail(failure) }
        guard let log = shared.log else { return fail("the log it covers is no longer held") }
        if shared.logIndex == nil {
            shared.logReads += 1
            do {
                shared.logIndex = try log.index()
            } catch {
                shared.logFailure = "\(error)"
                return fail("\(error)")
            }
        }
        var entries: [(key: IndexKey, location: Location)] = []
        shared.logIndex![info.table]?.forEach(tagRoute: info.route, above: info.routeShift) { entries.append(($0, $1)) }
        guard entries.count == info.count else {
            return fail("the log gives \(entries.count) keys for it, the directory \(info.count)")
        }
        // Built in memory, then copied over the page's bytes (this process's copy only).
        let page = IndexNode(pageAt: info.routeShift - IndexNode.branchBits, capacity: info.capacity)
        for (key, location) in entries {
            page.place(HashIndex.makeSlot(key, location: location, tag: HashIndex.tag(key, seed: log.seed)))
        }
        let target = UnsafeMutableRawPointer(mutating: base + info.offset).assumingMemoryBound(to: IndexSlot.self)
        for i in 0 ..< info.capacity {
            if page.slots![i].isBoxed {
                // The page's copy keeps the box alive (retained once more: the image's slots are never released).
                _ = Unmanaged<KeyBox>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(page.slots![i].k0))!).retain()
            }
            target[i] = page.slots![i]
        }
        shared.logger?.warning("\(place): \(problem); rebuilt from the log it covers")
        return IndexImage.checked
    }

    /// Bounds-checked reads of the directory.
    private struct DirectoryReader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        private mutating func advance(_ count: Int) throws -> Int {
            guard count <= bytes.count - offset else { throw Unusable(reason: "directory ends early") }
            defer { offset += count }
            return offset
        }
        mutating func u8() throws -> UInt8 { bytes[try advance(1)] }
        mutating func u16() throws -> UInt16 { bytes.le16(try advance(2)) }
        mutating func u32() throws -> UInt32 { bytes.le32(try advance(4)) }
        mutating func u64() throws -> UInt64 { bytes.le64(try advance(8)) }
        /// A u64 that must fit a non-negative Int.
        mutating func int() throws -> Int {
            let value = try u64()
            guard value <= UInt64(Int.max) else { throw Unusable(reason: "a size out of range") }
            return Int(value)
        }
    }
}
