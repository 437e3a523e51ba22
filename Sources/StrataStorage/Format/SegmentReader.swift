// SegmentReader and RecordWriter: the one place that knows how records sit in a segment
// file. In a plain store a record lies in the clear at its offset; in an encrypted store
// each record is sealed in a frame (Crypto/FileCipher.swift) and opened into memory when
// read. Everything that walks or appends to a segment — commits, recovery, compaction,
// salvage, verify, hint writing — goes through these two, so each layout has one rule.

/// Memory for records opened from encrypted frames, kept as long as the arena lives: a
/// scan hands out keys pointing into it (a transaction's entries, a hint's whole list).
/// Chunks never move, so a pointer stays valid until the arena is freed.
final class PlainArena {
    private static let chunkSize = 1 << 20
    private var chunks: [UnsafeMutableRawPointer] = []
    private var next: UnsafeMutableRawPointer?
    private var remaining = 0

    deinit { for chunk in chunks { chunk.deallocate() } }

    /// `count` bytes, 8-byte aligned, valid until the arena is freed.
    func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        let size = max(align8(count), 8)
        if size > PlainArena.chunkSize / 4 {
            let own = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
            chunks.append(own)
            return own
        }
        if size > remaining {
            let chunk = UnsafeMutableRawPointer.allocate(byteCount: PlainArena.chunkSize, alignment: 8)
            chunks.append(chunk)
            next = chunk
            remaining = PlainArena.chunkSize
        }
        let start = next!
        next = start + size
        remaining -= size
        return start
    }
}

/// Reads the records of one segment file from its bytes (mapped or read), checking each.
/// The records it returns point into those bytes or, encrypted, into the reader's arena:
/// keep the reader (and the bytes) alive while they are used.
struct SegmentReader {
    /// The file's bytes from its first byte.
    let bytes: UnsafeRawBufferPointer
    /// The file's cipher in an encrypted store; nil in a plain one.
    let cipher: FileCipher?
    private let arena: PlainArena?

    init(_ bytes: UnsafeRawBufferPointer, cipher: FileCipher?) {
        self.bytes = bytes
        self.cipher = cipher
        arena = cipher == nil ? nil : PlainArena()
    }

    /// Where the first record starts.
    var dataStart: Int { SegmentReader.dataStart(encrypted: cipher != nil) }

    /// Where the first record of a segment starts: after the header (and, encrypted, the
    /// preamble and the header's frame).
    static func dataStart(encrypted: Bool) -> Int {
        encrypted ? EncryptedFile.segmentDataStart : SegmentHeader.size
    }

    /// The largest plaintext a record frame may declare: a record of the largest key and value.
    static let largestRecord = RecordFormat.maxRecordSize(keyLength: StoreOptions.maxKeySize, valueLength: StoreOptions.maxValueSize)

    /// The record at `offset`, checked. Its `size` is what it takes in the file (a whole
    /// frame, encrypted).
    func record(at offset: Int) -> Result<RecordView, RecordView.Failure> {
        guard let cipher, let arena else { return RecordView.parse(bytes, at: offset) }
        switch SegmentReader.frame(in: bytes, at: offset) {
        case .failure(let failure):
            return .failure(failure)
        case .success(let frame):
            return SegmentReader.open(frame, fileOffset: offset, cipher: cipher,
                                      into: arena.allocate(frame.count - Frame.overhead))
        }
    }

    /// The frame at `offset` of `bytes`, if its declared length is that of a record and it
    /// lies inside `bytes`.
    static func frame(in bytes: UnsafeRawBufferPointer, at offset: Int) -> Result<UnsafeRawBufferPointer, RecordView.Failure> {
        guard let length = Frame.plainLength(bytes, at: offset) else { return .failure(.truncated) }
        guard length >= RecordFormat.headerSize, length % 8 == 0, length <= largestRecord else {
            return .failure(.malformed("encrypted frame declares a record of \(length) bytes"))
        }
        guard length + Frame.overhead <= bytes.count - offset else { return .failure(.truncated) }
        return .success(UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + length + Frame.overhead]))
    }

    /// Opens a record's frame, which lies at `fileOffset` of its file, into `plain` (room for
    /// the frame's plaintext) and checks the record inside, which must fill it exactly.
    static func open(_ frame: UnsafeRawBufferPointer, fileOffset: Int, cipher: FileCipher,
                     into plain: UnsafeMutableRawPointer) -> Result<RecordView, RecordView.Failure> {
        guard cipher.openFrame(frame, fileOffset: fileOffset, into: plain) else { return .failure(.authentication) }
        let length = frame.count - Frame.overhead
        switch RecordView.parse(UnsafeRawBufferPointer(start: plain, count: length), at: 0) {
        case .failure(let failure):
            return .failure(failure)
        case .success(var record):
            guard record.size == length else {
                return .failure(.malformed("encrypted frame of \(length) bytes holds a record of \(record.size)"))
            }
            record.size = frame.count
            return .success(record)
        }
    }
}

