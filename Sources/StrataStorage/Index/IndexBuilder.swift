// IndexBuilder: the index of a store being opened, built part by part instead of one
// insertion at a time into the whole trie.
//
// Why: inserting a million keys one by one into the hash trie (HashIndex.swift) costs a
// cache miss or two each — the pages they land in are scattered over tens of megabytes —
// and that was most of the time an open took. The trie's root routes by the top 8 bits of
// a key's hash tag, so the entries are first dealt into 256 parts by those bits, each part
// keeping replay order; then each part is inserted into its own small trie (a few thousand
// keys per part for a million: its pages stay in cache), which resolves duplicates (a key
// written in several segments) and deletes exactly as insertion in replay order does, and
// its root child is grafted into the final root. The result is the trie insertion in
// replay order would have built (HashIndex.checkInvariants holds).
//
// Memory: 32 bytes per recovered entry until `build()` returns (keys over 15 bytes boxed,
// as the index keeps them), about what the index itself takes.
//
// Opened from an index image (IndexImage.swift), the builder starts from the image's
// tables instead and applies what the log holds after it one entry at a time: that is
// little (the log since the image was written), and the image's pages are copied only
// where it lands.

struct IndexBuilder {
    /// The key of the hash every table is filed by.
    let seed: UInt64
    /// Per table, the entries of each root part as slots, in replay order (a delete is a
    /// slot of size 0: no put record is that small).
    private var tables: [UInt32: [[IndexSlot]]] = [:]
    /// Opened from an image: its tables, changed by each entry as it is added.
    private var base: [UInt32: HashIndex]?
    /// Opened from an image: the live bytes of each segment (the image's, kept current).
    private var baseLiveBytes: [UInt32: Int] = [:]

    /// A builder of a new index keyed by `seed`.
    init(seed: UInt64) {
        self.seed = seed
    }

    /// A builder that continues the index loaded from an image.
    init(loaded: [UInt32: HashIndex], liveBytes: [UInt32: Int], seed: UInt64) {
        self.seed = seed
        base = loaded
        baseLiveBytes = liveBytes
    }

    /// Records a recovered put or delete, in replay order.
    mutating func add(_ entry: ScannedEntry) {
        if base != nil { return apply(entry) }
        let location = entry.kind == .put ? entry.location : Location(segment: 0, offset: 0, size: 0)
        let key = IndexKey(entry.key)
        let slot = HashIndex.makeSlot(key, location: location, tag: HashIndex.tag(key, seed: seed))
        tables[entry.table, default: Array(repeating: [], count: 1 << IndexNode.rootBits)][HashIndex.rootPart(slot.tag)].append(slot)
    }

    /// An entry applied to the loaded tables, as a commit applies it.
    private mutating func apply(_ entry: ScannedEntry) {
        let key = IndexKey(entry.key)
        let old: Location?
        if entry.kind == .put {
            old = base![entry.table, default: HashIndex(seed: seed)].update(key, to: entry.location)
            baseLiveBytes[entry.location.segment, default: 0] += Int(entry.location.size)
        } else {
            old = base![entry.table]?.remove(key)
            if base![entry.table]?.count == 0 { base![entry.table] = nil }
        }
        if let old { baseLiveBytes[old.segment, default: 0] -= Int(old.size) }
    }

    /// The index of every table, and the bytes of live records in each segment.
    consuming func build() -> (tables: [UInt32: HashIndex], liveBytes: [UInt32: Int]) {
        if let base { return (base, baseLiveBytes) }
        var built: [UInt32: HashIndex] = [:]
        var live: [UInt32: Int] = [:]
        for (table, parts) in tables {
            let root = IndexNode(branchAt: IndexNode.rootShift, bits: IndexNode.rootBits)
            var count = 0
            for (part, slots) in parts.enumerated() where !slots.isEmpty {
                let page = IndexBuilder.resolve(slots, pageShift: IndexNode.rootShift - IndexNode.branchBits, liveBytes: &live)
                guard page.count > 0 else { continue }
                count += page.count
                root.children[part] = IndexBuilder.reshape(page)
            }
            if count > 0 { built[table] = HashIndex(root: root, count: count, seed: seed) }
        }
        return (built, live)
    }

    /// One root part's entries, in replay order, applied to one flat page big enough for all
    /// of them: a put replaces the key's location, a delete removes it. Returns the page of
    /// the survivors (possibly larger than a page may be; ``reshape(_:)`` fixes that).
    private static func resolve(_ slots: [IndexSlot], pageShift: Int, liveBytes: inout [UInt32: Int]) -> IndexNode {
        let page = IndexNode(pageAt: pageShift, capacity: IndexNode.pageCapacity(for: slots.count))
        let stored = page.slots!
        for slot in slots {
            if let i = page.find(tag: slot.tag, matching: { $0.sameKey(as: slot, image: nil) }) {
                liveBytes[stored[i].segment, default: 0] -= Int(stored[i].size)
                slot.releaseBox()   // the page's slot keeps its own box
                if slot.size == 0 {
                    stored[i].releaseBox()
                    page.remove(at: i)
                } else {
                    stored[i].segment = slot.segment
                    stored[i].offset = slot.offset
                    stored[i].size = slot.size
                    liveBytes[slot.segment, default: 0] += Int(slot.size)
                }
            } else if slot.size != 0 {
                page.place(slot)
                liveBytes[slot.segment, default: 0] += Int(slot.size)
            } else {
                slot.releaseBox()   // a delete of a key not there
            }
        }
        return page
    }

    /// `page` laid out as HashIndex would have grown it: a page of the capacity its count
    /// needs, or, where a page that full would have split, a branch of 16 by the next hash
    /// bits with each part laid out the same way. Slots move with their key boxes.
    private static func reshape(_ page: IndexNode) -> IndexNode {
        let capacity = IndexNode.pageCapacity(for: page.count)
        if page.count <= IndexNode.maxPageEntries || page.shift < IndexNode.minimumSplitShift {
            if capacity == page.capacity { return page }
            let sized = IndexNode(pageAt: page.shift, capacity: capacity)
            page.moveAll { sized.place($0) }
            return sized
        }
        let branch = IndexNode(branchAt: page.shift, bits: IndexNode.branchBits)
        var parts = [[IndexSlot]](repeating: [], count: 1 << IndexNode.branchBits)
        page.moveAll { parts[branch.childIndex($0.tag)].append($0) }
        for (index, slots) in parts.enumerated() where !slots.isEmpty {
            let child = IndexNode(pageAt: page.shift - IndexNode.branchBits, capacity: IndexNode.pageCapacity(for: slots.count))
            for slot in slots { child.place(slot) }
            branch.children[index] = reshape(child)
        }
        return branch
    }
}
