// HashIndex: the key directory of one table, a persistent hash map built for this engine.
//
// Why not a general-purpose persistent map: the index is the engine's hottest and largest
// structure. A HAMT touches one node per level (four or five cache misses on a million
// keys) and stores entries behind generic layouts. This index is a shallow trie on the
// key's hash whose leaves are flat open-addressing pages of 32-byte slots: a lookup walks
// one or two small, cache-resident branch nodes and then usually reads one cache line.
//
// Persistence: nodes are immutable once shared. A writer copies the nodes on its path
// (the root's child array, maybe one branch, one page) the first time it touches them
// after a snapshot was taken, so a snapshot is O(1) and a commit costs O(page size).
//
// Costs: lookup O(1) expected; insert O(1) amortised (pages grow by half, and split into
// 16 when they would hold more than `maxPageEntries`); copy on first write after a
// snapshot ≤ 42 KiB. Memory: 32 bytes a slot at a load factor between 7/12 and 7/8 (pages
// take any capacity, not only powers of two: a page that doubled would sit half empty),
// 7/10 in an index built at open, so about 46 bytes a key, plus, for keys longer than 15
// bytes, a box holding the bytes.

import CStrataSupport

/// The bytes of a key longer than fits inline; shared by every page that refers to it.
final class KeyBox: @unchecked Sendable {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

/// One slot of a page: the key (inline, a retained KeyBox, or bytes in the index image it
/// was loaded from), where its record is, and the upper 32 bits of its hash as a tag (0 =
/// empty). The layout is also the index image's (IndexImage.swift): 32 bytes, native order.
struct IndexSlot {
    var k0: UInt64
    var k1: UInt64
    var segment: UInt32
    var offset: UInt32
    var size: UInt32
    var tag: UInt32

    /// For boxed keys the top byte of `k1` is 0xFF and `k0` holds the box's address.
    static let boxedMarker: UInt64 = 0xFF << 56
    /// For keys in an index image the top byte of `k1` is 0xFE, its low 32 bits the key's
    /// length, and `k0` the offset of its bytes from the image's start. (An inline key's
    /// top byte is its length, at most 15.)
    static let mappedMarker: UInt64 = 0xFE << 56

    var isInline: Bool { k1 >> 56 <= UInt64(IndexKey.inlineCapacity) }
    var isBoxed: Bool { k1 >> 56 == 0xFF }
    var isMapped: Bool { k1 >> 56 == 0xFE }
    var box: KeyBox { Unmanaged<KeyBox>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(k0))!).takeUnretainedValue() }
    var location: Location { Location(segment: segment, offset: offset, size: size) }

    /// Calls `body` with the bytes of a key that is not inline: its box's, or those in the
    /// image starting at `image` (checked in bounds when the image was loaded).
    @inline(__always)
    func withLongKey<R>(image: UnsafeRawPointer?, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if isBoxed { return box.bytes.withUnsafeBytes(body) }
        return body(UnsafeRawBufferPointer(start: image! + Int(k0), count: Int(truncatingIfNeeded: k1 & 0xFFFF_FFFF)))
    }

    @inline(__always)
    func matches(_ key: IndexKey, image: UnsafeRawPointer?) -> Bool {
        // An inline key's words never equal a long key's (their top bytes differ).
        if !key.isHeap { return key.inlineWords == (k0, k1) }
        return !isInline && withLongKey(image: image) { stored in key.withBytes { $0.elementsEqual(stored) } }
    }

    func key(image: UnsafeRawPointer?) -> IndexKey {
        isInline ? IndexKey(inlineWords: (k0, k1)) : withLongKey(image: image) { IndexKey($0) }
    }

    /// Whether `other` holds the same key.
    func sameKey(as other: IndexSlot, image: UnsafeRawPointer?) -> Bool {
        if isInline || other.isInline { return (k0, k1) == (other.k0, other.k1) }
        return withLongKey(image: image) { mine in other.withLongKey(image: image) { mine.elementsEqual($0) } }
    }

    /// Gives up this slot's reference to its key box (a slot dropped without a page).
    func releaseBox() {
        if isBoxed { Unmanaged<KeyBox>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(k0))!).release() }
    }
}

