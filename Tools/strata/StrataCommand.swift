// strata: the command-line tool. One file per command; this one is the root and the
// process's exit-code policy: 0 ok, 1 the store is damaged or the command failed,
// 2 bad usage. Errors are one line on stderr.

import ArgumentParser
import Foundation
import Strata

@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Inspect and maintain Strata stores.",
        discussion: "Exit codes: 0 ok, 1 the store is damaged or the command failed, 2 bad usage.",
        subcommands: [CompactCommand.self, VerifyCommand.self, StatsCommand.self, DumpCommand.self, QueryCommand.self,
                      ExportCommand.self, ImportCommand.self, RecoverCommand.self, StudioCommand.self, DemoCommand.self])

    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let error as StoreError {
            fail("strata: \(error)", code: 1)
        } catch let error as RealmError {
            // A query that cannot be read is bad usage; anything else failed.
            if case .invalidQuery = error { fail("strata: \(error)", code: 2) }
            fail("strata: \(error)", code: 1)
        } catch let error as CommandFailure {
            fail("strata: \(error.message)", code: 1)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            // Everything ArgumentParser rejects is bad usage.
            let message = fullMessage(for: error)
            FileHandle.standardError.write(Data((message.isEmpty ? "strata: bad usage" : message).utf8 + [0x0A]))
            Foundation.exit(code == .validationFailure ? 2 : 1)
        }
    }

    static func fail(_ line: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data((line + "\n").utf8))
        Foundation.exit(code)
    }
}

/// A failure the tool reports on one line of stderr, with exit code 1.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Options shared by the commands that open a store.
struct StoreArgument: ParsableArguments {
    @Argument(help: "The store's directory.")
    var store: String
    @OptionGroup var key: KeyFileOption

    /// The store; `hint` follows the error when there is none.
    func open(readOnly: Bool, hint: String = "") throws -> Store {
        try Self.open(store, key: key, readOnly: readOnly, hint: hint)
    }

    /// The store at `path` (which must be a directory, unless `creating` one), with the key
    /// of `key`, never compacting behind the command's back.
    static func open(_ path: String, key: KeyFileOption, readOnly: Bool, creating: Bool = false, hint: String = "") throws -> Store {
        var isDirectory: ObjCBool = false
        guard creating || FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue else {
            throw CommandFailure(message: "no store at \(path) (not a directory)" + hint)
        }
        var options = try key.options()
        options.readOnly = readOnly
        options.autoCompaction = .disabled
        return try Store(path: path, options: options)
    }
}

/// `--key-file F`: the key of an encrypted store (64 bytes, raw or as 128 hex digits).
struct KeyFileOption: ParsableArguments {
    @Option(name: .customLong("key-file"), help: "The encryption key of an encrypted store: a file of 64 bytes, or of 128 hex digits.")
    var path: String?

    /// A key file that cannot be read or holds anything but a key is bad usage.
    func validate() throws {
        guard let path else { return }
        do {
            _ = try StoreOptions.encryptionKey(contentsOf: path)
        } catch let StoreError.invalidArgument(why) {
            throw ValidationError(why)
        }
    }

    /// Store options with the key, if one was given.
    func options() throws -> StoreOptions {
        var options = StoreOptions()
        if let path { options.encryptionKey = try StoreOptions.encryptionKey(contentsOf: path) }
        return options
    }
}

/// Progress on stderr, only when stderr is a terminal.
struct Progress {
    let enabled = isatty(2) == 1
    let label: String

    func update(_ done: Int, _ total: Int) {
        guard enabled, total > 0 else { return }
        let percent = min(100, done * 100 / total)
        FileHandle.standardError.write(Data("\r\(label)… \(percent)%".utf8))
    }

    func status(_ text: String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\(label)… \(text)".utf8))
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

func formatBytes(_ bytes: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes), unit = 0
    while abs(value) >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}
