// The HTTP service: Hummingbird 2 routes over a UserCache, bound to 127.0.0.1 only.

import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

enum Service {
    static func router<Cache: UserCache>(_ cache: Cache) -> Router<BasicRequestContext> {
        let router = Router()
        let json: HTTPFields = [.contentType: "application/json"]

        router.put("/users/:id") { request, context -> Response in
            let id = try context.parameters.require("id", as: Int.self)
            let body = try await request.body.collect(upTo: 64 << 10)
            do {
                return Response(status: .ok, headers: json, body: .init(byteBuffer: try await cache.put(id: id, body: body)))
            } catch let error as BadRequest {
                throw HTTPError(.badRequest, message: error.description)
            }
        }

        router.get("/users/:id") { _, context -> Response in
            let id = try context.parameters.require("id", as: Int.self)
            guard let user = try await cache.user(id: id) else { throw HTTPError(.notFound) }
            return Response(status: .ok, headers: json, body: .init(byteBuffer: user))
        }

        router.get("/users") { request, _ -> Response in
            let query = request.uri.queryParameters
            guard let city = query.get("city") else { throw HTTPError(.badRequest, message: "city is required") }
            guard let sort = UserSort(rawValue: query.get("sort") ?? "rank") else {
                throw HTTPError(.badRequest, message: "sort: rank or name")
            }
            let limit = min(max(query.get("limit", as: Int.self) ?? 50, 1), 1000)
            let users = try await cache.users(city: city, sort: sort, limit: limit)
            return Response(status: .ok, headers: json, body: .init(byteBuffer: users))
        }

        router.get("/events") { request, _ -> Response in
            let query = request.uri.queryParameters
            let city = query.get("city") ?? Dataset.city(0)
            let limit = min(max(query.get("limit", as: Int.self) ?? 10, 0), 1000)
            let maxEvents = min(max(query.get("max", as: Int.self) ?? 1000, 1), 100_000)
            let seconds = min(max(query.get("seconds", as: Double.self) ?? 10, 0), 60)
            let body = try await cache.events(city: city, limit: limit, maxEvents: maxEvents, seconds: seconds)
            return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: body)
        }
        return router
    }

    /// Runs the service on 127.0.0.1 (`port` 0: any free port) while `body` runs with the
    /// bound port, then stops it.
    static func run<Cache: UserCache, R: Sendable>(_ cache: Cache, port: Int = 0,
                                                   _ body: @Sendable (Int) async throws -> R) async throws -> R {
        var logger = Logger(label: "strata-service-bench")
        logger.logLevel = .warning
        let (bound, boundContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router(cache),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "strata-service-bench"),
            onServerRunning: { channel in
                boundContinuation.yield(channel.localAddress?.port ?? port)
                boundContinuation.finish()
            },
            logger: logger)
        let services = ServiceGroup(services: [app], logger: logger)
        let server = Task {
            defer { boundContinuation.finish() }
            try await services.run()
        }
        var ports = bound.makeAsyncIterator()
        guard let actualPort = await ports.next() else {
            try await server.value
            throw BadRequest(description: "the service did not start")
        }
        let result: Result<R, any Error>
        do {
            result = .success(try await body(actualPort))
        } catch {
            result = .failure(error)
        }
        // Graceful: the server stops accepting, lets open requests finish, then returns.
        await services.triggerGracefulShutdown()
        try await server.value
        return try result.get()
    }
}