/// A node of the trie: a branch (children by 4 or 8 hash bits) or a leaf page.
final class IndexNode: @unchecked Sendable {
    // @unchecked: a node is mutated only while its single owner holds it uniquely
    // (checked with isKnownUniquelyReferenced); shared nodes are immutable.

    /// Branch: one child per value of the hash bits at `shift`.
    @exclusivity(unchecked) var children: ContiguousArray<IndexNode?> {
        didSet { childTable = IndexNode.table(of: children) }
    }
    /// `children`'s elements, for the lookup's walk: it reads a child's address from here
    /// without retaining the array or the child (a lookup's retains and releases of the
    /// nodes and their arrays on its way down were a quarter of a point read).
    @exclusivity(unchecked) private(set) var childTable: UnsafeRawPointer?
    /// Branches: `children.count - 1` (the count is fixed); pages: 0.
    let childMask: Int
    /// Leaf: the slot array (nil for branches). A page of an index image may be read only
    /// once ``isReadable`` said so (its first reader checks it).
    // Exclusivity unchecked: a node is mutated only by the one writer that holds it
    // uniquely (see above), never while another access is under way.
    @exclusivity(unchecked) var slots: UnsafeMutablePointer<IndexSlot>?
    /// The index image whose mapping holds this page's slots, or nil (they are this node's).
    let image: IndexImage?
    /// This page's number in `image`.
    let imagePage: Int
    /// This page's check state in `image` (which keeps it allocated): read here, a lookup
    /// touches no reference count of the shared image.
    private let checkState: UnsafePointer<UInt8>?
    /// False for a page whose slots lie in an index image: a writer copies it before any
    /// change, however uniquely it holds it, and it frees nothing.
    var ownsSlots: Bool { image == nil }
    var capacity: Int
    var count: Int
    /// Branches: the lowest tag bit this node routes by. Pages: the shift a branch would
    /// route by if this page split (below `minimumSplitShift` it grows instead).
    let shift: Int
    /// Pages: how many low tag bits (from bit 1) place an entry in the page — every bit
    /// below the ones the branches above route by, which are the same for all its entries.
    let probeBits: Int

    // Routing and probing both use the 32-bit tag (the hash's upper half), from opposite
    // ends: the root routes by tag bits 24...31, each branch level by the next 4 bits down,
    // and a page places an entry by the bits below those (multiplied into its capacity, so
    // any capacity spreads them evenly). Splitting a page never needs to rehash a key.
    static let rootBits = 8
    static let rootShift = 24
    static let branchBits = 4
    static let minimumSplitShift = 12
    /// A page at `minimumSplitShift` or above splits rather than hold more entries.
    static let maxPageEntries = 896
    static let initialPageCapacity = 8

    var isLeaf: Bool { slots != nil }

    /// Whether this page's slots may be read: always for a page in memory; for a page of an
    /// index image once checked (checked now, by this caller, if no one did before). False
    /// only when the image page is damaged and the log it covers could not rebuild it.
    @inline(__always)
    var isReadable: Bool {
        guard let checkState else { return true }
        if strata_load_acquire_u8(checkState) == IndexImage.checked { return true }
        return image!.isReadable(imagePage)
    }

    /// Throws the image's error unless ``isReadable``.
    func checkReadable() throws {
        if !isReadable { throw image!.damageError(page: imagePage) }
    }

    /// The capacity a page built for `count` entries gets: room for them at a load of 7/10
    /// (the builder sizes pages once; inserts grow them from there). At 4/5 the index took
    /// 40 bytes a key instead of 46, but a lookup missed the cache 6% more often.
    static func pageCapacity(for count: Int) -> Int {
        max(initialPageCapacity, (count * 10 + 6) / 7)
    }

    /// The capacity a full page grows to: double while small (few keys live in small pages,
    /// and each growth costs an allocation), then half as much again. (A quarter more would
    /// save 3 bytes a key but cost ~15% more instructions per insert in rehashing, measured.)
    static func grownCapacity(from capacity: Int) -> Int {
        capacity < 128 ? capacity * 2 : capacity + capacity / 2
    }

