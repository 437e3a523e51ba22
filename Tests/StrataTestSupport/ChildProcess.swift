// Child processes for the tests that run a real executable: the crash helpers killed with
// SIGKILL mid-write, and the `strata` tool run to its end.

import Foundation

/// A running child process whose standard output is read line by line (its standard error is
/// the test's own).
public final class ChildProcess {
    /// The process itself.
    public let process: Process
    /// Its standard output, line by line.
    public let output: LineReader
    /// Its standard input.
    public let input: FileHandle

    /// Starts `executable` with `arguments`.
    public init(executable: String, arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe(), inputPipe = Pipe()
        process.standardOutput = pipe
        process.standardInput = inputPipe
        process.standardError = FileHandle.standardError
        try process.run()
        output = LineReader(handle: pipe.fileHandleForReading)
        input = inputPipe.fileHandleForWriting
    }

    /// Writes `line` and a newline to the process's standard input.
    public func send(_ line: String) {
        input.write(Data((line + "\n").utf8))
    }

    /// Sends SIGKILL, then waits for the process to end.
    public func killAndWait() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Asks the process to stop (SIGTERM) without waiting.
    public func terminate() { process.terminate() }

    /// The path of executable `name` built by this package: beside the test bundle or one
    /// folder up, else beside any loaded bundle, else `name` itself.
    public static func executablePath(named name: String) -> String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [here, here.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent().appendingPathComponent(name).path }
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? name
    }

    /// Runs `executable` with `arguments` to its end and returns its exit status and both outputs.
    public static func run(executable: String, arguments: [String]) throws -> ProcessOutput {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ProcessOutput(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                             stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// What a process that ran to its end left: its exit status and its two outputs.
public struct ProcessOutput: Sendable {
    /// The exit status (0 ok).
    public var status: Int32
    /// Everything written to standard output.
    public var stdout: String
    /// Everything written to standard error.
    public var stderr: String

    /// An output from its three parts.
    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Reads lines from a pipe until end of file.
public final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()
    private var eof = false

    /// A reader of `handle` (usually a pipe's reading end).
    public init(handle: FileHandle) { self.handle = handle }

    /// The next line without its newline; nil at end of file.
    public func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex ..< newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex ... newline)
                return line
            }
            if eof { return nil }
            let chunk = handle.availableData
            if chunk.isEmpty { eof = true } else { buffer.append(chunk) }
        }
    }
}
