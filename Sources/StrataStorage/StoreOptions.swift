// StoreOptions: the knobs of a Store, each with a default that suits an app's local cache.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// How far a successful commit has travelled towards the disk when `write` returns.
public enum Durability: Sendable, Equatable {
    /// The commit reached stable storage: one `fdatasync` per commit; concurrent committers
    /// share one sync (group commit). Survives power loss.
    case full
    /// Commits are written to the OS at once and synced by a background thread every
    /// ``StoreOptions/syncInterval``. A process crash loses nothing; a power loss loses
    /// at most the last interval's commits (never part of a transaction).
    case normal
    /// Commits are written to the OS; the OS decides when they reach the disk. A process
    /// crash loses nothing; a power loss may lose any commit since the last segment seal.
    case none
}

/// Whether values are compressed.
public enum CompressionMode: Sendable, Equatable {
    /// Values are stored as given.
    case none
    /// Values of at least ``StoreOptions/compressionThreshold`` bytes are LZ4-compressed
    /// when that makes them smaller; otherwise stored as given.
    case lz4
}

/// When the store compacts by itself, in the background, while readers and writers go on.
public enum AutoCompaction: Sendable, Equatable {
    /// Bitcask-like thresholds: ``CompactionPolicy/default``.
    case `default`
    /// Never compact automatically; call `Store.compact()` yourself.
    case disabled
    /// Your own thresholds.
    case custom(CompactionPolicy)
}

/// Options for opening a ``Store``. Every field has a default suited to an app's cache.
public struct StoreOptions: Sendable {
    /// A segment is sealed once it holds at least this many bytes (default 64 MiB). A
    /// transaction is never split across segments, so a segment can exceed this by the
    /// size of one transaction. Minimum 4 KiB.
    public var segmentSize: Int = 64 << 20
    /// See ``Durability``. Default `.full`.
    public var durability: Durability = .full
    /// For `.normal`: the longest time between a commit and its sync (default 0.1 s).
    public var syncInterval: Double = 0.1
    /// See ``CompressionMode``. Default `.lz4`.
    public var compression: CompressionMode = .lz4
    /// Values at least this long are offered to the compressor (default 256 bytes).
    public var compressionThreshold: Int = 256
    /// See ``AutoCompaction``. Default `.default`.
    public var autoCompaction: AutoCompaction = .default
    /// Open for reading only; writes throw `StoreError.invalidArgument`. A read-only open
    /// never keeps a writer out: while a writer in another process holds the store, it
    /// reads the prefix of the log that writer has made durable, as its beacon (`HEAD`)
    /// says; while none does, the state the last one's clean close recorded
    /// (``Store/isFollowingAWriter`` either way): a consistent state of one commit, at
    /// least every commit acknowledged before the open began. ``Store/refresh()`` moves it
    /// to the writer's newest durable commit. Only a store a writer left without closing
    /// (a crash) is read as it lies, holding the store's lock shared while open (a writer's
    /// open, which would repair it, waits for it: see ``lockWaitTimeout``).
    public var readOnly: Bool = false
    /// How many seconds a writable open (or, with ``multiProcessWriting``, a write
    /// transaction) waits for the store's writer lock while another process holds it
    /// (default 5), before throwing `StoreError.locked`: a service (re)starting while the
    /// last one closes waits for it instead of failing. 0: never wait. Read-only opens
    /// never wait for a writer: they read beside it.
    public var lockWaitTimeout: Double = 5

    /// Lets several processes write the store, one write transaction at a time (as Realm
    /// lets an app and its extensions, or pre-forked workers, share one file). Default false:
    /// one writer process holds the store from open to close, and commits cost only their
    /// own records and sync.
    ///
    /// With it, every process opens the store with this option and holds no lock between
    /// transactions: it reads the store as a follower (``Store/isFollowingAWriter``, moving
    /// forward on ``Store/refresh()`` and its watch thread), and each write transaction
    /// takes the store's writer lock (waiting up to ``lockWaitTimeout``), reads what other
    /// processes committed since, appends its records, syncs, records a clean state and
    /// lets the lock go — a writer killed mid-transaction releases it, and the next one
    /// repairs the torn tail as an open does. So every commit is durable when it returns,
    /// whatever ``durability`` says, and costs an open and a close of the writer's state
    /// (docs/benchmarks.md has the figures): use it where processes must share writes, not
    /// for one busy writer. Compaction runs only when asked (``Store/compact()``, which
    /// holds the writer lock throughout) or at open (``shouldCompactOnOpen``). Ignored with
    /// ``readOnly``.
    public var multiProcessWriting: Bool = false

