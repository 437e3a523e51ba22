// Encryption at rest: how an encrypted store's files are laid out around AES-256-GCM. This
// file is the single definition of those bytes; docs/FORMAT.md ("Encryption at rest")
// describes the same bytes for a person.
//
// Every file of an encrypted store — segments, hint files, MANIFEST, CLEAN — opens with a
// 64-byte preamble, then holds frames:
//
//   preamble  0  8  magic "STRATAEN"     8 4 version (1)     12 1 file kind     13 3 reserved, 0
//             16 32 salt: random, new for every file written
//             48 16 key check: the first 16 bytes of HKDF-SHA256(store key, salt, "strata key check v1")
//   frame     0  4  plaintext length S
//             4  12 nonce
//             16 S  ciphertext
//             16+S 16 GCM tag, over the ciphertext and the associated data: preamble bytes
//                   0 ..< 16, the frame's offset in the file (8 bytes), S (4 bytes)
//
// The file's AES-256 key is HKDF-SHA256(store key, salt, "strata file key v1" ‖ kind byte):
// one key per file, so no key ever seals more than one file's frames, and a frame cannot be
// moved to another file, or (its offset is authenticated) to another place in its own.
//
// A segment holds a frame with its 48-byte header at offset 64, then one frame per record
// from offset 144; each record's plaintext is byte for byte the record a plain store writes,
// padding included, so S is a multiple of 8 and frames stay 8-byte aligned. Hint files,
// MANIFEST and CLEAN hold one frame (at 64) with their plain contents.
//
// Nonces are unique under a file key as long as no two writers of one file draw the same
// 8 random bytes (docs/FORMAT.md, "Nonces"): each writer — the appender of a new segment or
// of the active segment at every writable open, and each frame sealed alone (hint, MANIFEST,
// CLEAN, a header sealed again in place) — draws its own and counts the frames it seals in
// the last 4; every new file has a new salt, so a new key.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The layout constants of an encrypted store's files.
enum EncryptedFile {
    static let magic: [UInt8] = Array("STRATAEN".utf8)
    static let version: UInt32 = 1
    static let preambleSize = 64
    static let saltSize = 32
    static let keyCheckSize = 16
    /// The part of the preamble every frame's tag authenticates.
    static let boundPreambleSize = 16

    /// Which file a preamble opens (bound into every frame of the file).
    enum Kind: UInt8, Sendable {
        case segment = 1
        case hint = 2
        case manifest = 3
        case cleanMarker = 4
        case derivedData = 5
    }

    /// Where a segment's first record frame starts: preamble, then the header's frame.
    static let segmentDataStart = preambleSize + Frame.overhead + SegmentHeader.size

    /// Whether `bytes` start like a file of an encrypted store.
    static func hasMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= magic.count && bytes.prefix(magic.count).elementsEqual(magic)
    }
}

/// A sealed frame's fixed parts (the layout above).
enum Frame {
    static let headerSize = 4 + AESGCMKey.nonceSize
    /// Bytes a frame adds to its plaintext: length, nonce and tag.
    static let overhead = headerSize + AESGCMKey.tagSize

    /// The plaintext length the frame at `offset` of `bytes` declares, or nil if its
    /// length field is not inside `bytes`.
    static func plainLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset >= 0, offset <= bytes.count - 4 else { return nil }
        return Int(bytes.le32(offset))
    }
}

/// The nonces one writer of a file seals its frames with: 8 random bytes drawn when the
/// writer starts, then a 4-byte count. Owned by that writer alone (no lock); a writer that
/// somehow sealed 2^32 frames draws a new prefix.
struct NonceSequence {
    private var prefix: UInt64
    private var counter: UInt32 = 0

    /// - Throws: ``StoreError/io(op:path:errno:)`` if the random generator fails.
    init() throws {
        prefix = try NonceSequence.randomPrefix()
    }

    /// Writes the next 12-byte nonce to `out`.
    mutating func next(into out: UnsafeMutableRawPointer) throws {
        if counter == .max {
            prefix = try NonceSequence.randomPrefix()
            counter = 0
        }
        out.storeBytes(of: prefix, toByteOffset: 0, as: UInt64.self)
        out.storeBytes(of: counter.bigEndian, toByteOffset: 8, as: UInt32.self)
        counter += 1
    }

    private static func randomPrefix() throws -> UInt64 {
        guard let bytes = CryptoPrimitives.randomBytes(8) else {
            throw StoreError.io(op: "random nonce (RAND_bytes)", path: "(OpenSSL)", errno: EIO)
        }
        return bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }
}

