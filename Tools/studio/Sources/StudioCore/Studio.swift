// Strata Studio's HTTP server: Hummingbird 2 bound to 127.0.0.1 only, one responder that
// checks every request (loopback Host, no path tricks, same origin for POST) before routing.
//
//   GET  /                                   object types with counts
//   GET  /types/T?q=&sort=&desc=&page=&size= a page of T's objects (query, sort, paging)
//   GET  /types/T/object?key=K               one object (K: its primary key or _id)
//   GET  /types/T/export.csv?q=&sort=&desc=  the query's objects as CSV (RFC 4180)
//   GET  /types/T/export.json?…              … as a JSON array
//   GET  /stats                              space, segment map, compactions (SVG)
//   POST /compact                            compaction (--writable, same origin only)
//   GET  /api/status | /api/types | /api/types/T?… | /api/stats   the same as JSON
//   GET  /assets/studio.css | /assets/studio.js                    the embedded assets

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Strata
import UnixSignals

/// A running studio server.
public struct RunningStudio: Sendable {
    /// The port it listens on (on 127.0.0.1).
    public let port: Int
    let group: ServiceGroup
    let task: Task<Void, any Error>

    /// Stops accepting, lets open requests finish, and returns when the server is down.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }

    /// Returns when the server has stopped (a signal, or ``stop()``).
    public func wait() async throws {
        try await task.value
    }
}

public enum Studio {
    /// The only address the studio listens on.
    public static let host = "127.0.0.1"

    /// Starts the server on 127.0.0.1:`port` (0: any free port) and returns once it listens.
    /// With `signals`, SIGINT and SIGTERM stop it gracefully.
    public static func start(store: StudioStore, port: Int, signals: Bool = false) async throws -> RunningStudio {
        var logger = Logger(label: "strata-studio")
        logger.logLevel = .warning
        let (bound, boundContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            responder: StudioResponder(store: store),
            configuration: .init(address: .hostname(host, port: port), serverName: "strata-studio"),
            onServerRunning: { channel in
                boundContinuation.yield(channel.localAddress?.port ?? port)
                boundContinuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: signals ? [.sigterm, .sigint] : [], logger: logger)
        let task = Task {
            defer { boundContinuation.finish() }
            try await group.run()
        }
        var ports = bound.makeAsyncIterator()
        guard let actual = await ports.next() else {
            try await task.value
            throw StudioFailure(.serverError, "the server did not start")
        }
        return RunningStudio(port: actual, group: group, task: task)
    }
}

/// What a request asks for, before the store is read.
struct Parameters {
    var values: [String: String] = [:]

    /// Query parameters of a raw query string (`+` is a space; the first of a repeated name wins).
    init(query: String?) throws {
        guard let query, !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) throws -> String {
                guard let text = String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                    throw StudioFailure(.badRequest, "the URL's query is not valid percent-encoding")
                }
                return text
            }
            let name = try decode(parts[0])
            if values[name] == nil { values[name] = parts.count > 1 ? try decode(parts[1]) : "" }
        }
    }

    subscript(name: String) -> String? { values[name] }

    func integer(_ name: String, default value: Int, range: ClosedRange<Int>, clampAbove: Bool = false) throws -> Int {
        guard let text = values[name], !text.isEmpty else { return value }
        guard let number = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw StudioFailure(.badRequest, "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        if number > range.upperBound && clampAbove { return range.upperBound }
        guard range.contains(number) else {
            throw StudioFailure(.badRequest, "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(number)")
        }
        return number
    }
}

