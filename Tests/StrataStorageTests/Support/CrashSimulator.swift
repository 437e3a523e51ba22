// CrashSimulator: from a recorded operation log, builds the directory a crash after the
// first k operations could leave: synced bytes stay; each unsynced write is kept, dropped
// or torn (a random subset of its 512-byte sectors reaches the disk); unsynced truncates
// may or may not have happened; and namespace operations (create, rename, remove) after
// the last directory sync survive only as a prefix, as an ordered metadata journal keeps them.
// A directory made during the recording (the store's own, or its parents) survives only once
// its parent directory was synced after the `mkdir`: until then a crash may lose it, and with
// it every file inside, synced or not.

import Foundation
import StrataTestSupport

struct CrashSimulator {
    let operations: [FileOperation]

    private struct Inode {
        var durable: [UInt8] = []
        var pending: [FileOperation] = []
    }

    /// Writes into `directory` (which must exist and be empty) the files as a crash after
    /// `prefix` operations could leave them.
    func materialize(prefix: Int, into directory: String, rng: inout SplitMix64) throws {
        var inodes: [Int: Inode] = [:]
        // Namespace: names → inode after each namespace op, and the durable point.
        var names: [String: Int] = [:]
        var namespaceLog: [[String: Int]] = []
        var durableNamespaceIndex = -1
        namespaceLog.append(names)
        durableNamespaceIndex = 0
        // Files that existed before recording began are always there.
        // Directories made, and whether a sync of their parent has made them durable since.
        var createdDirectories: [String: Bool] = [:]
        var preexisting = 0
        while preexisting < operations.count, case .existing = operations[preexisting] { preexisting += 1 }
        for op in operations.prefix(max(prefix, preexisting)) {
            switch op {
            case .existing(let path, let inode, let content):
                inodes[inode] = Inode(durable: content)
                names[path] = inode
                namespaceLog = [names]
            case .create(let path, let inode):
                inodes[inode] = Inode()
                names[path] = inode
                namespaceLog.append(names)
            case .write(let inode, _, _), .truncate(let inode, _):
                inodes[inode, default: Inode()].pending.append(op)
            case .sync(let inode):
                var node = inodes[inode, default: Inode()]
                node.durable = apply(node.pending, to: node.durable, crash: nil)
                node.pending = []
                inodes[inode] = node
            case .rename(let from, let to):
                if let id = names.removeValue(forKey: from) { names[to] = id }
                namespaceLog.append(names)
            case .remove(let path):
                names.removeValue(forKey: path)
                namespaceLog.append(names)
            case .createDirectory(let path):
                createdDirectories[path] = false
            case .syncDirectory(let path):
                let children = createdDirectories.keys.filter { ($0 as NSString).deletingLastPathComponent == path }
                for child in children { createdDirectories[child] = true }
                if children.isEmpty { durableNamespaceIndex = namespaceLog.count - 1 }
            }
        }
        if createdDirectories.values.contains(false), rng.next() % 2 == 0 {
            // The store's directory (or a parent) was never made durable: it is gone.
            return
        }
        let keep = Int.random(in: durableNamespaceIndex ... namespaceLog.count - 1, using: &rng)
        let finalNames = namespaceLog[keep]
        for (path, inode) in finalNames {
            let node = inodes[inode] ?? Inode()
            let bytes = applyCrashing(node.pending, to: node.durable, rng: &rng)
            let name = (path as NSString).lastPathComponent
            _ = FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes))
        }
    }

    /// Applies operations in order; with `crash`, each may be dropped or torn.
    private func apply(_ ops: [FileOperation], to base: [UInt8], crash: UnsafeMutablePointer<SplitMix64>?) -> [UInt8] {
        var bytes = base
        for op in ops {
            switch op {
            case .write(_, let offset, let data):
                var sectors = Array(repeating: true, count: (data.count + 511) / 512)
                if let crash {
                    switch crash.pointee.next() % 4 {
                    case 0: sectors = sectors.map { _ in false }                 // dropped
                    case 1: for i in sectors.indices { sectors[i] = crash.pointee.next() % 2 == 0 } // torn, any order
                    case 2: // torn as a prefix
                        let cut = Int(crash.pointee.next() % UInt64(sectors.count + 1))
                        for i in sectors.indices { sectors[i] = i < cut }
                    default: break                                                 // kept
                    }
                }
                for (i, kept) in sectors.enumerated() where kept {
                    let start = i * 512, end = min(data.count, start + 512)
                    let target = offset + start
                    if bytes.count < target + (end - start) {
                        bytes.append(contentsOf: repeatElement(0, count: target + (end - start) - bytes.count))
                    }
                    bytes.replaceSubrange(target ..< target + (end - start), with: data[start ..< end])
                }
            case .truncate(_, let length):
                if let crash, crash.pointee.next() % 2 == 0 { continue }
                if length < bytes.count {
                    bytes.removeSubrange(length...)
                } else {
                    bytes.append(contentsOf: repeatElement(0, count: length - bytes.count))
                }
            default:
                break
            }
        }
        return bytes
    }

    private func applyCrashing(_ ops: [FileOperation], to base: [UInt8], rng: inout SplitMix64) -> [UInt8] {
        withUnsafeMutablePointer(to: &rng) { apply(ops, to: base, crash: $0) }
    }
}