/// The key of one file of an encrypted store: seals the frames a writer appends, opens the
/// frames readers read. Immutable; safe to use from any number of threads.
final class FileCipher: Sendable {
    let kind: EncryptedFile.Kind
    private let key: AESGCMKey
    private let boundPreamble: [UInt8]

    init(kind: EncryptedFile.Kind, key: AESGCMKey, boundPreamble: [UInt8]) {
        self.kind = kind
        self.key = key
        self.boundPreamble = boundPreamble
    }

    /// Seals `plain` as the frame that will lie at `fileOffset` of the file, with the next
    /// nonce of the writer's `nonces`, written to `out` (room for `plain.count +
    /// Frame.overhead` bytes); returns the frame's size.
    ///
    /// - Throws: ``StoreError/io(op:path:errno:)`` if the random generator or OpenSSL fails
    ///   (nothing is written then).
    func sealFrame(_ plain: UnsafeRawBufferPointer, fileOffset: Int, nonces: inout NonceSequence,
                   into out: UnsafeMutableRawPointer) throws -> Int {
        guard plain.count <= Int(UInt32.max) else { throw StoreError.invalidArgument("a frame of \(plain.count) bytes is too large to encrypt") }
        out.storeLE32(UInt32(plain.count), at: 0)
        try nonces.next(into: out + 4)
        let sealed = withAssociatedData(fileOffset: fileOffset, length: plain.count) { aad in
            key.seal(nonce: out + 4, aad: aad, plain: plain, ciphertext: out + Frame.headerSize,
                     tag: out + Frame.headerSize + plain.count)
        }
        guard sealed else { throw StoreError.io(op: "AES-256-GCM encryption", path: "(OpenSSL)", errno: ENOMEM) }
        return plain.count + Frame.overhead
    }

    /// Seals `plain` as the one frame at `fileOffset`, with nonces of its own (a header, a
    /// whole small file); returns the frame's bytes.
    func sealFrame(_ plain: [UInt8], fileOffset: Int) throws -> [UInt8] {
        var nonces = try NonceSequence()
        var frame = [UInt8](repeating: 0, count: plain.count + Frame.overhead)
        try frame.withUnsafeMutableBytes { out in
            _ = try plain.withUnsafeBytes { try sealFrame($0, fileOffset: fileOffset, nonces: &nonces, into: out.baseAddress!) }
        }
        return frame
    }

    /// Opens the frame `frame` (exactly one frame: its declared length plus the overhead),
    /// which lies at `fileOffset` of the file, into `out` (room for its plaintext length).
    /// False if its tag does not authenticate it: damaged, moved, or sealed with another key.
    func openFrame(_ frame: UnsafeRawBufferPointer, fileOffset: Int, into out: UnsafeMutableRawPointer) -> Bool {
        guard let length = Frame.plainLength(frame, at: 0), frame.count == length + Frame.overhead else { return false }
        let base = frame.baseAddress!
        return withAssociatedData(fileOffset: fileOffset, length: length) { aad in
            key.open(nonce: base + 4, aad: aad,
                     ciphertext: UnsafeRawBufferPointer(start: base + Frame.headerSize, count: length),
                     tag: base + Frame.headerSize + length, plain: out)
        }
    }

    private func withAssociatedData<R>(fileOffset: Int, length: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: EncryptedFile.boundPreambleSize + 12, alignment: 8) { aad in
            let p = aad.baseAddress!
            boundPreamble.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: EncryptedFile.boundPreambleSize) }
            p.storeLE64(UInt64(fileOffset), at: EncryptedFile.boundPreambleSize)
            p.storeLE32(UInt32(truncatingIfNeeded: length), at: EncryptedFile.boundPreambleSize + 8)
            return body(UnsafeRawBufferPointer(aad))
        }
    }
}

/// The store's encryption key: makes the preamble and cipher of each new file, and checks
/// and opens the preamble of each file read (docs/FORMAT.md, "Encryption at rest").
final class StoreCipher: Sendable {
    /// The size of ``StoreOptions/encryptionKey``: 64 bytes, as Realm's.
    static let keySize = 64
    private let key: [UInt8]

    init(key: [UInt8]) {
        precondition(key.count == StoreCipher.keySize)
        self.key = key
    }

    /// What a file's preamble says about this key.
    enum PreambleCheck {
        /// The file was written with this key; here is its cipher.
        case encrypted(FileCipher)
        /// The file is encrypted, with another key (or its preamble is damaged).
        case otherKey
        /// The file does not start like an encrypted file (a plain store's file, or damage).
        case notEncrypted
    }