struct StudioResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let store: StudioStore

    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]

    enum Kind { case html, json, text }

    func respond(to request: Request, context: Context) async throws -> Response {
        let rawPath = request.head.path ?? "/"
        let pathPart = String(rawPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        let kind: Kind = pathPart.hasPrefix("/api/") ? .json : pathPart.hasPrefix("/assets/") ? .text : .html
        do {
            let authority = try Self.checkHost(request)
            let path = try Self.checkPath(pathPart)
            let query = rawPath.contains("?") ? String(rawPath[rawPath.index(after: rawPath.firstIndex(of: "?")!)...]) : nil
            let parameters = try Parameters(query: query)
            return try route(request, path: path, parameters: parameters, authority: authority)
        } catch let failure as StudioFailure {
            return Self.failure(failure, kind: kind, store: store)
        } catch let error as RealmError {
            if case .invalidQuery = error { return Self.failure(StudioFailure(.badRequest, "\(error)"), kind: kind, store: store) }
            if case .unknownType = error { return Self.failure(StudioFailure(.notFound, "\(error)"), kind: kind, store: store) }
            return Self.failure(StudioFailure(.serverError, "\(error)"), kind: kind, store: store)
        } catch let error as StoreError {
            if case .locked = error { return Self.failure(StudioFailure(.unavailable, "\(error)"), kind: kind, store: store) }
            return Self.failure(StudioFailure(.serverError, "\(error)"), kind: kind, store: store)
        } catch {
            return Self.failure(StudioFailure(.serverError, "\(error)"), kind: kind, store: store)
        }
    }

    // MARK: checks

    /// The Host header must name the loopback interface (defeats DNS rebinding). Returns it.
    static func checkHost(_ request: Request) throws -> String {
        guard let authority = request.head.authority?.lowercased(), !authority.isEmpty else {
            throw StudioFailure(.forbidden, "a Host header naming 127.0.0.1 or localhost is required")
        }
        var host = authority
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
            let port = host[host.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber) else {
                throw StudioFailure(.forbidden, "the studio answers only requests for 127.0.0.1 or localhost, not '\(authority)'")
            }
            host = String(host[..<colon])
        }
        guard host == "127.0.0.1" || host == "localhost" else {
            throw StudioFailure(.forbidden, "the studio answers only requests for 127.0.0.1 or localhost, not '\(authority)'")
        }
        return authority
    }

    /// Rejects `.`/`..` segments, encoded slashes or backslashes, NUL and empty segments;
    /// returns the decoded path segments.
    static func checkPath(_ raw: String) throws -> [String] {
        let bad = StudioFailure(.badRequest, "bad path: '\(raw)'")
        guard raw.hasPrefix("/"), !raw.contains("\\") else { throw bad }
        let lower = raw.lowercased()
        if lower.contains("%2f") || lower.contains("%5c") || lower.contains("%00") || lower.contains("%25") { throw bad }
        var segments: [String] = []
        for part in raw.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard let segment = String(part).removingPercentEncoding else { throw bad }
            if segment == "." || segment == ".." || segment.contains("/") || segment.contains("\0") { throw bad }
            segments.append(segment)
        }
        // A trailing slash is allowed ("/types/"); other empty segments are not.
        if segments.last == "" { segments.removeLast() }
        if segments.contains("") { throw bad }
        return segments
    }

    /// A state-changing request must come from this server's own pages.
    static func checkSameOrigin(_ request: Request, authority: String) throws {
        let own = "http://" + authority
        let field = { (name: String) in HTTPField.Name(name).flatMap { request.headers[$0] } }
        if let origin = field("Origin") {
            guard origin.lowercased() == own else {
                throw StudioFailure(.forbidden, "cross-origin request refused: Origin '\(origin)' is not \(own)")
            }
            return
        }
        if let site = field("Sec-Fetch-Site")?.lowercased(), site != "same-origin", site != "none" {
            throw StudioFailure(.forbidden, "cross-origin request refused (Sec-Fetch-Site: \(site))")
        }
        if let referer = field("Referer"), !referer.lowercased().hasPrefix(own + "/") {
            throw StudioFailure(.forbidden, "cross-origin request refused: Referer '\(referer)' is not on \(own)")
        }
    }

    // MARK: routing

    func route(_ request: Request, path: [String], parameters: Parameters, authority: String) throws -> Response {
        let method = request.method
        func get(_ body: () throws -> Response) throws -> Response {
            guard method == .get else { throw StudioFailure(.methodNotAllowed, "\(path.isEmpty ? "/" : "/" + path.joined(separator: "/")) answers GET only") }
            return try body()
        }
        switch path.count {
        case 0:
            return try get { Self.html(.ok, try Pages.types(store)) }
        case 1 where path[0] == "stats":
            return try get { Self.html(.ok, try Pages.stats(store)) }
        case 1 where path[0] == "compact":
            guard method == .post else { throw StudioFailure(.methodNotAllowed, "/compact answers POST only") }
            try Self.checkSameOrigin(request, authority: authority)
            _ = try store.compact()
            var headers = Self.headers(contentType: "text/plain; charset=utf-8")
            headers[.location] = "/stats"
            return Response(status: .seeOther, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "compacted; see /stats\n")))
        case 2 where path[0] == "types":
            return try get {
                let (status, page) = try Pages.table(store, type: path[1], parameters: parameters)
                return Self.html(status, page)
            }
        case 3 where path[0] == "types" && path[2] == "object":
            return try get { Self.html(.ok, try Pages.object(store, type: path[1], key: parameters["key"])) }
        case 3 where path[0] == "types" && (path[2] == "export.csv" || path[2] == "export.json"):
            return try get {
                let csv = path[2] == "export.csv"
                let (body, _) = try Pages.export(store, type: path[1], parameters: parameters, csv: csv)
                var headers = Self.headers(contentType: csv ? "text/csv; charset=utf-8" : "application/json; charset=utf-8")
                let safeName = path[1].filter { $0.isLetter || $0.isNumber || $0 == "_" }
                headers[.contentDisposition] = "attachment; filename=\"\(safeName.isEmpty ? "export" : safeName).\(csv ? "csv" : "json")\""
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
        case 2 where path[0] == "assets":
            return try get {
                guard let asset = Assets.all[path[1]] else { throw StudioFailure(.notFound, "no asset '\(path[1])'") }
                return Response(status: .ok, headers: Self.headers(contentType: asset.contentType), body: .init(byteBuffer: ByteBuffer(string: asset.body)))
            }
        case 2 where path[0] == "api":
            return try get {
                switch path[1] {
                case "status": return try Self.json(.ok, API.status(store))
                case "types": return try Self.json(.ok, try API.types(store))
                case "stats": return try Self.json(.ok, try API.stats(store))
                default: throw StudioFailure(.notFound, "no endpoint /api/\(path[1])")
                }
            }
        case 3 where path[0] == "api" && path[1] == "types":
            return try get { try Self.json(.ok, try API.objects(store, type: path[2], parameters: parameters)) }
        default:
            throw StudioFailure(.notFound, "no page at /\(path.joined(separator: "/"))")
        }
    }

    // MARK: responses

    static func headers(contentType: String) -> HTTPFields {
        var fields = HTTPFields()
        fields[.contentType] = contentType
        for (name, value) in securityHeaders {
            if let name = HTTPField.Name(name) { fields[name] = value }
        }
        return fields
    }

    static func html(_ status: HTTPResponse.Status, _ page: String) -> Response {
        Response(status: status, headers: headers(contentType: "text/html; charset=utf-8"), body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    static func json(_ status: HTTPResponse.Status, _ object: Any) throws -> Response {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return Response(status: status, headers: headers(contentType: "application/json; charset=utf-8"),
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func failure(_ failure: StudioFailure, kind: Kind, store: StudioStore) -> Response {
        let status = HTTPResponse.Status(code: failure.status.rawValue)
        switch kind {
        case .html:
            return html(status, HTML.errorPage(failure, store: store))
        case .json:
            return (try? json(status, ["error": failure.message, "status": failure.status.rawValue]))
                ?? Response(status: status)
        case .text:
            return Response(status: status, headers: headers(contentType: "text/plain; charset=utf-8"),
                            body: .init(byteBuffer: ByteBuffer(string: failure.message + "\n")))
        }
    }
}
