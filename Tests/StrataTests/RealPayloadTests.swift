// Real payloads nobody here wrote (in Fixtures/payloads; their source is in its README.md): GitHub events, Jenkins builds and
// update-center, the CITM catalog — decoded through the mapping engine, re-encoded and
// compared field by field with the source; and a fuzz that mutates payloads at random and
// checks a decode never traps and never leaves a partial write.

import XCTest
import StrataTestSupport
@testable import Strata

final class GitHubActor: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var login: String = ""
    @Persisted var gravatarId: String = ""
    @Persisted var url: String = ""
}

final class GitHubRepo: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var url: String = ""
}

struct GitHubPayload: ColumnJSONCodable, Equatable {
    var ref: String?
    var size: Int?
}

final class GitHubEvent: Object {
    @Persisted(primaryKey: true) var id: String = ""
    @Persisted var type: String = ""
    @Persisted var createdAt: Date? = nil
    @Persisted var `public`: Bool = false
    @Persisted var actor: GitHubActor?
    @Persisted var repo: GitHubRepo?
    @Persisted var payload: GitHubPayload? = nil
}

final class JenkinsJob: Object {
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var url: String = ""
    @Persisted var color: String = ""
}

final class JenkinsPlugin: Object {
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var title: String = ""
    @Persisted var version: String = ""
    @Persisted var buildDate: String = ""
    @Persisted var labels: List<String>
    @Persisted var dependencies: String = ""
    override class var realmCodableRawJsonSubstrings: [String] { ["dependencies"] }
}

final class CITMEvent: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var details: String? = nil   // "description" names Object's own description
    @Persisted var logo: String? = nil
    @Persisted var subTopicIds: List<Int>
    @Persisted var topicIds: List<Int>
    @Persisted var subjectCode: String? = nil
    @Persisted var subtitle: String? = nil
    override class var realmCodableKeys: [String: String] { ["details": "description"] }
}

final class RealPayloadTests: RealmTestCase {
    let types: [Object.Type] = [GitHubActor.self, GitHubRepo.self, GitHubEvent.self, JenkinsJob.self, JenkinsPlugin.self, CITMEvent.self]

    func payload(_ name: String) throws -> Data {
        try Data(contentsOf: JSONReaderTests.payloads.appendingPathComponent(name))
    }

    /// Every key of `encoded` equals the source's (the source may have more).
    func assertSubset(_ encoded: JSONValue, of source: JSONValue, _ path: String, file: StaticString = #filePath, line: UInt = #line) {
        guard case .object(let members) = encoded else {
            XCTAssertEqual(encoded, source, path, file: file, line: line)
            return
        }
        for (key, value) in members {
            // A list the source leaves out is an empty list here.
            if value == .array([]), source[key] == nil { continue }
            let original = source[key] ?? .null
            if case .object = value { assertSubset(value, of: original, "\(path).\(key)", file: file, line: line) }
            else { XCTAssertEqual(value, original, "\(path).\(key)", file: file, line: line) }
        }
    }

