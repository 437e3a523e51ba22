// The JSON endpoints under /api/: what the pages show, for scripts and tests.

import Foundation
import Strata

enum API {
    /// A fingerprint of the store's files (it changes on every commit and compaction); the
    /// pages poll it every two seconds for live updates.
    static func status(_ store: StudioStore) -> [String: Any] {
        ["fingerprint": store.fingerprint(), "writable": store.writable, "store": store.path]
    }

    static func types(_ store: StudioStore) throws -> [String: Any] {
        try store.inspect { inspector in
            guard let inspector else { return ["types": [Any]()] }
            let types: [[String: Any]] = inspector.schema.objectSchemas.sorted { $0.className < $1.className }.map { schema in
                [
                    "name": schema.className,
                    "count": inspector.count(ofType: schema.className),
                    "primaryKey": schema.primaryKeyProperty.map { $0.name as Any } ?? NSNull(),
                    "properties": schema.properties.map { ["name": $0.name, "type": $0.typeDescription] },
                ]
            }
            return ["types": types]
        }
    }

    static func objects(_ store: StudioStore, type: String, parameters: Parameters) throws -> [String: Any] {
        let size = try parameters.integer("size", default: 50, range: 1...Pages.maxPageSize)
        let requested = try parameters.integer("page", default: 1, range: 1...Pages.maxPage)
        return try store.inspect { inspector in
            let (inspector, schema) = try Pages.schema(inspector, type)
            let query = try ObjectQuery(schema: schema, parameters: parameters)
            let (objects, matching, page, pages) = try query.page(inspector, requested: requested, size: size)
            return [
                "type": type,
                "query": query.text.map { $0 as Any } ?? NSNull(),
                "total": inspector.count(ofType: type),
                "matching": matching,
                "page": page,
                "pages": pages,
                "size": size,
                "columns": try inspector.columns(ofType: type),
                "objects": objects,
            ]
        }
    }

    static func stats(_ store: StudioStore) throws -> [String: Any] {
        let compactions = store.compactions.count
        return try store.read { s in
            let stats = s.stats
            return [
                "segments": stats.segments,
                "liveBytes": stats.liveBytes,
                "deadBytes": stats.deadBytes,
                "pinnedBytes": stats.pinnedBytes,
                "diskBytes": stats.diskBytes,
                "keys": stats.keys,
                "indexBytes": stats.indexBytes,
                "compressionRatio": stats.compressionRatio,
                "lastSequence": Int(stats.lastSequence),
                "segmentDetails": stats.segmentDetails.map {
                    ["id": Int($0.id), "diskBytes": $0.diskBytes, "liveBytes": $0.liveBytes, "deadBytes": $0.deadBytes,
                     "sealed": $0.sealed, "compacted": $0.compacted] as [String: Any]
                },
                "compactions": compactions,
            ]
        }
    }
}
