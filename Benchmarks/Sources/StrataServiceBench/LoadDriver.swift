// The load driver: keep-alive HTTP/1.1 connections to 127.0.0.1 on swift-nio, each a task
// sending one request at a time — 90% reads (GET one user, GET a city's list), 10% partial
// PUTs — until its share of the requests is done or the time is up. Each connection writes
// only its own users (id % connections == its number), so the last acknowledged value of
// every written user is known exactly and can be checked against the store afterwards.

import BenchSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// What the driver knows a write stored: the values it sent, acknowledged with a 200.
struct Acknowledged: Sendable {
    var rank: Int
    var score: Double
    var updatedAt: Date
}

struct LoadResult: Sendable {
    var requests = 0
    var reads = 0
    var writes = 0
    var errors = 0
    var firstError: String?
    var seconds = 0.0
    /// Latency of each request, nanoseconds.
    var latencies: [UInt64] = []
    var acknowledged: [Int: Acknowledged] = [:]
    /// Users whose last write got no answer (the connection failed): it may or may not have
    /// been stored, so they are not checked.
    var inDoubt: Set<Int> = []

    var perSecond: Double { seconds > 0 ? Double(requests) / seconds : 0 }

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)
        return Double(sorted[max(index, 0)]) / 1e6
    }

    mutating func merge(_ other: LoadResult) {
        requests += other.requests
        reads += other.reads
        writes += other.writes
        errors += other.errors
        firstError = firstError ?? other.firstError
        latencies += other.latencies
        acknowledged.merge(other.acknowledged) { _, new in new }
        inDoubt.formUnion(other.inDoubt)
    }
}

struct HTTPReply {
    var status: Int
    var body: ByteBuffer
}

struct ConnectionClosed: Error {}

/// One keep-alive connection to the service.
enum LoopbackHTTP {
    typealias Inbound = NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    typealias Outbound = NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>

    /// Connects to 127.0.0.1:`port` and runs `body` with the connection, then closes it.
    static func withConnection<R: Sendable>(port: Int, group: any EventLoopGroup,
                                            _ body: (inout Inbound, Outbound) async throws -> R) async throws -> R {
        let channel = try await ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var responses = inbound.makeAsyncIterator()
            return try await body(&responses, outbound)
        }
    }

    static func send(_ method: HTTPMethod, _ uri: String, body: ByteBuffer? = nil, to outbound: Outbound) async throws {
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: uri)
        head.headers.add(name: "host", value: "127.0.0.1")
        if let body {
            head.headers.add(name: "content-type", value: "application/json")
            head.headers.add(name: "content-length", value: String(body.readableBytes))
            try await outbound.write(contentsOf: [.head(head), .body(.byteBuffer(body)), .end(nil)])
        } else {
            try await outbound.write(contentsOf: [.head(head), .end(nil)])
        }
    }

    /// Reads one whole response; `onChunk` sees each body part as it arrives.
    static func receive(_ inbound: inout Inbound, onChunk: (ByteBuffer) -> Void = { _ in }) async throws -> HTTPReply {
        var status = 0
        var body = ByteBuffer()
        while let part = try await inbound.next() {
            switch part {
            case .head(let head):
                status = Int(head.status.code)
            case .body(var chunk):
                onChunk(chunk)
                body.writeBuffer(&chunk)
            case .end:
                return HTTPReply(status: status, body: body)
            }
        }
        throw ConnectionClosed()
    }

    static func request(_ method: HTTPMethod, _ uri: String, body: ByteBuffer? = nil,
                        _ inbound: inout Inbound, _ outbound: Outbound) async throws -> HTTPReply {
        try await send(method, uri, body: body, to: outbound)
        return try await receive(&inbound)
    }
}

struct LoadDriver {
    var port: Int
    var users: Int
    var connections: Int
    var requests: Int
    var seconds: Double
    /// Distinguishes the runs' written values.
    var run: Int
    var group: any EventLoopGroup
    /// Percent of requests that are PUTs, and GETs of a city's list; the rest GET one user.
    var writePercent = 10
    var listPercent = 15

