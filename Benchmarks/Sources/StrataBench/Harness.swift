// The harness: a clock, memory probes, the raw-disk baselines, and the result table.
// Every figure is reported next to the baseline measured in the same run, as a ratio,
// because absolute numbers mean little across machines.

import BenchSupport
import Foundation
import CBenchSupport
import Strata
#if canImport(Glibc)
import Glibc
#endif

/// Seconds since an arbitrary origin, monotonic.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Runs `body` and returns its duration in seconds.
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return now() - start
}

/// Bytes of heap in use (malloc's view), for index-memory measurements.
func heapInUse() -> Int {
    Int(bench_heap_in_use())
}


/// The benchmark key of record `i`: 8 bytes, big-endian (sorts like the integer).
func benchKey(_ i: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) }
}

/// Value bytes of record `i`: `size` random (incompressible) bytes.
func benchValue(_ i: Int, size: Int) -> [UInt8] {
    var rng = SplitMix64(seed: UInt64(i) &* 2654435761)
    var out = [UInt8](repeating: 0, count: size)
    var j = 0
    while j < size {
        var word = rng.next()
        for _ in 0 ..< 8 where j < size {
            out[j] = UInt8(truncatingIfNeeded: word)
            word >>= 8
            j += 1
        }
    }
    return out
}

enum RawDisk {
    /// Sequential write of `bytes` bytes in 1 MiB chunks, then one fdatasync: seconds.
    static func sequentialWrite(bytes: Int, in directory: String) throws -> Double {
        let path = directory + "/raw-sequential"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd); unlink(path) }
        let chunk = [UInt8](repeating: 0xA5, count: 1 << 20)
        return try time {
            var written = 0
            while written < bytes {
                let n = min(chunk.count, bytes - written)
                let w = chunk.withUnsafeBytes { pwrite(fd, $0.baseAddress, n, off_t(written)) }
                guard w == n else { throw POSIXError(.EIO) }
                written += n
            }
            guard fdatasync(fd) == 0 else { throw POSIXError(.EIO) }
        }
    }

    /// `count` appends of `recordBytes` bytes, each followed by fdatasync: the seconds of
    /// each (what the disk alone gives a durable one-record commit, its stalls included).
    static func syncLatencies(count: Int, recordBytes: Int, in directory: String) throws -> [Double] {
        let path = directory + "/raw-sync-latencies"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd); unlink(path) }
        let record = [UInt8](repeating: 0x5A, count: recordBytes)
        return try (0 ..< count).map { i in
            try time {
                let w = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, recordBytes, off_t(i * recordBytes)) }
                guard w == recordBytes, fdatasync(fd) == 0 else { throw POSIXError(.EIO) }
            }
        }
    }

    /// `count` appends of `recordBytes` bytes, each followed by fdatasync: seconds.
    static func syncLoop(count: Int, recordBytes: Int, in directory: String) throws -> Double {
        let path = directory + "/raw-sync"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd); unlink(path) }
        let record = [UInt8](repeating: 0x5A, count: recordBytes)
        return try time {
            for i in 0 ..< count {
                let w = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, recordBytes, off_t(i * recordBytes)) }
                guard w == recordBytes, fdatasync(fd) == 0 else { throw POSIXError(.EIO) }
            }
        }
    }
}

/// One line of the result table.
struct ResultRow {
    var benchmark: String
    var strata: String
    var baseline: String
    var sqlite: String
    var ratios: String
    var target: String
}

func formatRate(_ perSecond: Double, unit: String) -> String {
    if perSecond >= 1e6 { return String(format: "%.2f M %@/s", perSecond / 1e6, unit) }
    if perSecond >= 1e3 { return String(format: "%.1f k %@/s", perSecond / 1e3, unit) }
    return String(format: "%.0f %@/s", perSecond, unit)
}

func formatBytesRate(_ bytesPerSecond: Double) -> String {
    String(format: "%.0f MB/s", bytesPerSecond / 1e6)
}

/// The rows as a Markdown table; `columns` names the baseline and SQLite columns.
func markdownTable(_ rows: [ResultRow],
                   columns: (baseline: String, sqlite: String) = ("raw disk (same run)", "SQLite via GRDB (same run)")) -> String {
    var out = "| benchmark | Strata | \(columns.baseline) | \(columns.sqlite) | ratios | target |\n"
    out += "|---|---|---|---|---|---|\n"
    for r in rows {
        out += "| \(r.benchmark) | \(r.strata) | \(r.baseline) | \(r.sqlite) | \(r.ratios) | \(r.target) |\n"
    }
    return out
}

/// Drops a file's (clean) pages from the page cache, so the next read comes from the disk.
func evictFromPageCache(_ path: String) {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return }
    fdatasync(fd)
    posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
    close(fd)
}

/// A new realm (its directory emptied first) of `types` at `path`, `durability = .none`: the
/// object-level suites measure CPU, not the disk.
func freshRealm(at path: String, types: [Object.Type]) throws -> Realm {
    let directory = URL(fileURLWithPath: path)
    try? FileManager.default.removeItem(at: directory)
    var config = Realm.Configuration(directory: directory)
    config.objectTypes = types
    config.storeOptions.durability = .none
    return try Realm(configuration: config)
}
