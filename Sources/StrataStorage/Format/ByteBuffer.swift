// ByteBuffer: a growable, manually managed byte buffer that records are encoded into.
// A [UInt8] would do, but encoding writes fields at computed offsets and compresses in
// place; a raw buffer makes that one bounds check per record instead of one per byte.

final class ByteBuffer {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    var count: Int = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// Makes room for `extra` more bytes past `count`.
    func reserve(_ extra: Int) {
        let needed = count + extra
        guard needed > capacity else { return }
        var newCapacity = capacity
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    func removeAll(keepingCapacityUpTo limit: Int) {
        count = 0
        if capacity > limit {
            base.deallocate()
            capacity = limit
            base = UnsafeMutableRawPointer.allocate(byteCount: limit, alignment: 16)
        }
    }
}