    /// Runs the mix on `connections` connections; stops after `requests` requests in all or
    /// `seconds`, whichever comes first.
    func runLoad() async throws -> LoadResult {
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        let result = try await withThrowingTaskGroup(of: LoadResult.self) { group in
            for connection in 0 ..< connections {
                let share = requests / connections + (connection < requests % connections ? 1 : 0)
                group.addTask { try await self.connectionLoop(connection, requests: share, deadline: deadline) }
            }
            var total = LoadResult()
            for try await part in group { total.merge(part) }
            return total
        }
        var measured = result
        measured.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return measured
    }

    private func connectionLoop(_ connection: Int, requests: Int, deadline: UInt64) async throws -> LoadResult {
        let port = port, users = users, connections = connections, run = run
        let writePercent = writePercent, listPercent = listPercent
        return try await LoopbackHTTP.withConnection(port: port, group: group) { inbound, outbound in
            var rng = SplitMix64(seed: UInt64(run * 1000 + connection + 1))
            var result = LoadResult()
            result.latencies.reserveCapacity(requests)
            // This connection's users for writes: id % connections == connection.
            let ownUsers = (users - connection + connections - 1) / connections
            for sequence in 0 ..< requests {
                let began = DispatchTime.now().uptimeNanoseconds
                if began >= deadline { break }
                let dice = Int(rng.next() % 100)
                let reply: HTTPReply
                var written: (id: Int, value: Acknowledged)?
                do {
                    if dice < writePercent, ownUsers > 0 {
                        let id = connection + connections * Int(rng.next() % UInt64(ownUsers))
                        let value = Acknowledged(rank: Int(rng.next() % 1000),
                                                 score: Double(run * 100_000_000 + connection * 1_000_000 + sequence),
                                                 updatedAt: Date(timeIntervalSince1970: 1_750_000_000 + Double(run * 1_000_000 + sequence)))
                        written = (id, value)
                        // Partial: city, name and email are left out and keep their values.
                        let body = #"{"id":\#(id),"rank":\#(value.rank),"score":\#(value.score),"updatedAt":"\#(iso8601(value.updatedAt))"}"#
                        reply = try await LoopbackHTTP.request(.PUT, "/users/\(id)", body: ByteBuffer(string: body), &inbound, outbound)
                        result.writes += 1
                    } else if dice < writePercent + listPercent {
                        let sort = rng.next() % 2 == 0 ? "rank" : "name"
                        reply = try await LoopbackHTTP.request(.GET, "/users?city=\(Dataset.city(Int(rng.next() % UInt64(Dataset.cities))))&sort=\(sort)&limit=20", &inbound, outbound)
                        result.reads += 1
                    } else {
                        reply = try await LoopbackHTTP.request(.GET, "/users/\(Int(rng.next() % UInt64(users)))", &inbound, outbound)
                        result.reads += 1
                    }
                } catch {
                    if let written { result.inDoubt.insert(written.id) }
                    result.errors += 1
                    result.firstError = result.firstError ?? "\(error)"
                    result.requests += 1
                    break   // the connection is gone
                }
                result.latencies.append(DispatchTime.now().uptimeNanoseconds - began)
                result.requests += 1
                if reply.status == 200 {
                    if let written { result.acknowledged[written.id] = written.value }
                } else {
                    result.errors += 1
                    result.firstError = result.firstError ?? "HTTP \(reply.status): \(String(buffer: reply.body))"
                }
            }
            return result
        }
    }

    /// Reads `GET /events` to its end: the number of lines (the snapshot, then changes).
    func streamEvents(seconds: Double) async throws -> Int {
        try await LoopbackHTTP.withConnection(port: port, group: group) { inbound, outbound in
            try await LoopbackHTTP.send(.GET, "/events?city=\(Dataset.city(0))&limit=5&max=100000&seconds=\(seconds)", to: outbound)
            var lines = 0
            let reply = try await LoopbackHTTP.receive(&inbound) { chunk in
                lines += chunk.readableBytesView.lazy.filter { $0 == UInt8(ascii: "\n") }.count
            }
            guard reply.status == 200 else { throw BadRequest(description: "GET /events: HTTP \(reply.status)") }
            return lines
        }
    }
}

func iso8601(_ date: Date) -> String {
    date.formatted(.iso8601)
}

