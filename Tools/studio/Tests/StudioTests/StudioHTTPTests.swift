// Strata Studio over HTTP, as a browser or a script reaches it: the server runs in-process on
// 127.0.0.1 with an ephemeral port, and a raw HTTP/1.1 client sends exactly the bytes a test
// names (Host, Origin, un-normalized paths) — every endpoint, and every bad input refused
// with a clear error that changes nothing.

import Foundation
import Strata
import StudioCore
import XCTest

final class StudioPet: Object {
    override class var className: String { "Pet" }
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var age: Int = 0
}

final class StudioOwner: Object {
    override class var className: String { "Owner" }
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var score: Double = 0
    @Persisted var pet: StudioPet?
    @Persisted var tags: List<String>
    @Persisted var friends: List<StudioPet>
}

/// A type without a primary key: objects are named by their hidden `_id`.
final class StudioNote: Object {
    override class var className: String { "Note" }
    @Persisted var text: String = ""
}

final class StudioHTTPTests: XCTestCase {
    var directory = ""
    var server: RunningStudio?
    var studio: StudioStore?
    var port: Int { server?.port ?? 0 }

    override func setUp() async throws {
        directory = NSTemporaryDirectory() + "strata-studio-test-\(UUID().uuidString)"
        try Self.writeObjects(directory)
    }