/// Appends records to the bytes a segment file will hold: as they are (plain store) or each
/// sealed in a frame (encrypted). `fileOffset` is where the buffer's end will lie in the file.
final class RecordWriter {
    let cipher: FileCipher?
    /// Where a record is encoded before it is sealed (encrypted stores only).
    private let scratch: ByteBuffer?
    /// This writer's nonces (drawn at its first seal).
    private var nonces: NonceSequence?
    /// This writer's LZ4 state, reused for every value it compresses.
    private let compressor = LZ4Compressor()

    init(cipher: FileCipher?) {
        self.cipher = cipher
        scratch = cipher == nil ? nil : ByteBuffer(capacity: 4096)
    }

    /// Bytes the file layout adds to each record (a frame's length, nonce and tag).
    var overhead: Int { cipher == nil ? 0 : Frame.overhead }

    /// Encodes a put or delete; returns the bytes it takes in the file and the length of
    /// its stored value.
    func appendRecord(to buffer: ByteBuffer, fileOffset: Int, kind: RecordKind, table: UInt32, sequence: UInt64,
                      key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                      compressAtLeast threshold: Int?) throws -> (size: Int, stored: Int) {
        guard let scratch else {
            return RecordFormat.appendRecord(to: buffer, kind: kind, table: table, sequence: sequence,
                                             key: key, value: value, compressAtLeast: threshold, compressor: compressor)
        }
        scratch.count = 0
        let encoded = RecordFormat.appendRecord(to: scratch, kind: kind, table: table, sequence: sequence,
                                                key: key, value: value, compressAtLeast: threshold, compressor: compressor)
        return (try seal(scratch.bytes, to: buffer, fileOffset: fileOffset), encoded.stored)
    }

    /// Encodes a commit record; returns the bytes it takes in the file.
    @discardableResult
    func appendCommit(to buffer: ByteBuffer, fileOffset: Int, sequence: UInt64, recordCount: Int,
                      durableWatermark: UInt64) throws -> Int {
        guard let scratch else {
            RecordFormat.appendCommit(to: buffer, sequence: sequence, recordCount: recordCount, durableWatermark: durableWatermark)
            return RecordFormat.commitRecordSize
        }
        scratch.count = 0
        RecordFormat.appendCommit(to: scratch, sequence: sequence, recordCount: recordCount, durableWatermark: durableWatermark)
        return try seal(scratch.bytes, to: buffer, fileOffset: fileOffset)
    }

    /// Appends a record already encoded (a ``RecordView/encoded`` copy); returns the bytes
    /// it takes in the file.
    func appendEncoded(_ record: UnsafeRawBufferPointer, to buffer: ByteBuffer, fileOffset: Int) throws -> Int {
        guard cipher != nil else {
            buffer.reserve(record.count)
            (buffer.base + buffer.count).copyMemory(from: record.baseAddress!, byteCount: record.count)
            buffer.count += record.count
            return record.count
        }
        return try seal(record, to: buffer, fileOffset: fileOffset)
    }

    private func seal(_ record: UnsafeRawBufferPointer, to buffer: ByteBuffer, fileOffset: Int) throws -> Int {
        buffer.reserve(record.count + Frame.overhead)
        if nonces == nil { nonces = try NonceSequence() }
        let size = try cipher!.sealFrame(record, fileOffset: fileOffset, nonces: &nonces!, into: buffer.base + buffer.count)
        buffer.count += size
        return size
    }
}