    /// Asked once at a writable open, with the bytes of all segment files and the bytes of
    /// live records: return true to compact before `Store(…)` returns. This is what
    /// `Realm.Configuration.shouldCompactOnLaunch` maps onto. Default nil (never).
    public var shouldCompactOnOpen: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)?

    /// The permission bits of every file the store creates (default `0o600`: only the owner
    /// reads and writes). Directories it creates get the same bits with execute added
    /// wherever read is set (`0o600` → `0o700`, `0o640` → `0o750`). The process umask still
    /// applies; existing files and directories keep their modes. Must give the owner read
    /// and write, and use only permission bits (at most `0o777`).
    public var fileMode: UInt16 = 0o600

    /// Where the engine reports what an app's operator may want to know — a torn tail
    /// truncated by recovery (warning), a sync slower than ``slowSyncThreshold`` (warning),
    /// a background compaction started and finished (info). Nil (the default): silent.
    public var logger: Logger?

    /// A sync that takes longer than this many seconds is logged as a warning (default 1).
    public var slowSyncThreshold: Double = 1

    /// Encrypts the store at rest: 64 bytes (the size of Realm's key), or nil (the default)
    /// for a plain store. Every byte of every file the store writes — segments, hint files,
    /// `MANIFEST`, `CLEAN` — is encrypted and authenticated with AES-256-GCM under a key
    /// derived for that file (HKDF-SHA256); docs/FORMAT.md, "Encryption at rest", has the
    /// layout. A store is created encrypted or plain and stays so (`strata recover` or an
    /// export/import moves data between the two).
    ///
    /// Opening with another key than the store was written with, a key for a plain store,
    /// or no key for an encrypted one throws ``StoreError/wrongKey(_:)``; damage to an
    /// encrypted file is ``StoreError/corrupted(segment:offset:reason:)`` as for a plain one.
    /// Keep the key somewhere other than the store (a keychain, a secrets manager): it cannot
    /// be recovered from the files.
    public var encryptionKey: Data?
    /// A file layer that replaces the POSIX one (tests inject faults here).
    var customFileSystem: (any FileSystem)?
    /// Whether the open checks the index image's remaining pages in the background (each
    /// page is checked when first touched either way). Off for the writer of one turn
    /// (``multiProcessWriting``), which lives for one transaction.
    var checksImageInBackground = true

    /// The file layer under the engine: POSIX with ``fileMode``, unless a test set its own.
    var fileSystem: any FileSystem {
        get { customFileSystem ?? PosixFileSystem(fileMode: .init(fileMode)) }
        set { customFileSystem = newValue }
    }

    /// Every option at its default.
    public init() {}

    /// The largest key accepted, in bytes.
    public static let maxKeySize = 64 << 10
    /// The largest value accepted, in bytes.
    public static let maxValueSize = 256 << 20

    func validate() throws {
        guard segmentSize >= 4096 else {
            throw StoreError.invalidArgument("segmentSize must be at least 4096 bytes, got \(segmentSize)")
        }
        guard segmentSize <= 2 << 30 else {
            throw StoreError.invalidArgument("segmentSize must be at most 2 GiB, got \(segmentSize)")
        }
        guard syncInterval > 0, syncInterval.isFinite else {
            throw StoreError.invalidArgument("syncInterval must be a positive number of seconds, got \(syncInterval)")
        }
        guard compressionThreshold >= 0 else {
            throw StoreError.invalidArgument("compressionThreshold must not be negative, got \(compressionThreshold)")
        }
        if let encryptionKey, encryptionKey.count != StoreCipher.keySize {
            throw StoreError.invalidArgument("encryptionKey must be \(StoreCipher.keySize) bytes, got \(encryptionKey.count)")
        }
        guard fileMode & 0o600 == 0o600, fileMode <= 0o777 else {
            throw StoreError.invalidArgument("fileMode must give the owner read and write (0o600) and use only permission bits (at most 0o777), got 0o\(String(fileMode, radix: 8))")
        }
    }
}

extension StoreOptions {
    /// The store's cipher, when ``encryptionKey`` is set.
    var cipher: StoreCipher? { encryptionKey.map { StoreCipher(key: Array($0)) } }
}

extension StoreOptions {
    /// Reads an encryption key from a file, as `strata --key-file` does: the file holds the
    /// 64 bytes themselves, or them as 128 hexadecimal digits (whitespace around them ignored).
    ///
    /// - Throws: ``StoreError/invalidArgument(_:)`` naming the file when it cannot be read or
    ///   holds anything else.
    public static func encryptionKey(contentsOf path: String) throws -> Data {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw StoreError.invalidArgument("key file \(path) cannot be read: \(error.localizedDescription)")
        }
        if contents.count == StoreCipher.keySize { return contents }
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        let digits = contents.filter { !whitespace.contains($0) }
        let trimmed = contents.drop { whitespace.contains($0) }.reversed().drop { whitespace.contains($0) }
        guard digits.count == 2 * StoreCipher.keySize, trimmed.count == digits.count else {
            throw StoreError.invalidArgument("key file \(path) holds \(contents.count) bytes: it must hold the \(StoreCipher.keySize)-byte key itself, or it as \(2 * StoreCipher.keySize) hexadecimal digits")
        }
        var key = Data(capacity: StoreCipher.keySize)
        var index = digits.startIndex
        while index < digits.endIndex {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[digits.index(after: index)]) else {
                throw StoreError.invalidArgument("key file \(path) holds a character that is not a hexadecimal digit at digit \(digits.distance(from: digits.startIndex, to: index) + 1)")
            }
            key.append(high << 4 | low)
            index = digits.index(index, offsetBy: 2)
        }
        return key
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