    override func tearDown() async throws {
        try await server?.stop()
        studio?.close()
        server = nil
        studio = nil
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func configuration(_ directory: String) -> Realm.Configuration {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
        config.objectTypes = [StudioOwner.self, StudioPet.self, StudioNote.self]
        return config
    }

    /// Three owners (awkward text, links, lists), three pets (one with a key that needs
    /// escaping in a URL), two notes. The realm is gone when this returns (the store closed).
    static func writeObjects(_ directory: String) throws {
        let realm = try Realm(configuration: configuration(directory))
        try realm.write {
            let rex = try realm.create(StudioPet.self, value: ["name": "Rex", "age": 3])
            let odd = try realm.create(StudioPet.self, value: ["name": "Tom & Jerry/1?", "age": 5])
            _ = try realm.create(StudioPet.self, value: ["name": "Zed", "age": 1])
            let ann = try realm.create(StudioOwner.self, value: ["id": 1, "name": "Ann, \"the\" first", "score": 2.5, "tags": ["a", "b"]])
            ann.pet = rex
            ann.friends.append(odd)
            ann.friends.append(rex)
            _ = try realm.create(StudioOwner.self, value: ["id": 2, "name": "Bo\nline two", "score": 7])
            let cy = try realm.create(StudioOwner.self, value: ["id": 3, "name": "<b>Cy</b>", "score": 4])
            cy.pet = odd
            _ = try realm.create(StudioNote.self, value: ["text": "first note"])
            _ = try realm.create(StudioNote.self, value: ["text": "second note"])
        }
    }

    func start(writable: Bool = false) async throws {
        let studio = try StudioStore(path: directory, writable: writable)
        self.studio = studio
        server = try await Studio.start(store: studio, port: 0)
    }

    // MARK: the client

    struct HTTPResult {
        var status: Int
        var headers: [String: String]
        var body: String
        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    /// One request on its own connection: the request line and headers exactly as given.
    func http(_ target: String, host: String? = "default", headers: [String: String] = [:]) throws -> HTTPResult {
        try http("GET", target, host: host, headers: headers)
    }

    func http(_ method: String, _ target: String, host: String? = "default", headers: [String: String] = [:]) throws -> HTTPResult {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw NSError(domain: "connect", code: Int(errno)) }
        var request = "\(method) \(target) HTTP/1.1\r\n"
        if let host { request += "Host: \(host == "default" ? "127.0.0.1:\(port)" : host)\r\n" }
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if method == "POST" { request += "Content-Length: 0\r\n" }
        request += "Connection: close\r\n\r\n"
        let bytes = Array(request.utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }, bytes.count)
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response += buffer[0..<n]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw NSError(domain: "no response: \(text)", code: 0) }
        let head = text[..<split.lowerBound].components(separatedBy: "\r\n")
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = String(text[split.upperBound...])
        if fields["transfer-encoding"]?.lowercased() == "chunked" { body = Self.unchunk(body) }
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        return HTTPResult(status: status, headers: fields, body: body)
    }

    static func unchunk(_ text: String) -> String {
        var bytes = Array(text.utf8)[...]
        var out: [UInt8] = []
        while let lineEnd = bytes.firstIndex(of: 0x0D) {
            guard let size = Int(String(decoding: bytes[bytes.startIndex..<lineEnd], as: UTF8.self), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            out += bytes[start..<start + size]
            bytes = bytes[(start + size + 2)...]
        }
        return String(decoding: out, as: UTF8.self)
    }

    func json(_ target: String) throws -> [String: Any] {
        let result = try http(target)
        XCTAssertEqual(result.status, 200, result.body)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.body.utf8)) as? [String: Any])
    }

    func ids(_ target: String) throws -> [Int] {
        (try json(target)["objects"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }
    }

    // MARK: pages

    func testTypesPageListsEveryTypeWithItsCount() async throws {
        try await start()
        let page = try http("/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("content-type"), "text/html; charset=utf-8")
        XCTAssertTrue(page.body.contains(#"<a href="/types/Owner">Owner</a></td><td class="num count">3</td>"#), page.body)
        XCTAssertTrue(page.body.contains(#"<a href="/types/Pet">Pet</a></td><td class="num count">3</td>"#))
        XCTAssertTrue(page.body.contains(#"<a href="/types/Note">Note</a></td><td class="num count">2</td>"#))
        XCTAssertNotNil(page.header("content-security-policy"))
        let types = try XCTUnwrap(try json("/api/types")["types"] as? [[String: Any]])
        XCTAssertEqual(types.map { $0["name"] as? String }, ["Note", "Owner", "Pet"])
        XCTAssertEqual(types.map { $0["count"] as? Int }, [2, 3, 3])
        XCTAssertTrue(types[0]["primaryKey"] is NSNull)
    }

    func testTablePagesSortsLinksAndExpandsLists() async throws {
        try await start()
        let page = try http("/types/Owner?size=2")
        XCTAssertEqual(page.status, 200, page.body)
        XCTAssertTrue(page.body.contains("page 1 of 2"))
        XCTAssertTrue(page.body.contains(#"<a id="next" href="/types/Owner?page=2&amp;size=2">"#), page.body)
        XCTAssertEqual(page.body.components(separatedBy: "<a class=\"detail\"").count - 1, 2, "two rows")
        XCTAssertTrue(page.body.contains(#"<a class="link" href="/types/Pet/object?key=Rex">Pet Rex</a>"#), "links lead to the linked object")
        XCTAssertTrue(page.body.contains(#"<details><summary>2 items</summary><ol><li><a class="link" href="/types/Pet/object?key=Tom%20%26%20Jerry%2F1%3F">"#),
                      "lists of links are expandable, keys escaped: \(page.body)")
        XCTAssertTrue(page.body.contains("&lt;b&gt;Cy&lt;/b&gt;") || !page.body.contains("<b>Cy</b>"), "text is escaped")
        XCTAssertTrue(page.body.contains(#"<a class="sort" href="/types/Owner?sort=score&amp;size=2">score</a>"#), page.body)
        let second = try http("/types/Owner?page=2&size=2")
        XCTAssertTrue(second.body.contains("&lt;b&gt;Cy&lt;/b&gt;"), "HTML in values is escaped")
        XCTAssertFalse(second.body.contains("<b>Cy</b>"))

        XCTAssertEqual(try ids("/api/types/Owner?sort=score"), [1, 3, 2])
        XCTAssertEqual(try ids("/api/types/Owner?sort=score&desc=1"), [2, 3, 1])
        let sorted = try http("/types/Owner?sort=score&desc=1")
        XCTAssertTrue(sorted.body.contains("score ▼"), "the sorted column is marked")
        XCTAssertTrue(sorted.body.contains(#"href="/types/Owner?sort=score">score ▼"#), "clicking again sorts ascending: \(sorted.body)")
        XCTAssertEqual(try http("/types/Owner?sort=nope").status, 400)
        XCTAssertEqual(try http("/types/Owner?sort=tags").status, 400, "lists do not sort")
        let paged = try json("/api/types/Owner?size=1&page=3")
        XCTAssertEqual(paged["pages"] as? Int, 3)
        XCTAssertEqual((paged["objects"] as? [[String: Any]])?.first?["id"] as? Int, 3)
    }

    func testQueryBoxRunsTheStringLanguageAndShowsErrorsInline() async throws {
        try await start()
        XCTAssertEqual(try ids("/api/types/Owner?q=score+%3E+3"), [2, 3])
        XCTAssertEqual(try ids("/api/types/Owner?q=score%20%3E%200%20SORT(score%20DESC)%20LIMIT(2)"), [2, 3])
        XCTAssertEqual(try ids("/api/types/Owner?q=pet.name+BEGINSWITH%5Bc%5D+'r'+OR+tags.%40count+%3E+1"), [1])
        let page = try http("/types/Owner?q=score+%3E+3&sort=score&desc=1")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains(#"<span id="matching">2 matching</span>"#), page.body)
        XCTAssertTrue(page.body.contains(#"value="score &gt; 3""#), "the query stays in the box")
        let own = try http("/types/Owner?q=score+%3E+0+SORT(id+DESC)")
        XCTAssertFalse(own.body.contains("class=\"sort\""), "a query with its own SORT leaves the headers alone")

        let bad = try http("/types/Owner?q=score+%3E+%3E+3")
        XCTAssertEqual(bad.status, 400)
        XCTAssertTrue(bad.body.contains(#"<div class="error" id="query-error">invalid query at offset 8 of &quot;score &gt; &gt; 3&quot;: expected a property, a value or an argument, found &#39;&gt;&#39;"#), bad.body)
        XCTAssertTrue(bad.body.contains("score &gt; &gt; 3\n        ^"), "a caret under the offset")
        let badAPI = try http("/api/types/Owner?q=nosuch+%3D%3D+1")
        XCTAssertEqual(badAPI.status, 400)
        XCTAssertTrue(badAPI.body.contains("offset"), badAPI.body)
        XCTAssertEqual(try http("/types/Owner/export.csv?q=(((").status, 400)
        XCTAssertEqual(try http("/types/Owner?q=%ZZ").status, 400, "bad percent-encoding")
    }

    func testObjectDetailShowsEveryPropertyAndFollowsLinks() async throws {
        try await start()
        let ann = try http("/types/Owner/object?key=1")
        XCTAssertEqual(ann.status, 200, ann.body)
        XCTAssertTrue(ann.body.contains(#"<h1>Owner <code id="key">1</code></h1>"#))
        XCTAssertTrue(ann.body.contains("Ann, &quot;the&quot; first"))
        XCTAssertTrue(ann.body.contains(#"<details open><summary>2 items</summary>"#), "lists open on the detail page")
        XCTAssertTrue(ann.body.contains(#"<a class="link" href="/types/Pet/object?key=Rex">Pet Rex</a>"#))
        let rex = try http("/types/Pet/object?key=Rex")
        XCTAssertEqual(rex.status, 200)
        XCTAssertTrue(rex.body.contains(#"<code id="key">Rex</code>"#))
        let odd = try http("/types/Pet/object?key=Tom%20%26%20Jerry%2F1%3F")
        XCTAssertEqual(odd.status, 200, "a key with /, & and ? in it: \(odd.body)")
        XCTAssertTrue(odd.body.contains("Tom &amp; Jerry/1?"))
        let notes = try json("/api/types/Note")["objects"] as? [[String: Any]]
        let noteID = try XCTUnwrap(notes?.first?["_id"])
        let note = try http("/types/Note/object?key=\(noteID)")
        XCTAssertEqual(note.status, 200, "types without a primary key are found by _id")
        XCTAssertTrue(note.body.contains("first note"))

        XCTAssertEqual(try http("/types/Owner/object?key=99").status, 404)
        XCTAssertEqual(try http("/types/Owner/object?key=abc").status, 404)
        let missing = try http("/types/Owner/object")
        XCTAssertEqual(missing.status, 400)
        XCTAssertTrue(missing.body.contains("?key="))
    }

    func testUnknownTypesAreNotFound() async throws {
        try await start()
        for target in ["/types/Nope", "/types/Nope/object?key=1", "/types/Nope/export.csv", "/api/types/Nope", "/nowhere", "/api/nothing"] {
            let result = try http(target)
            XCTAssertEqual(result.status, 404, target)
        }
        let page = try http("/types/Nope")
        XCTAssertTrue(page.body.contains("the store has no type &#39;Nope&#39;; its types are Note, Owner, Pet"), page.body)
        let api = try http("/api/types/Nope")
        XCTAssertTrue(api.body.contains(#""error":"the store has no type 'Nope'"#), api.body)
    }

    func testPageNumbersOutOfRangeAreRefusedOrClamped() async throws {
        try await start()
        for bad in ["page=-1", "page=0", "page=abc", "page=99999999999999999999999", "page=1.5", "size=0", "size=-3", "size=100000", "size=x"] {
            let page = try http("/types/Owner?\(bad)")
            XCTAssertEqual(page.status, 400, bad)
            XCTAssertTrue(page.body.contains("must be a whole number"), page.body)
            XCTAssertEqual(try http("/api/types/Owner?\(bad)").status, 400, bad)
        }
        let far = try http("/types/Owner?page=999999")
        XCTAssertEqual(far.status, 200)
        XCTAssertTrue(far.body.contains("There is 1 page; page 999999 was brought back to 1."), far.body)
        XCTAssertEqual(try json("/api/types/Owner?page=1000000000&size=2")["page"] as? Int, 2)
    }

    func testPathTraversalNeverLeavesTheEmbeddedAssets() async throws {
        try await start()
        let css = try http("/assets/studio.css")
        XCTAssertEqual(css.status, 200)
        XCTAssertEqual(css.header("content-type"), "text/css; charset=utf-8")
        XCTAssertEqual(try http("/assets/studio.js").status, 200)
        for target in ["/assets/../Package.swift", "/assets/../../../../etc/passwd", "/assets/%2e%2e/%2e%2e/etc/passwd",
                       "/assets/..%2f..%2fetc%2fpasswd", "/%2e%2e/%2e%2e/etc/passwd", "/assets/studio.css/../../../etc/passwd",
                       "/assets/..\\..\\etc\\passwd", "/assets/%252e%252e/etc/passwd", "/assets/./studio.css", "/assets//etc/passwd",
                       "/types/..", "/types/%2e%2e/object?key=1", "/assets/%00"] {
            let result = try http(target)
            XCTAssertTrue(result.status == 400 || result.status == 404, "\(target): \(result.status)")
            XCTAssertFalse(result.body.contains("root:"), target)
            XCTAssertFalse(result.body.contains("PackageDescription"), target)
        }
        XCTAssertEqual(try http("/assets/nothing.js").status, 404)
        XCTAssertEqual(try http("/assets/Package.swift").status, 404)
    }

    func testOnlyLoopbackHostNamesAreAnswered() async throws {
        try await start()
        XCTAssertEqual(try http("/", host: "localhost:\(port)").status, 200)
        XCTAssertEqual(try http("/", host: "127.0.0.1").status, 200)
        for host in ["evil.example", "evil.example:\(port)", "127.0.0.1.evil.example", "localhost.evil.example:\(port)", "10.0.0.1:\(port)", "[::1]:\(port)", "127.0.0.1:x"] {
            let result = try http("/", host: host)
            XCTAssertEqual(result.status, 403, host)
            XCTAssertTrue(result.body.contains("127.0.0.1 or localhost"), result.body)
        }
        XCTAssertEqual(try http("/api/types", host: "evil.example").status, 403)
        XCTAssertEqual(try http("/", host: nil).status, 403, "no Host header")
    }

    func testCompactIsRefusedReadOnlyAndFromOtherOrigins() async throws {
        try await start()
        let before = try json("/api/status")["fingerprint"] as? String
        let readOnly = try http("POST", "/compact", headers: ["Origin": "http://127.0.0.1:\(port)"])
        XCTAssertEqual(readOnly.status, 403)
        XCTAssertTrue(readOnly.body.contains("--writable"), readOnly.body)
        XCTAssertEqual(try http("POST", "/compact", headers: ["Origin": "http://evil.example"]).status, 403)
        XCTAssertEqual(try http("GET", "/compact").status, 405)
        XCTAssertEqual(try http("POST", "/types/Owner").status, 405)
        XCTAssertEqual(try http("DELETE", "/").status, 405)
        let stats = try http("/stats")
        XCTAssertTrue(stats.body.contains(#"id="compact-disabled""#))
        XCTAssertFalse(stats.body.contains(#"id="compact-form""#))
        XCTAssertEqual(try json("/api/status")["fingerprint"] as? String, before, "nothing changed")
    }

    func testCompactInWritableModeNeedsTheSameOrigin() async throws {
        try await start(writable: true)
        XCTAssertEqual(try json("/api/status")["writable"] as? Bool, true)
        let before = try json("/api/stats")
        for headers in [["Origin": "http://evil.example"], ["Origin": "null"], ["Origin": "http://127.0.0.1:1"],
                        ["Sec-Fetch-Site": "cross-site"], ["Referer": "http://evil.example/page"]] {
            let refused = try http("POST", "/compact", headers: headers)
            XCTAssertEqual(refused.status, 403, "\(headers)")
            XCTAssertTrue(refused.body.contains("cross-origin request refused"), refused.body)
        }
        let unchanged = try json("/api/stats")
        XCTAssertEqual(unchanged["compactions"] as? Int, 0)
        XCTAssertEqual(unchanged["segments"] as? Int, before["segments"] as? Int)
        let stats = try http("/stats")
        XCTAssertTrue(stats.body.contains(#"id="compact-form""#))

        let done = try http("POST", "/compact", headers: ["Origin": "http://127.0.0.1:\(port)", "Sec-Fetch-Site": "same-origin"])
        XCTAssertEqual(done.status, 303, done.body)
        XCTAssertEqual(done.header("location"), "/stats")
        let after = try json("/api/stats")
        XCTAssertEqual(after["compactions"] as? Int, 1)
        XCTAssertLessThanOrEqual(after["deadBytes"] as? Int ?? .max, before["deadBytes"] as? Int ?? 0, "\(after)")
        let history = try http("/stats")
        XCTAssertTrue(history.body.contains(#"<svg id="compaction-history""#))
        XCTAssertTrue(history.body.contains(#"<table id="compactions">"#))
        XCTAssertEqual(try ids("/api/types/Owner"), [1, 2, 3], "objects survive compaction")
    }

    func testExportWritesTheQueryAsCSVAndJSON() async throws {
        try await start()
        let csv = try http("/types/Owner/export.csv")
        XCTAssertEqual(csv.status, 200)
        XCTAssertEqual(csv.header("content-type"), "text/csv; charset=utf-8")
        XCTAssertEqual(csv.header("content-disposition"), #"attachment; filename="Owner.csv""#)
        XCTAssertEqual(csv.body, "id,name,score,pet,tags,friends\r\n"
            + "1,\"Ann, \"\"the\"\" first\",2.5,Rex,\"[\"\"a\"\",\"\"b\"\"]\",\"[\"\"Tom & Jerry/1?\"\",\"\"Rex\"\"]\"\r\n"
            + "2,\"Bo\nline two\",7.0,,[],[]\r\n"
            + "3,<b>Cy</b>,4.0,Tom & Jerry/1?,[],[]\r\n")
        let filtered = try http("/types/Owner/export.csv?q=score+%3E+3&sort=score&desc=1")
        XCTAssertEqual(filtered.body.components(separatedBy: "\r\n").dropFirst().first?.hasPrefix("2,"), true, filtered.body)
        let json = try http("/types/Owner/export.json?q=score+%3E+3")
        XCTAssertEqual(json.status, 200)
        XCTAssertEqual(json.header("content-type"), "application/json; charset=utf-8")
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [[String: Any]])
        XCTAssertEqual(rows.map { $0["id"] as? Int }, [2, 3])
        XCTAssertEqual(rows[1]["pet"] as? String, "Tom & Jerry/1?")
        XCTAssertEqual(try http("/types/Owner/export.json?q=score+%3E").status, 400)
    }

    func testStatsPageDrawsSpaceAndSegmentsAsSVG() async throws {
        try await start()
        let page = try http("/stats")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains(#"<svg id="space""#))
        XCTAssertTrue(page.body.contains(#"<svg id="segment-map""#))
        XCTAssertTrue(page.body.contains(#"<svg id="type-counts""#))
        let stats = try json("/api/stats")
        let segments = try XCTUnwrap(stats["segmentDetails"] as? [[String: Any]])
        XCTAssertEqual(page.body.components(separatedBy: "<g class=\"segment\"").count - 1, segments.count)
        XCTAssertEqual(stats["keys"] as? Int ?? 0 > 0, true)
    }

    func testCommitsOfAnotherWriterShowWithoutRestarting() async throws {
        try await start()
        let before = try json("/api/status")["fingerprint"] as? String
        // Between requests the read-only studio holds no lock: a writer opens the store.
        do {
            let realm = try Realm(configuration: Self.configuration(directory))
            try realm.write { _ = try realm.create(StudioOwner.self, value: ["id": 4, "name": "Di", "score": 1]) }
        }
        XCTAssertNotEqual(try json("/api/status")["fingerprint"] as? String, before, "live updates see the commit")
        XCTAssertEqual(try ids("/api/types/Owner"), [1, 2, 3, 4])
        XCTAssertTrue(try http("/").body.contains(#"<td class="num count">4</td>"#))
    }

    /// A store a writer holds (here a realm in this process; a service in another) is served
    /// read-only all the same: each request reads what the writer has made durable.
    func testAStoreHeldByAWriterIsServedLive() async throws {
        try await start()
        let realm = try Realm(configuration: Self.configuration(directory))
        let page = try http("/types/Owner")
        XCTAssertEqual(page.status, 200, page.body)
        XCTAssertEqual(try ids("/api/types/Owner"), [1, 2, 3])
        XCTAssertEqual(studio?.isFollowingAWriter, true, "one store follows the writer across requests")
        try realm.write { _ = try realm.create(StudioOwner.self, value: ["id": 5, "name": "Live", "score": 2]) }
        XCTAssertEqual(try ids("/api/types/Owner"), [1, 2, 3, 5], "the writer's commit is served")
        try realm.write { _ = try realm.create(StudioOwner.self, value: ["id": 6, "name": "Later", "score": 3]) }
        XCTAssertEqual(try ids("/api/types/Owner"), [1, 2, 3, 5, 6], "the follower refreshed for the request")
        XCTAssertEqual(studio?.isFollowingAWriter, true)
        XCTAssertNoThrow(try StudioStore(path: directory, writable: false))
        // The writer closes: the same store goes on following, from what its close recorded.
        realm.invalidate()
        XCTAssertEqual(try ids("/api/types/Owner"), [1, 2, 3, 5, 6])
        XCTAssertEqual(studio?.isFollowingAWriter, true)
        let reopened = try Realm(configuration: Self.configuration(directory))
        try reopened.write { _ = try reopened.create(StudioOwner.self, value: ["id": 7, "name": "Again", "score": 4]) }
        XCTAssertEqual(try ids("/api/types/Owner"), [1, 2, 3, 5, 6, 7], "a new writer is followed in turn")
        reopened.invalidate()
    }

    /// An encrypted store (strata studio --key-file): served with its key, refused without.
    func testAnEncryptedStoreIsServedWithItsKeyAndRefusedWithout() async throws {
        let encrypted = directory + "-encrypted"
        defer { try? FileManager.default.removeItem(atPath: encrypted) }
        let key = Data((0 ..< 64).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 1) })
        do {
            var config = Self.configuration(encrypted)
            config.encryptionKey = key
            let realm = try Realm(configuration: config)
            try realm.write { _ = try realm.create(StudioOwner.self, value: ["id": 9, "name": "Sealed", "score": 1]) }
        }
        XCTAssertThrowsError(try StudioStore(path: encrypted, writable: false)) { error in
            XCTAssertTrue("\(error)".contains("wrong encryption key"), "\(error)")
        }
        let studio = try StudioStore(path: encrypted, writable: false, encryptionKey: key)
        self.studio = studio
        server = try await Studio.start(store: studio, port: 0)
        let page = try http("/types/Owner")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains("Sealed"), page.body)
    }
}