    /// A preamble for a new file of `kind`, with a fresh salt, and the file's cipher.
    func newFile(_ kind: EncryptedFile.Kind) throws -> (preamble: [UInt8], cipher: FileCipher) {
        guard let salt = CryptoPrimitives.randomBytes(EncryptedFile.saltSize) else {
            throw StoreError.io(op: "random salt (RAND_bytes)", path: "(OpenSSL)", errno: EIO)
        }
        var preamble = EncryptedFile.magic
        preamble.appendLE32(EncryptedFile.version)
        preamble.append(contentsOf: [kind.rawValue, 0, 0, 0])
        preamble.append(contentsOf: salt)
        preamble.append(contentsOf: try derive(salt: salt, label: "strata key check v1", count: EncryptedFile.keyCheckSize))
        return (preamble, try fileCipher(kind: kind, salt: salt, boundPreamble: Array(preamble.prefix(EncryptedFile.boundPreambleSize))))
    }

    /// Reads the preamble at the start of `bytes`, expecting a file of `kind`.
    func check(_ bytes: UnsafeRawBufferPointer, kind: EncryptedFile.Kind) -> PreambleCheck {
        guard bytes.count >= EncryptedFile.preambleSize, EncryptedFile.hasMagic(bytes) else { return .notEncrypted }
        let salt = Array(bytes[16 ..< 48])
        guard bytes.le32(8) == EncryptedFile.version, bytes[12] == kind.rawValue,
              bytes[13] == 0, bytes[14] == 0, bytes[15] == 0,
              let expected = try? derive(salt: salt, label: "strata key check v1", count: EncryptedFile.keyCheckSize),
              CryptoPrimitives.constantTimeEqual(expected, UnsafeRawBufferPointer(rebasing: bytes[48 ..< 64])),
              let cipher = try? fileCipher(kind: kind, salt: salt, boundPreamble: Array(bytes.prefix(EncryptedFile.boundPreambleSize)))
        else { return .otherKey }
        return .encrypted(cipher)
    }

    /// A whole small file (hint, MANIFEST, CLEAN) encrypted: preamble and one frame.
    func sealFile(_ plain: [UInt8], kind: EncryptedFile.Kind) throws -> [UInt8] {
        let (preamble, cipher) = try newFile(kind)
        return preamble + (try cipher.sealFrame(plain, fileOffset: preamble.count))
    }

    /// Why an encrypted small file could not be opened.
    enum FileProblem: Error {
        case notEncrypted, otherKey, damaged
    }

    /// The plain contents of a whole small file written by ``sealFile(_:kind:)``.
    func openFile(_ bytes: [UInt8], kind: EncryptedFile.Kind) -> Result<[UInt8], FileProblem> {
        bytes.withUnsafeBytes { raw -> Result<[UInt8], FileProblem> in
            let cipher: FileCipher
            switch check(raw, kind: kind) {
            case .notEncrypted: return .failure(.notEncrypted)
            case .otherKey: return .failure(.otherKey)
            case .encrypted(let found): cipher = found
            }
            let frame = UnsafeRawBufferPointer(rebasing: raw[EncryptedFile.preambleSize...])
            guard let length = Frame.plainLength(frame, at: 0), length == frame.count - Frame.overhead else { return .failure(.damaged) }
            // One byte more than needed, so that even an empty file has an address to open into.
            var plain = [UInt8](repeating: 0, count: length + 1)
            let opened = plain.withUnsafeMutableBytes { out in
                cipher.openFrame(frame, fileOffset: EncryptedFile.preambleSize, into: out.baseAddress!)
            }
            plain.removeLast()
            return opened ? .success(plain) : .failure(.damaged)
        }
    }

    private func fileCipher(kind: EncryptedFile.Kind, salt: [UInt8], boundPreamble: [UInt8]) throws -> FileCipher {
        let fileKey = try derive(salt: salt, label: "strata file key v1", extra: [kind.rawValue], count: AESGCMKey.keySize)
        return FileCipher(kind: kind, key: AESGCMKey(key: fileKey), boundPreamble: boundPreamble)
    }

    private func derive(salt: [UInt8], label: String, extra: [UInt8] = [], count: Int) throws -> [UInt8] {
        guard let derived = CryptoPrimitives.hkdfSHA256(key: key, salt: salt, info: Array(label.utf8) + extra, count: count) else {
            throw StoreError.io(op: "HKDF-SHA256 key derivation", path: "(OpenSSL)", errno: EIO)
        }
        return derived
    }
}