    func testGitHubEvents() throws {
        let data = try payload("github_events.json")
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm, keyStrategy: .convertFromSnakeCase)
        let events = try coder.decodeArray(GitHubEvent.self, from: data)
        guard case .array(let source) = try JSONValue(data: data) else { return XCTFail() }
        XCTAssertEqual(events.count, source.count)
        XCTAssertLessThan(realm.objects(GitHubActor.self).count, events.count, "actors upsert by id")
        for (event, json) in zip(events, source) {
            var encoded = try coder.encodeValue(event)
            // `payload` is a ColumnJSONCodable: nested JSON, holding only the fields it declares.
            if case .object(var members) = encoded {
                let payload = members.removeValue(forKey: "payload")
                if case .object(let fields)? = payload {
                    for (key, value) in fields where value != .null { XCTAssertEqual(value, json["payload"]?[key], "payload.\(key)") }
                }
                encoded = .object(members)
            }
            assertSubset(encoded, of: json, "event \(event.id)")
        }
    }

    func testJenkinsBuildsAndUpdateCenter() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm)
        let builds = try JSONValue(data: payload("apache_builds.json"))
        let jobs = try coder.decodeArray(JenkinsJob.self, from: builds["jobs"]!)
        guard case .array(let sourceJobs)? = builds["jobs"] else { return XCTFail() }
        XCTAssertEqual(jobs.count, sourceJobs.count)
        for (job, json) in zip(jobs, sourceJobs) { assertSubset(try coder.encodeValue(job), of: json, job.name) }

        let center = try JSONValue(data: payload("update-center.json"))
        guard case .object(let plugins)? = center["plugins"] else { return XCTFail() }
        let decoded = try coder.decodeArray(JenkinsPlugin.self, from: .array(Array(plugins.values)))
        XCTAssertEqual(decoded.count, plugins.count)
        for plugin in decoded {
            assertSubset(try coder.encodeValue(plugin), of: plugins[plugin.name]!, plugin.name)
        }
    }

    func testCITMCatalog() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm)
        let catalog = try JSONValue(data: payload("citm_catalog.json"))
        guard case .object(let events)? = catalog["events"] else { return XCTFail() }
        let decoded = try coder.decodeArray(CITMEvent.self, from: .array(Array(events.values)))
        XCTAssertEqual(decoded.count, events.count)
        for event in decoded { assertSubset(try coder.encodeValue(event), of: events[String(event.id)]!, "event \(event.id)") }
    }

    func testMutatedPayloadsNeverTrapAndNeverWriteHalf() throws {
        let data = try payload("twitter.json")
        let realm = try openRealm(types: [TwitterUser.self, Status.self])
        let twitterDates = DateFormatter()
        twitterDates.locale = Locale(identifier: "en_US_POSIX")
        twitterDates.dateFormat = "EEE MMM dd HH:mm:ss Z yyyy"
        let coder = RealmCoder(realm: realm, dateFormatter: twitterDates, keyStrategy: .convertFromSnakeCase)
        var generator = SplitMix64(seed: TestEnvironment.seed(default: 5))
        let scale = TestEnvironment.fuzzScale
        _ = try coder.decodeArray(Status.self, from: data)      // a store with data, which failures must not touch
        let source = Array(data)
        let parsed = try JSONValue(data: data)
        guard case .array(let statuses)? = parsed["statuses"] else { return XCTFail() }
        var failures = 0, successes = 0
        for round in 0 ..< 60 * scale {
            var bytes = source
            if round % 2 == 1 {
                // Valid JSON, wrong values deep inside: a later status breaks after earlier ones were read.
                var mutated = statuses
                let victim = Int.random(in: 1 ..< mutated.count, using: &generator)
                guard case .object(var status) = mutated[victim] else { continue }
                switch Int.random(in: 0 ..< 3, using: &generator) {
                case 0: status["retweet_count"] = .string("many")
                case 1: status["user"] = .object(["screen_name": .string("no id")])
                default: status["id"] = .null
                }
                mutated[victim] = .object(status)
                bytes = Array(try JSONValue.object(["statuses": .array(mutated)]).data())
            } else {
            for _ in 0 ..< Int.random(in: 1 ... 4, using: &generator) {
                let at = Int.random(in: 0 ..< bytes.count, using: &generator)
                switch Int.random(in: 0 ..< 4, using: &generator) {
                case 0: bytes[at] ^= UInt8.random(in: 1 ... 255, using: &generator)
                case 1: bytes.remove(at: at)
                case 2: bytes.insert(Array("\"{[,:]}0-e".utf8).randomElement(using: &generator)!, at: at)
                default: bytes.removeSubrange(at ..< min(bytes.count, at + Int.random(in: 1 ... 200, using: &generator)))
                }
            }
            }
            let before = (realm.objects(Status.self).count, realm.objects(TwitterUser.self).count, realm.snapshotSequence)
            do {
                let decoded = try coder.decodeArray(Status.self, from: Data(bytes))
                successes += 1
                XCTAssertFalse(decoded.isEmpty, "round \(round)")
            } catch is JSONMappingError {
                failures += 1
                let after = (realm.objects(Status.self).count, realm.objects(TwitterUser.self).count, realm.snapshotSequence)
                XCTAssertTrue(before == after, "round \(round): a failed decode changed the store")
            }
        }
        XCTAssertGreaterThan(failures, 0)
        print("payload fuzz: \(failures) refused without a write, \(successes) decoded")
    }
}
