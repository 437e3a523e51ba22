// JSON reading speed (issue 5): our reader against Foundation's JSONSerialization and
// JSONDecoder on the same real payloads, in the same run, and against simdjson's DOM parse
// (issue 15) as the ceiling: the fastest DOM parser there is, through CSimdjsonShim.

import CSimdjsonShim
import Foundation
import Strata

/// Any JSON, for JSONDecoder (a DOM decode, as JSONValue is).
enum AnyJSON: Codable {
    case null, bool(Bool), int(Int64), double(Double), string(String), array([AnyJSON]), object([String: AnyJSON])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let b = try? container.decode(Bool.self) { self = .bool(b) }
        else if let i = try? container.decode(Int64.self) { self = .int(i) }
        else if let d = try? container.decode(Double.self) { self = .double(d) }
        else if let s = try? container.decode(String.self) { self = .string(s) }
        else if let a = try? container.decode([AnyJSON].self) { self = .array(a) }
        else { self = .object(try container.decode([String: AnyJSON].self)) }
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }
}

struct JSONBenchmarks {
    var directory: String
    var rounds: Int

    func run() throws -> [ResultRow] {
        var rows: [ResultRow] = []
        for name in ["twitter.json", "citm_catalog.json", "github_events.json", "update-center.json"] {
            guard let data = FileManager.default.contents(atPath: directory + "/" + name) else { continue }
            FileHandle.standardError.write(Data("json: \(name)\n".utf8))
            func rate(_ body: () throws -> Void) rethrows -> Double {
                // One untimed run first, for each reader alike: the first run in a process pays
                // for growing the heap (page faults), whichever reader goes first.
                try body()
                var times: [Double] = []
                for _ in 0 ..< max(rounds, 21) { times.append(try time(body)) }
                return Double(data.count) / times.sorted()[times.count / 2]
            }
            var sink = 0
            let ours = try rate { if case .object(let o) = try JSONValue(data: data) { sink &+= o.count } }
            let serialization = try rate { sink &+= (try JSONSerialization.jsonObject(with: data) as? [String: Any])?.count ?? 0 }
            let decoder = try rate { if case .object(let o) = try JSONDecoder().decode(AnyJSON.self, from: data) { sink &+= o.count } }
            // simdjson parses in place from a buffer padded as it requires (the copy is made
            // once, outside the timing: simdjson at its best, as a ceiling should be).
            let padded = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count + simdjson_shim_padding(), alignment: 64)
            defer { padded.deallocate() }
            padded.initializeMemory(as: UInt8.self, repeating: 0)
            _ = data.copyBytes(to: padded.bindMemory(to: UInt8.self))
            let base = padded.baseAddress!.assumingMemoryBound(to: CChar.self)
            guard simdjson_dom_parse_count(base, data.count) >= 0 else { throw CocoaError(.fileReadCorruptFile) }
            let simdjson = rate { sink &+= Int(simdjson_dom_parse_count(base, data.count)) }
            let writing = try JSONValue(data: data)
            let write = try rate { sink &+= try writing.data().count }
            // Issue 15's goal names these three payloads.
            let ceilingGoal = ["twitter.json", "citm_catalog.json", "github_events.json"].contains(name)
            rows.append(ResultRow(
                benchmark: "read \(name) (\(data.count / 1024) KiB)",
                strata: formatBytesRate(ours) + "; write " + formatBytesRate(write),
                baseline: "JSONSerialization " + formatBytesRate(serialization) + "; JSONDecoder " + formatBytesRate(decoder),
                sqlite: "simdjson " + formatBytesRate(simdjson),
                ratios: String(format: "%.2f× simdjson, %.1f× JSONSerialization, %.1f× JSONDecoder (%d)",
                               ours / simdjson, ours / serialization, ours / decoder, sink % 10),
                target: "≥ 200 MB/s and ≥ 20× JSONSerialization" + (ceilingGoal ? "; ≥ 0.25× simdjson" : "")))
        }
        return rows
    }
}
