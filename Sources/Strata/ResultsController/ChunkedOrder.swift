// ChunkedOrder: the ordered members of a results controller's section (32-bit member ids,
// see ControllerMembers), as a list of short sorted chunks, so inserting or removing one
// moves at most a chunk's worth of ids instead of the whole array (a million-object result
// changes in microseconds).

/// Member ids in order, stored in chunks of at most `chunkLimit`.
struct ChunkedOrder {
    typealias Member = Int32
    private(set) var chunks: [[Member]] = []
    private(set) var count = 0
    static let chunkLimit = 512

    init() {}

    init(_ keys: [Member]) {
        var start = 0
        while start < keys.count {
            let end = min(keys.count, start + Self.chunkLimit / 2)
            chunks.append(Array(keys[start ..< end]))
            start = end
        }
        count = keys.count
    }

    /// Every key, in order.
    var all: [Member] { chunks.flatMap { $0 } }

    /// The chunk and offset of global position `position` (`position == count` is the end).
    private func locate(_ position: Int) -> (chunk: Int, offset: Int) {
        var remaining = position
        for (index, chunk) in chunks.enumerated() {
            if remaining < chunk.count { return (index, remaining) }
            remaining -= chunk.count
        }
        return (max(0, chunks.count - 1), chunks.last?.count ?? 0)
    }

    subscript(position: Int) -> Member {
        let (chunk, offset) = locate(position)
        return chunks[chunk][offset]
    }

    /// Keys in positions `range`.
    func keys(in range: Range<Int>) -> [Member] {
        guard !range.isEmpty else { return [] }
        var result: [Member] = []
        result.reserveCapacity(range.count)
        var (chunk, offset) = locate(range.lowerBound)
        while result.count < range.count {
            result.append(chunks[chunk][offset])
            offset += 1
            if offset == chunks[chunk].count { chunk += 1; offset = 0 }
        }
        return result
    }

    mutating func remove(at position: Int) {
        let (chunk, offset) = locate(position)
        chunks[chunk].remove(at: offset)
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
        count -= 1
        assert(count >= 0 && (chunk >= chunks.count || !chunks[chunk].isEmpty), "ChunkedOrder.remove left an empty chunk")
    }

    mutating func insert(_ key: Member, at position: Int) {
        if chunks.isEmpty {
            chunks = [[key]]
            count = 1
            return
        }
        let (chunk, offset) = locate(position)
        chunks[chunk].insert(key, at: offset)
        if chunks[chunk].count > Self.chunkLimit {
            let half = chunks[chunk].count / 2
            let tail = Array(chunks[chunk][half...])
            chunks[chunk].removeSubrange(half...)
            chunks.insert(tail, at: chunk + 1)
        }
        count += 1
        assert(chunks[chunk].count <= Self.chunkLimit, "ChunkedOrder.insert left chunk \(chunk) over the limit")
    }

    /// Checks the structure (tests call it after mutations; debug builds check the chunk a
    /// mutation touched): no empty chunk, none over `chunkLimit`, `count` their total.
    /// Returns the first violation, or nil.
    func checkInvariants() -> String? {
        var total = 0
        for (index, chunk) in chunks.enumerated() {
            if chunk.isEmpty { return "chunk \(index) is empty" }
            if chunk.count > Self.chunkLimit { return "chunk \(index) holds \(chunk.count) keys, over \(Self.chunkLimit)" }
            total += chunk.count
        }
        return total == count ? nil : "count is \(count) but the chunks hold \(total) keys"
    }

    /// The first position whose key does not satisfy `before` (keys must be partitioned:
    /// all that satisfy it come first).
    func lowerBound(_ before: (Member) -> Bool) -> Int {
        // The first chunk whose last key is not before; then within it.
        var low = 0, high = chunks.count
        while low < high {
            let mid = (low + high) / 2
            if before(chunks[mid][chunks[mid].count - 1]) { low = mid + 1 } else { high = mid }
        }
        let prefix = chunks[..<low].reduce(0) { $0 + $1.count }
        guard low < chunks.count else { return prefix }
        let chunk = chunks[low]
        var a = 0, b = chunk.count
        while a < b {
            let mid = (a + b) / 2
            if before(chunk[mid]) { a = mid + 1 } else { b = mid }
        }
        return prefix + a
    }
}
