// StoreStats: where a store's bytes are, at one moment.

/// Space accounting of one segment file.
public struct SegmentStats: Sendable, Equatable {
    /// The segment's number (its file is `NNNNNNNN.seg`).
    public var id: UInt32
    /// Bytes in the file.
    public var diskBytes: Int
    /// Bytes of records that the newest state still reads.
    public var liveBytes: Int
    /// Bytes of overwritten or deleted records, tombstones, commit records and headers.
    public var deadBytes: Int { max(0, diskBytes - liveBytes) }
    /// Whether the segment is sealed (immutable) or the active one.
    public var sealed: Bool
    /// Whether the segment was written by compaction.
    public var compacted: Bool = false
}

/// A picture of a store's space and index, from ``Store/stats``.
public struct StoreStats: Sendable, Equatable {
    /// Number of segment files.
    public var segments: Int
    /// Bytes of live records (what a perfect compaction would keep).
    public var liveBytes: Int
    /// Bytes in segment files that no longer hold live data.
    public var deadBytes: Int
    /// Bytes of all the store's files on disk (segments, hint files, metadata).
    public var diskBytes: Int
    /// Live keys over all tables.
    public var keys: Int
    /// Estimated memory held by the in-memory index, in bytes.
    public var indexBytes: Int
    /// Uncompressed value bytes divided by stored value bytes, over live values (1 = no gain).
    public var compressionRatio: Double
    /// The sequence number of the newest commit.
    public var lastSequence: UInt64
    /// Per-segment detail, in segment order.
    public var segmentDetails: [SegmentStats]
    /// Bytes of segments that compaction deleted but a live snapshot still maps: the disk
    /// gives them back when those snapshots are gone.
    public var pinnedBytes: Int = 0
    /// How many deleted segments are pinned that way.
    public var pinnedSegments: Int = 0
    /// The commit sequence of the oldest live snapshot, if any.
    public var oldestSnapshotSequence: UInt64?
    /// How long the oldest live snapshot has lived, in seconds.
    public var oldestSnapshotAge: Double?
}
