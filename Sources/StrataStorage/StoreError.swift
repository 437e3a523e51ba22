// StoreError: every way a Store operation can fail, each with a message a person can act on.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The errors thrown by ``Store``, ``Snapshot`` and ``Transaction``.
///
/// No public API of the engine traps on bad input or a bad file: every failure surfaces
/// as one of these cases. Each case's `description` says what went wrong, where, and
/// what to do about it.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another process holds the store's lock (for a read-only open beside a writer: the
    /// writer published no durable state within a second — an older Strata, or one still
    /// opening).
    case locked(String)
    /// A file of the store is damaged: `segment` names the file, `offset` the byte where
    /// the damage was found.
    case corrupted(segment: String, offset: Int, reason: String)
    /// A system call failed. `errno` is the raw error number. When `op` is a sync
    /// (`fdatasync`, `fsync directory`), whatever the errno, the store was taken out of
    /// service: reopen it, and recovery decides whether the last commit survived.
    case io(op: String, path: String, errno: Int32)
    /// The disk (or quota) is full: a write was refused. Nothing committed before is lost;
    /// the failed transaction left no trace, and the store goes on once space is freed. (A
    /// *sync* that fails for lack of space is not this case but a failed sync, ``io(op:path:errno:)``.)
    case diskFull(String)
    /// The store was closed, or an earlier fatal I/O error (a failed sync) took it out of service.
    case closed
    /// An argument was out of range: a key or value too large, a bad option, a nested write.
    case invalidArgument(String)
    /// The store was written by a format this build does not read.
    case formatVersion(found: Int, supported: Int)
    /// The encryption key does not open the store: it was written with another key, or it
    /// is encrypted and no key was given, or it is plain and a key was given. The string
    /// says which, and which file showed it. Nothing was changed.
    case wrongKey(String)

    /// A sentence saying what went wrong, where, and what to do.
    public var description: String {
        switch self {
        case .locked(let path):
            return "store is locked by another process: \(path) (close the other process; open read-only: a read-only open reads what the writer has made durable; or set StoreOptions.multiProcessWriting in every process that writes it, to write in turns)"
        case .corrupted(let segment, let offset, let reason):
            return "store file is damaged: \(segment) at offset \(offset): \(reason) (run `strata verify` on the store; restore the file from a backup)"
        case .io(let op, let path, let code) where op.contains("sync"):
            return "\(op) failed on \(path): \(String(cString: strerror(code))) (errno \(code)); the store was taken out of service, as the data written may not be on disk: reopen it, and recovery decides whether the last commit survived"
        case .io(let op, let path, let code):
            return "\(op) failed on \(path): \(String(cString: strerror(code))) (errno \(code))"
        case .diskFull(let path):
            return "disk full while writing \(path): the transaction was not committed; earlier commits are intact (free space and retry)"
        case .closed:
            return "the store is closed (or was taken out of service by an earlier I/O failure; reopen it)"
        case .invalidArgument(let what):
            return "invalid argument: \(what)"
        case .formatVersion(let found, let supported):
            return "store format version \(found) is not supported by this build (supports \(supported)); open it with a matching Strata version"
        case .wrongKey(let what):
            return "wrong encryption key: \(what)"
        }
    }
}

extension StoreError {
    /// Whether this is a failed `fsync`/`fdatasync`, after which the store stops taking writes.
    var isSyncFailure: Bool {
        if case .io(let op, _, _) = self { return op.contains("sync") }
        return false
    }

    /// `error`, thrown by a sync of `path`, as a sync failure: `.io` with a sync op, whatever
    /// the errno (a `diskFull` becomes ENOSPC).
    static func syncFailure(_ error: any Error, path: String) -> StoreError {
        switch error as? StoreError {
        case .io(let op, let where_, let code)?:
            return .io(op: op.contains("sync") ? op : "fdatasync", path: where_, errno: code)
        case .diskFull(let where_)?:
            return .io(op: "fdatasync", path: where_, errno: ENOSPC)
        default:
            return .io(op: "fdatasync", path: path, errno: EIO)
        }
    }

    /// Maps an errno from `op` on `path` to the right case: ENOSPC and EDQUOT become `.diskFull`.
    static func fromErrno(_ code: Int32, op: String, path: String) -> StoreError {
        if code == ENOSPC || code == EDQUOT { return .diskFull(path) }
        return .io(op: op, path: path, errno: code)
    }
}