    /// Hands every entry of this page to `body` and empties the page; each entry's key box,
    /// if any, goes with it (the page no longer releases it).
    func moveAll(_ body: (IndexSlot) -> Void) {
        let slots = self.slots!
        for i in 0 ..< capacity where slots[i].tag != 0 {
            body(slots[i])
            slots[i].tag = 0
        }
        count = 0
    }

    init(branchAt shift: Int, bits: Int) {
        children = ContiguousArray(repeating: nil, count: 1 << bits)
        childTable = IndexNode.table(of: children)
        childMask = (1 << bits) - 1
        slots = nil
        image = nil
        imagePage = 0
        checkState = nil
        capacity = 0
        count = 0
        self.shift = shift
        probeBits = 0
    }

    init(pageAt shift: Int, capacity: Int) {
        children = []
        childMask = 0
        self.capacity = capacity
        count = 0
        self.shift = shift
        probeBits = shift + IndexNode.branchBits - 1
        image = nil
        imagePage = 0
        checkState = nil
        let storage = UnsafeMutablePointer<IndexSlot>.allocate(capacity: capacity)
        storage.initialize(repeating: IndexSlot(k0: 0, k1: 0, segment: 0, offset: 0, size: 0, tag: 0), count: capacity)
        slots = storage
    }

    /// Page `page` of `image`, whose `count` entries lie in `capacity` slots at `slots`,
    /// read in place once checked (``isReadable``).
    init(imagePageAt shift: Int, capacity: Int, count: Int, slots: UnsafeMutablePointer<IndexSlot>, image: IndexImage, page: Int) {
        children = []
        childMask = 0
        self.capacity = capacity
        self.count = count
        self.shift = shift
        probeBits = shift + IndexNode.branchBits - 1
        self.image = image
        imagePage = page
        checkState = image.state(of: page)
        self.slots = slots
    }

    /// A private copy of `other`, for a writer about to change a shared node. A damaged
    /// image page (``isReadable`` false) is copied empty: nothing is read from it, and the
    /// store refuses to commit a write that touched it.
    init(copying other: IndexNode) {
        children = other.children
        childTable = other.childTable
        childMask = other.childMask
        capacity = other.capacity
        count = other.count
        shift = other.shift
        probeBits = other.probeBits
        image = nil
        imagePage = 0
        checkState = nil
        if let source = other.slots {
            let storage = UnsafeMutablePointer<IndexSlot>.allocate(capacity: capacity)
            if other.isReadable {
                storage.initialize(from: source, count: capacity)
            } else {
                storage.initialize(repeating: IndexSlot(k0: 0, k1: 0, segment: 0, offset: 0, size: 0, tag: 0), count: capacity)
                count = 0
            }
            for i in 0 ..< capacity where storage[i].tag != 0 && storage[i].isBoxed {
                _ = Unmanaged<KeyBox>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(storage[i].k0))!).retain()
            }
            slots = storage
        } else {
            slots = nil
        }
    }

    deinit {
        guard let slots, ownsSlots else { return }
        for i in 0 ..< capacity where slots[i].tag != 0 && slots[i].isBoxed {
            Unmanaged<KeyBox>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(slots[i].k0))!).release()
        }
        slots.deinitialize(count: capacity)
        slots.deallocate()
    }

    /// Where `children`'s elements lie (an optional reference is one address, 0 for nil).
    private static func table(of children: ContiguousArray<IndexNode?>) -> UnsafeRawPointer? {
        children.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    /// The child routing `tag` of a branch, unretained: valid while the branch is.
    @inline(__always)
    func unretainedChild(_ tag: UInt32) -> UnsafeRawPointer? {
        childTable.unsafelyUnwrapped.load(fromByteOffset: childIndex(tag) &* MemoryLayout<UnsafeRawPointer?>.stride,
                                          as: UnsafeRawPointer?.self)
    }

    @inline(__always)
    func childIndex(_ tag: UInt32) -> Int {
        Int(truncatingIfNeeded: tag >> UInt32(shift)) & childMask
    }

    /// Where an entry with `tag` starts its probe: its probe bits scaled to the capacity.
    @inline(__always)
    func home(_ tag: UInt32) -> Int {
        let bits = UInt64(tag >> 1) & ((1 << UInt64(probeBits)) - 1)
        return Int(truncatingIfNeeded: (bits &* UInt64(capacity)) >> UInt64(probeBits))
    }

    /// The slot after `i`, wrapping at the end.
    @inline(__always)
    func next(_ i: Int) -> Int {
        i + 1 == capacity ? 0 : i + 1
    }

    // MARK: Page operations

    /// The slot holding `key`, or nil; `image` is where keys in an index image start.
    @inline(__always)
    func find(_ key: IndexKey, tag: UInt32, image: UnsafeRawPointer?) -> Int? {
        find(tag: tag, matching: { $0.matches(key, image: image) })
    }

    /// The slot with `tag` that `matching` accepts, or nil.
    @inline(__always)
    func find(tag: UInt32, matching: (IndexSlot) -> Bool) -> Int? {
        let slots = self.slots!
        var i = home(tag)
        while true {
            let slot = slots[i]
            if slot.tag == 0 { return nil }
            if slot.tag == tag && matching(slot) { return i }
            i = next(i)
        }
    }

    /// Places a new entry (the key must not be present and there must be room).
    func place(_ slot: IndexSlot) {
        let slots = self.slots!
        var i = home(slot.tag)
        while slots[i].tag != 0 { i = next(i) }
        slots[i] = slot
        count += 1
    }

    /// Removes the entry in slot `hole`, shifting later entries of its probe run back so
    /// that no tombstones are needed. The caller releases a boxed key.
    func remove(at hole: Int) {
        let slots = self.slots!
        var i = hole
        var j = next(i)
        while slots[j].tag != 0 {
            let ideal = home(slots[j].tag)
            let stays = i <= j ? (i < ideal && ideal <= j) : (i < ideal || ideal <= j)
            if !stays {
                slots[i] = slots[j]
                i = j
            }
            j = next(j)
        }
        slots[i].tag = 0
        count -= 1
    }

    /// Grows the page by a quarter, rehashing into new storage.
    func grow() {
        let old = slots!, oldCapacity = capacity
        capacity = IndexNode.grownCapacity(from: capacity)
        let storage = UnsafeMutablePointer<IndexSlot>.allocate(capacity: capacity)
        storage.initialize(repeating: IndexSlot(k0: 0, k1: 0, segment: 0, offset: 0, size: 0, tag: 0), count: capacity)
        slots = storage
        count = 0
        for i in 0 ..< oldCapacity where old[i].tag != 0 { place(old[i]) }
        old.deinitialize(count: oldCapacity)
        old.deallocate()
    }
}

