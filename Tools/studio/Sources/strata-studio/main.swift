// strata-studio <store> [--port 8080] [--writable] [--seconds N]: Strata Studio, a local web
// page over a store, served on 127.0.0.1 only. Read-only unless --writable.
// Exit codes as the `strata` tool: 0 stopped, 1 the store cannot be opened or the server
// failed, 2 bad usage.

import Foundation
import Strata
import StudioCore

let usage = "usage: strata-studio <store> [--port 8080] [--writable] [--seconds N] [--key-file F]"

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("strata-studio: \(message)\n".utf8))
    exit(code)
}

var storePath: String?
var port = 8080
var writable = false
var seconds: Double?
var encryptionKey: Data?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "-h", "--help":
        print("""
            \(usage)

            Serves a web page over the store on http://127.0.0.1:PORT/ (never another interface):
            object types, a paged and sortable table per type with the string query language,
            object details, stats drawn as pictures, export of a query as CSV or JSON.
              --port N      the port (default 8080; 0 picks a free one)
              --writable    open the store for writing (enables the compact button); otherwise
                            it is opened read-only for each request
              --seconds N   stop by itself after N seconds
              --key-file F  the key of an encrypted store (64 bytes, or 128 hex digits)
            """)
        exit(0)
    case "--port":
        guard let value = arguments.popFirst(), let number = Int(value), (0...65535).contains(number) else {
            fail("--port needs a number from 0 to 65535\n\(usage)", code: 2)
        }
        port = number
    case "--writable":
        writable = true
    case "--key-file":
        guard let path = arguments.popFirst() else { fail("--key-file needs a file\n\(usage)", code: 2) }
        do {
            encryptionKey = try StoreOptions.encryptionKey(contentsOf: path)
        } catch {
            fail("\(error)\n\(usage)", code: 2)
        }
    case "--seconds":
        guard let value = arguments.popFirst(), let number = Double(value), number > 0, number.isFinite else {
            fail("--seconds needs a positive number\n\(usage)", code: 2)
        }
        seconds = number
    default:
        if argument.hasPrefix("-") { fail("unknown option \(argument)\n\(usage)", code: 2) }
        guard storePath == nil else { fail("one store only\n\(usage)", code: 2) }
        storePath = argument
    }
}
guard let storePath else { fail("which store?\n\(usage)", code: 2) }

let store: StudioStore
do {
    store = try StudioStore(path: storePath, writable: writable, encryptionKey: encryptionKey)
} catch {
    fail("cannot serve \(storePath): \(error)", code: 1)
}

do {
    let running = try await Studio.start(store: store, port: port, signals: true)
    FileHandle.standardOutput.write(Data("Strata Studio on http://\(Studio.host):\(running.port)/ (\(writable ? "writable" : "read-only")): \(storePath)\n".utf8))
    if let seconds {
        Task {
            try await Task.sleep(for: .seconds(seconds))
            try await running.stop()
        }
    }
    try await running.wait()
    store.close()
} catch {
    store.close()
    fail("\(error)", code: 1)
}
