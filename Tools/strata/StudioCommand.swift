// `strata studio <store> [--port N] [--writable]`: Strata Studio, the local web page over a
// store. The server is its own package (Tools/studio, built by `make studio`) so that the
// tool and the library never depend on a web server: this command finds the `strata-studio`
// binary and runs it in this process's place.

import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct StudioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "studio",
        abstract: "Browse the store in a web page on 127.0.0.1 (Strata Studio).",
        discussion: """
            Runs strata-studio, found next to strata or in Tools/studio/.build/{debug,release}/ \
            (build it with `make studio`). It serves http://127.0.0.1:PORT/ only: object types, \
            tables with the string query language, object details, stats, CSV/JSON export. \
            Read-only unless --writable (which enables compaction).
            """)

    @Argument(help: "The store's directory.")
    var store: String
    @Option(help: "The port on 127.0.0.1 (0: any free port).")
    var port: Int = 8080
    @Flag(help: "Open the store for writing (enables the compact button).")
    var writable = false
    @Option(help: "Stop by itself after this many seconds.")
    var seconds: Double?
    @OptionGroup var key: KeyFileOption

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be positive") }
    }

    /// Where strata-studio may be: beside this binary, then the studio package's build
    /// folders relative to this binary's repository (`.build/<config>/strata`) and to the
    /// current directory.
    static func candidates() -> [String] {
        let fm = FileManager.default
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var paths = [me.deletingLastPathComponent().appendingPathComponent("strata-studio").path]
        var roots = [me.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path,
                     me.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path,
                     fm.currentDirectoryPath]
        roots = roots.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
        for root in roots {
            for config in ["debug", "release"] {
                paths.append(URL(fileURLWithPath: root).appendingPathComponent("Tools/studio/.build/\(config)/strata-studio").standardizedFileURL.path)
            }
        }
        return paths
    }

    func run() throws {
        guard let binary = Self.candidates().first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw CommandFailure(message: "strata-studio is not built: build it with `make studio` (looked in \(Self.candidates().joined(separator: ", ")))")
        }
        var arguments = [binary, store, "--port", String(port)]
        if writable { arguments.append("--writable") }
        if let seconds { arguments += ["--seconds", String(seconds)] }
        if let keyFile = key.path { arguments += ["--key-file", keyFile] }
        let argv = arguments.map { strdup($0) } + [nil]
        execv(binary, argv)
        throw CommandFailure(message: "cannot run \(binary): \(String(cString: strerror(errno)))")
    }
}
