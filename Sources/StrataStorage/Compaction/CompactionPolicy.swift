// CompactionPolicy: when automatic compaction starts and which segments it rewrites.
// Modelled on Bitcask's merge thresholds, with one addition: a store-wide trigger on the
// dead fraction, which is what keeps an update-heavy store near its live size.

/// Thresholds for automatic compaction (``AutoCompaction/custom(_:)``); the defaults are
/// ``CompactionPolicy/default``.
///
/// Compaction **starts** when the store holds at least ``minimumDeadBytes`` of dead bytes and
/// any of: dead bytes are at least ``triggerDeadFraction`` of all segment bytes; one sealed
/// segment is at least ``triggerSegmentDeadFraction`` dead; or dead bytes reach
/// ``triggerDeadBytes``. It then **includes** every sealed segment that is at least
/// ``includeDeadFraction`` dead (or, when the store-wide trigger fired, at least as dead as the
/// store as a whole), holds ``includeDeadBytes`` dead bytes, or is smaller than
/// ``smallSegmentFraction`` of the segment size (so small files get merged).
public struct CompactionPolicy: Sendable, Equatable {
    /// Store-wide dead fraction that starts a compaction (default 0.15: disk ≈ 1.18 × live).
    public var triggerDeadFraction: Double = 0.15
    /// Dead fraction of a single sealed segment that starts a compaction (Bitcask: 0.6).
    public var triggerSegmentDeadFraction: Double = 0.6
    /// Dead bytes that start a compaction whatever the fractions (Bitcask: 512 MB).
    public var triggerDeadBytes: Int = 512 << 20
    /// Below this many dead bytes nothing starts, so small stores do not churn (default
    /// 1 MiB, and never more than one segment: a store with small segments compacts finely).
    public var minimumDeadBytes: Int = 1 << 20
    /// A sealed segment at least this dead is included (Bitcask: 0.4; default 0.3).
    public var includeDeadFraction: Double = 0.3
    /// A sealed segment with at least this many dead bytes is included (Bitcask: 128 MB).
    public var includeDeadBytes: Int = 128 << 20
    /// A sealed segment smaller than this fraction of `segmentSize` is included (default 0.25).
    public var smallSegmentFraction: Double = 0.25

    /// The default thresholds; change the fields you want.
    public init() {}

    /// The default thresholds, documented on each property.
    public static let `default` = CompactionPolicy()

    /// Whether these figures call for a compaction.
    func shouldStart(sealed: [SegmentSpace], all: [SegmentSpace], segmentSize: Int) -> Bool {
        let disk = all.reduce(0) { $0 + $1.diskBytes }
        let dead = all.reduce(0) { $0 + max(0, $1.diskBytes - $1.liveBytes) }
        let sealedDead = sealed.reduce(0) { $0 + max(0, $1.diskBytes - $1.liveBytes) }
        guard sealedDead >= min(minimumDeadBytes, segmentSize), disk > 0 else { return false }
        if Double(dead) >= triggerDeadFraction * Double(disk) { return true }
        if dead >= triggerDeadBytes { return true }
        return sealed.contains { $0.diskBytes > 0 && Double($0.diskBytes - $0.liveBytes) >= triggerSegmentDeadFraction * Double($0.diskBytes) }
    }

    /// Whether a sealed segment belongs in the compaction, given the store-wide dead fraction.
    func includes(_ segment: SegmentSpace, storeDeadFraction: Double, segmentSize: Int) -> Bool {
        let dead = max(0, segment.diskBytes - segment.liveBytes)
        guard segment.diskBytes > 0 else { return false }
        let fraction = Double(dead) / Double(segment.diskBytes)
        if fraction >= min(includeDeadFraction, max(storeDeadFraction, 0.01)) { return true }
        if dead >= includeDeadBytes { return true }
        return Double(segment.diskBytes) < smallSegmentFraction * Double(segmentSize)
    }
}

/// What one compaction did, from ``Store/compact()``.
public struct CompactionReport: Sendable, Equatable {
    /// Segments rewritten and deleted.
    public var segmentsCompacted = 0
    /// New (compacted) segments written.
    public var segmentsWritten = 0
    /// Bytes of all segment files before the compaction.
    public var diskBytesBefore = 0
    /// Bytes of all segment files after it (commits made meanwhile included).
    public var diskBytesAfter = 0
    /// Bytes the compaction gave back to the file system.
    public var reclaimedBytes: Int { max(0, diskBytesBefore - diskBytesAfter) }
    /// Bytes read from the compacted segments.
    public var bytesRead = 0
    /// Bytes written to the new, compacted segments.
    public var bytesWritten = 0
    /// Live records copied.
    public var recordsCopied = 0
    /// Tombstones kept because they still hide older records outside the compaction.
    public var tombstonesKept = 0
    /// Copied records left unused because a commit replaced them while the compaction ran.
    public var recordsSupersededDuringCompaction = 0
    /// Wall-clock duration, in seconds.
    public var seconds = 0.0
    /// The longest time the compaction held the write gate (a writer's longest wait on it), in seconds.
    public var longestWriterPause = 0.0
}

/// What a compaction would do now, from ``Store/compactionEstimate()`` (`strata compact --dry-run`).
public struct CompactionEstimate: Sendable, Equatable {
    /// Segments that would be rewritten (all sealed segments with dead bytes, and the active
    /// segment if it holds data).
    public var segments: Int
    /// Bytes of those segments.
    public var bytes: Int
    /// Bytes that would stay (their live records); the rest would be reclaimed.
    public var liveBytes: Int
    /// Bytes the compaction would give back.
    public var reclaimableBytes: Int { max(0, bytes - liveBytes) }
}