/// The index of one table: a persistent map from key to record location.
struct HashIndex: Sendable {
    private(set) var root: IndexNode?
    private(set) var count = 0
    /// The key of the hash (IndexHash): every index of a store shares it.
    let seed: UInt64
    /// The index image some of the pages (and long keys) were loaded from, kept mapped for
    /// as long as this index or a copy of it lives.
    let image: IndexImage?
    /// `image`'s first byte, as an address (keys in the image are offsets from it).
    private let imageAddress: UInt

    init(seed: UInt64) {
        self.seed = seed
        image = nil
        imageAddress = 0
    }

    /// An index whose trie was built whole (IndexBuilder.swift) or loaded from `image`.
    init(root: IndexNode, count: Int, seed: UInt64, image: IndexImage? = nil) {
        self.root = root
        self.count = count
        self.seed = seed
        self.image = image
        imageAddress = image.map { UInt(bitPattern: $0.base) } ?? 0
    }

    /// Which child of the root routes `tag`.
    @inline(__always)
    static func rootPart(_ tag: UInt32) -> Int { Int(tag >> UInt32(IndexNode.rootShift)) }

    /// The tag `key` is filed under in an index keyed by `seed`.
    @inline(__always)
    static func tag(_ key: IndexKey, seed: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: IndexHash.hash(key, seed: seed) >> 32) | 1
    }

    /// The tag `key` is filed under in this index.
    @inline(__always)
    func tag(_ key: IndexKey) -> UInt32 { HashIndex.tag(key, seed: seed) }

    /// Where the keys of the image start (nil when there is none).
    @inline(__always)
    private var imageBase: UnsafeRawPointer? { UnsafeRawPointer(bitPattern: imageAddress) }

    func lookup(_ key: IndexKey) -> Location? {
        lookup(key, tag: tag(key))
    }

    /// `lookup` with the key's tag already computed.
    func lookup(_ key: IndexKey, tag: UInt32) -> Location? {
        // `self`, borrowed for the call, keeps the whole trie alive: the walk reaches each
        // node through an unretained, guaranteed reference (this is the read path's hottest
        // loop; retaining each node and its child array on the way down was a quarter of a
        // point read).
        guard root != nil else { return nil }
        var node = Unmanaged<IndexNode>.passUnretained(root.unsafelyUnwrapped)
        while true {
            let step = node._withUnsafeGuaranteedRef { node -> (isPage: Bool, child: UnsafeRawPointer?) in
                node.slots != nil ? (true, nil) : (false, node.unretainedChild(tag))
            }
            if step.isPage { break }
            guard let child = step.child else { return nil }
            node = Unmanaged<IndexNode>.fromOpaque(child)
        }
        let image = imageBase
        return node._withUnsafeGuaranteedRef { page -> Location? in
            guard page.isReadable else { return Location.unreadable(imagePage: page.imagePage) }
            guard let i = page.find(key, tag: tag, image: image) else { return nil }
            return page.slots.unsafelyUnwrapped[i].location
        }
    }

    /// Sets `key` to `location`; returns the location it replaces, if any.
    @discardableResult
    mutating func update(_ key: IndexKey, to location: Location) -> Location? {
        let tag = self.tag(key)
        let image = imageBase
        if root == nil { root = IndexNode(branchAt: IndexNode.rootShift, bits: IndexNode.rootBits) }
        if !isKnownUniquelyReferenced(&root!) { root = IndexNode(copying: root!) }
        var parent = root!
        while true {
            let index = parent.childIndex(tag)
            if parent.children[index] == nil {
                parent.children[index] = IndexNode(pageAt: parent.shift - IndexNode.branchBits,
                                                   capacity: IndexNode.initialPageCapacity)
            } else if !isKnownUniquelyReferenced(&parent.children[index]) || !parent.children[index]!.ownsSlots {
                parent.children[index] = IndexNode(copying: parent.children[index]!)
            }
            let child = parent.children[index]!
            if !child.isLeaf {
                parent = child
                continue
            }
            if let i = child.find(key, tag: tag, image: image) {
                let slots = child.slots!
                let old = slots[i].location
                slots[i].segment = location.segment
                slots[i].offset = location.offset
                slots[i].size = location.size
                return old
            }
            if (child.count + 1) * 8 > child.capacity * 7 {
                if child.count < IndexNode.maxPageEntries || child.shift < IndexNode.minimumSplitShift {
                    child.grow()
                } else {
                    parent.children[index] = HashIndex.split(child)
                    continue
                }
            }
            child.place(HashIndex.makeSlot(key, location: location, tag: tag))
            count += 1
            return nil
        }
    }

    /// Walks to the page that holds (or would hold) `tag`, copying every shared node on the
    /// way so the page may be changed; nil if the path ends before a page.
    private mutating func uniqueLeaf(for tag: UInt32) -> IndexNode? {
        guard root != nil else { return nil }
        if !isKnownUniquelyReferenced(&root!) { root = IndexNode(copying: root!) }
        var node = root!
        while true {
            let index = node.childIndex(tag)
            guard node.children[index] != nil else { return nil }
            if !isKnownUniquelyReferenced(&node.children[index]) || !node.children[index]!.ownsSlots {
                node.children[index] = IndexNode(copying: node.children[index]!)
            }
            let child = node.children[index]!
            if child.isLeaf { return child }
            node = child
        }
    }

    /// Moves `key` to `new` only if it is still at `expected` (one traversal: compaction's
    /// switch). Returns whether it moved.
    mutating func replace(_ key: IndexKey, tag: UInt32, expected: Location, with new: Location) -> Bool {
        guard lookup(key, tag: tag) == expected, let page = uniqueLeaf(for: tag),
              let i = page.find(key, tag: tag, image: imageBase) else { return false }
        let slots = page.slots!
        slots[i].segment = new.segment
        slots[i].offset = new.offset
        slots[i].size = new.size
        return true
    }

    /// Removes `key`; returns the location it had.
    @discardableResult
    mutating func remove(_ key: IndexKey) -> Location? {
        let tag = self.tag(key)
        guard let found = lookup(key, tag: tag), !found.isUnreadable, let page = uniqueLeaf(for: tag),
              let i = page.find(key, tag: tag, image: imageBase) else { return nil }
        let slot = page.slots![i]
        page.remove(at: i)
        if slot.isBoxed { Unmanaged<KeyBox>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(slot.k0))!).release() }
        count -= 1
        return slot.location
    }

    /// Replaces a full page by a branch of 16 pages, each taking the keys of its next 4 hash bits.
    private static func split(_ page: IndexNode) -> IndexNode {
        let branch = IndexNode(branchAt: page.shift, bits: IndexNode.branchBits)
        let slots = page.slots!
        for i in 0 ..< page.capacity where slots[i].tag != 0 {
            let childIndex = branch.childIndex(slots[i].tag)
            if branch.children[childIndex] == nil {
                branch.children[childIndex] = IndexNode(pageAt: page.shift - IndexNode.branchBits,
                                                        capacity: IndexNode.pageCapacity(for: page.count >> IndexNode.branchBits))
            }
            let child = branch.children[childIndex]!
            if (child.count + 1) * 8 > child.capacity * 7 { child.grow() }
            let slot = slots[i]
            if slot.isBoxed {
                // The box moves to the new page: it gains a reference, the old page loses one at deinit.
                _ = Unmanaged<KeyBox>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(slot.k0))!).retain()
            }
            child.place(slot)
        }
        return branch
    }

    /// The slot for `key` at `location` filed under `tag`; a key over 15 bytes gets a box,
    /// retained once.
    static func makeSlot(_ key: IndexKey, location: Location, tag: UInt32) -> IndexSlot {
        let words: (UInt64, UInt64)
        if key.isHeap {
            let box = Unmanaged.passRetained(KeyBox(key.bytes))
            words = (UInt64(UInt(bitPattern: box.toOpaque())), IndexSlot.boxedMarker | UInt64(key.count))
        } else {
            words = key.inlineWords
        }
        return IndexSlot(k0: words.0, k1: words.1, segment: location.segment, offset: location.offset,
                         size: location.size, tag: tag)
    }

    /// Calls `body` for every entry, in no particular order. Throws `corrupted` if a page of
    /// an index image is damaged (and could not be rebuilt), after every other page's entries.
    func forEach(_ body: (IndexKey, Location) throws -> Void) throws {
        var damage: StoreError?
        try forEach(damaged: { damage = damage ?? $0 }, body)
        if let damage { throw damage }
    }

    /// Calls `body` for every entry, in no particular order, and `damaged` for each page of
    /// an index image that is damaged (and could not be rebuilt) instead of its entries.
    func forEach(damaged: (StoreError) -> Void, _ body: (IndexKey, Location) throws -> Void) rethrows {
        guard let root else { return }
        try HashIndex.visit(root, image: imageBase, damaged: damaged, body)
    }

    /// Calls `body` for every entry whose tag is `route` above bit `shift` (`tag >> shift ==
    /// route`: the keys of one page of another trie of the same seed), walking down only the
    /// branches those bits choose. For an index holding no image keys.
    func forEach(tagRoute route: UInt32, above shift: Int, _ body: (IndexKey, Location) -> Void) {
        guard var node = root else { return }
        while !node.isLeaf && node.shift >= shift {
            guard let child = node.children[node.childIndex(route << UInt32(shift))] else { return }
            node = child
        }
        HashIndex.visit(node, tagRoute: route, above: shift, body)
    }

    private static func visit(_ node: IndexNode, tagRoute route: UInt32, above shift: Int, _ body: (IndexKey, Location) -> Void) {
        if let slots = node.slots {
            for i in 0 ..< node.capacity where slots[i].tag != 0 && slots[i].tag >> UInt32(shift) == route {
                body(slots[i].key(image: nil), slots[i].location)
            }
        } else {
            for child in node.children { if let child { visit(child, tagRoute: route, above: shift, body) } }
        }
    }

    /// Calls `body` with every entry's location, without materialising keys (compaction's
    /// liveness pass walks the whole index this way, page by page). Throws as ``forEach(_:)``.
    func forEachLocation(_ body: (Location) -> Void) throws {
        guard let root else { return }
        // Every page checked first: a pass must not stop halfway.
        if let damage = HashIndex.firstDamage(root) { throw damage }
        HashIndex.visitLocations(root, body)
    }

    private static func firstDamage(_ node: IndexNode) -> StoreError? {
        if node.isLeaf { return node.isReadable ? nil : node.image!.damageError(page: node.imagePage) }
        for child in node.children { if let child, let damage = firstDamage(child) { return damage } }
        return nil
    }

    /// After ``firstDamage(_:)`` found every page readable.
    private static func visitLocations(_ node: IndexNode, _ body: (Location) -> Void) {
        if let slots = node.slots {
            for i in 0 ..< node.capacity where slots[i].tag != 0 { body(slots[i].location) }
        } else {
            for child in node.children { if let child { visitLocations(child, body) } }
        }
    }

    private static func visit(_ node: IndexNode, image: UnsafeRawPointer?, damaged: (StoreError) -> Void,
                              _ body: (IndexKey, Location) throws -> Void) rethrows {
        if let slots = node.slots {
            guard node.isReadable else { return damaged(node.image!.damageError(page: node.imagePage)) }
            for i in 0 ..< node.capacity where slots[i].tag != 0 { try body(slots[i].key(image: image), slots[i].location) }
        } else {
            for child in node.children { if let child { try visit(child, image: image, damaged: damaged, body) } }
        }
    }

    /// Bytes of memory this index holds: slots, node headers, branch arrays, key boxes.
    /// Pages still read in place from an index image count as they would in memory: they
    /// are resident once touched (as page cache, shared with other processes).
    var memoryBytes: Int {
        guard let root else { return 0 }
        return HashIndex.measure(root)
    }

    private static func measure(_ node: IndexNode) -> Int {
        var total = 80   // the node object
        if let slots = node.slots {
            // Slot words only, never read through; but a page being rebuilt is being
            // written: read it once its check is done (a damaged one counts as empty).
            guard node.isReadable else { return total + node.capacity * MemoryLayout<IndexSlot>.stride }
            total += node.capacity * MemoryLayout<IndexSlot>.stride
            for i in 0 ..< node.capacity where slots[i].tag != 0 && !slots[i].isInline {
                total += 48 + ((Int(truncatingIfNeeded: slots[i].k1 & 0xFFFF_FFFF) + 15) & ~15)
            }
        } else {
            total += 32 + node.children.count * 8
            for child in node.children { if let child { total += measure(child) } }
        }
        return total
    }

    /// Checks the structure's invariants (tests call this after mutations).
    func checkInvariants() -> String? {
        guard let root else { return count == 0 ? nil : "empty index with count \(count)" }
        var seen = 0
        if let problem = check(root, route: [], seen: &seen) { return problem }
        return seen == count ? nil : "count \(count) but \(seen) entries"
    }

    /// `route`: the (shift, fan-out mask, child index) of every branch above `node`.
    private func check(_ node: IndexNode, route: [(Int, UInt32, UInt32)], seen: inout Int) -> String? {
        if let slots = node.slots {
            guard node.isReadable else { return "a damaged index image page" }
            var used = 0
            for i in 0 ..< node.capacity where slots[i].tag != 0 {
                used += 1
                if tag(slots[i].key(image: imageBase)) != slots[i].tag { return "slot tag does not match its key's hash" }
                for (shift, fanout, index) in route where (slots[i].tag >> UInt32(shift)) & fanout != index {
                    return "key in the wrong page"
                }
                // Reachable from its home position without crossing an empty slot.
                var j = node.home(slots[i].tag)
                while j != i {
                    if slots[j].tag == 0 { return "probe run broken" }
                    j = node.next(j)
                }
            }
            if used != node.count { return "page count \(node.count) but \(used) used slots" }
            if used * 8 > node.capacity * 7 { return "page over its load factor" }
            seen += used
            return nil
        }
        for (i, child) in node.children.enumerated() {
            guard let child else { continue }
            let step = (node.shift, UInt32(node.children.count - 1), UInt32(i))
            if let problem = check(child, route: route + [step], seen: &seen) { return problem }
        }
        return nil
    }
}
