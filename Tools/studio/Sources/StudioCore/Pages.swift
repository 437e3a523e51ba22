// The pages, drawn on the server from the store as it is at the request (plain HTML; the
// script only adds refresh, live-update polling and "expand all").

import Foundation
import Hummingbird
import Strata

/// A type's query as the table page, the export and the JSON API take it: the query box's
/// text (`q`, the string query language), and a column to sort by (`sort`, `desc=1`).
struct ObjectQuery {
    let schema: ObjectSchema
    let filter: String
    let sort: String?
    let descending: Bool
    /// The query text has its own SORT(…) or LIMIT(…): the column headers do not sort.
    let ownOrder: Bool

    init(schema: ObjectSchema, parameters: Parameters) throws {
        self.schema = schema
        filter = (parameters["q"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        ownOrder = filter.range(of: #"(?i)\b(SORT|LIMIT)\s*\("#, options: .regularExpression) != nil
        descending = parameters["desc"] == "1"
        if let sort = parameters["sort"], !sort.isEmpty {
            guard let property = schema[sort], Self.sortable(property) else {
                throw StudioFailure(.badRequest, "\(schema.className) has no sortable property '\(sort)'")
            }
            self.sort = sort
        } else {
            sort = nil
        }
    }

    static func sortable(_ property: PropertySchema) -> Bool {
        !property.isList && property.kind != .object && property.kind != .column
    }

    /// The text given to the store (nil: every object in primary-key order).
    var text: String? {
        if filter.isEmpty && (sort == nil || ownOrder) { return nil }
        var text = filter.isEmpty ? "TRUEPREDICATE" : filter
        if let sort, !ownOrder { text += " SORT(\(sort) \(descending ? "DESC" : "ASC"))" }
        return text
    }

    func run(_ inspector: StoreInspector) throws -> [[String: Any]] {
        try inspector.objects(ofType: schema.className, matching: text)
    }

    /// Page `requested` of `size` objects (brought back to the last page when past it): the
    /// objects of that page only, how many match, the page shown and the number of pages.
    func page(_ inspector: StoreInspector, requested: Int, size: Int) throws -> (objects: [[String: Any]], matching: Int, page: Int, pages: Int) {
        var found = try inspector.page(ofType: schema.className, matching: text, offset: (requested - 1) * size, limit: size)
        let pages = max(1, (found.matching + size - 1) / size)
        let page = min(requested, pages)
        if page != requested {
            found = try inspector.page(ofType: schema.className, matching: text, offset: (page - 1) * size, limit: size)
        }
        return (found.objects, found.matching, page, pages)
    }

    /// The parameters that keep this query in a link.
    var link: [(String, String?)] {
        [("q", filter), ("sort", sort), ("desc", descending ? "1" : nil)]
    }
}

enum Pages {
    static func schema(_ inspector: StoreInspector?, _ type: String) throws -> (StoreInspector, ObjectSchema) {
        guard let inspector else {
            throw StudioFailure(.notFound, "this store holds no objects (it was written with StrataStorage alone)")
        }
        guard let schema = inspector.schema[type] else {
            let names = inspector.schema.objectSchemas.map(\.className).sorted()
            throw StudioFailure(.notFound, "the store has no type '\(type)'; its types are \(names.joined(separator: ", "))")
        }
        return (inspector, schema)
    }

    /// The key that names an object in URLs: its primary key, or `_id` for a type without one.
    static func key(of object: [String: Any], in schema: ObjectSchema) -> String {
        StoreInspector.text(of: object[schema.primaryKeyProperty?.name ?? "_id"])
    }

    // MARK: types

    static func types(_ store: StudioStore) throws -> String {
        let fingerprint = store.fingerprint()
        let rows: [(ObjectSchema, Int)]? = try store.inspect { inspector in
            inspector.map { i in i.schema.objectSchemas.sorted { $0.className < $1.className }.map { ($0, i.count(ofType: $0.className)) } }
        }
        var body = "<h1>Object types</h1>\n"
        guard let rows else {
            body += #"<div class="notice">This store holds no objects: it was written with StrataStorage alone. The <a href="/stats">stats</a> still apply.</div>"#
            return HTML.page(title: "Types", store: store, fingerprint: fingerprint, body: body)
        }
        body += #"<table class="types" id="types"><thead><tr><th>type</th><th>objects</th><th>primary key</th><th>properties</th><th>export</th></tr></thead><tbody>"#
        for (schema, count) in rows {
            let path = HTML.typePath(schema.className)
            let properties = schema.properties.map { "\(HTML.escape($0.name)) <span class=\"kind\">\(HTML.escape($0.typeDescription))</span>" }.joined(separator: ", ")
            body += "<tr><td><a href=\"\(HTML.escape(path))\">\(HTML.escape(schema.className))</a></td>"
            body += "<td class=\"num count\">\(count)</td>"
            body += "<td>\(schema.primaryKeyProperty.map { HTML.escape($0.name) } ?? "<span class=\"muted\">none (_id)</span>")</td>"
            body += "<td>\(properties)</td>"
            body += "<td><a href=\"\(HTML.escape(path))/export.csv\">CSV</a> · <a href=\"\(HTML.escape(path))/export.json\">JSON</a></td></tr>\n"
        }
        body += "</tbody></table>\n"
        return HTML.page(title: "Types", store: store, fingerprint: fingerprint, body: body)
    }

    // MARK: table

    static let maxPageSize = 500
    static let maxPage = 1_000_000_000

    /// The paged table of a type; a query that cannot be read is shown inline (status 400).
    static func table(_ store: StudioStore, type: String, parameters: Parameters) throws -> (HTTPStatusCode, String) {
        let fingerprint = store.fingerprint()
        let size = try parameters.integer("size", default: 50, range: 1...maxPageSize)
        let requested = try parameters.integer("page", default: 1, range: 1...maxPage)
        return try store.inspect { inspector in
            let (inspector, schema) = try schema(inspector, type)
            let query = try ObjectQuery(schema: schema, parameters: parameters)
            let total = inspector.count(ofType: type)
            var slice: [[String: Any]] = [], matching = 0, page = 1, pages = 1
            var queryError: String?
            do {
                (slice, matching, page, pages) = try query.page(inspector, requested: requested, size: size)
            } catch let error as RealmError {
                guard case .invalidQuery(_, let offset, _) = error else { throw error }
                queryError = errorBox(error: "\(error)", query: query.text ?? query.filter, offset: offset)
            }
            let path = HTML.typePath(type)
            let columns = try inspector.columns(ofType: type)

            var body = "<h1>\(HTML.escape(type)) <span class=\"muted\">\(total) object\(total == 1 ? "" : "s")</span></h1>\n"
            body += "<form class=\"query\" method=\"get\" action=\"\(HTML.escape(path))\">"
            body += "<input type=\"text\" name=\"q\" id=\"q\" value=\"\(HTML.escape(query.filter))\" placeholder=\"a query, e.g. rating &gt;= 4 AND city == 'Raleigh' SORT(rating DESC) LIMIT(10)\" spellcheck=\"false\">"
            if let sort = query.sort { body += "<input type=\"hidden\" name=\"sort\" value=\"\(HTML.escape(sort))\">" }
            if query.descending { body += #"<input type="hidden" name="desc" value="1">"# }
            if size != 50 { body += "<input type=\"hidden\" name=\"size\" value=\"\(size)\">" }
            body += "<button type=\"submit\">Run</button> <a class=\"button\" href=\"\(HTML.escape(path))\">Clear</a></form>\n"
            if let queryError {
                body += queryError
                return (.badRequest, HTML.page(title: type, store: store, fingerprint: fingerprint, body: body))
            }
            let exportParameters = query.link
            body += "<div class=\"toolbar\"><span id=\"matching\">\(matching) matching</span> · "
            body += "<span>page \(page) of \(pages)</span> · export the query as "
            body += "<a id=\"export-csv\" href=\"\(HTML.url(path + "/export.csv", exportParameters))\">CSV</a> "
            body += "<a id=\"export-json\" href=\"\(HTML.url(path + "/export.json", exportParameters))\">JSON</a> · "
            body += "<button type=\"button\" id=\"expand-all\">Expand all</button></div>\n"
            if requested != page {
                body += "<div class=\"notice\" id=\"clamped\">\(pages == 1 ? "There is 1 page" : "There are \(pages) pages"); page \(requested) was brought back to \(page).</div>\n"
            }

            body += "<table id=\"objects\"><thead><tr>"
            for column in columns {
                let property = schema[column]
                let label = HTML.escape(column)
                guard let property, ObjectQuery.sortable(property), !query.ownOrder else {
                    body += "<th title=\"\(HTML.escape(property?.typeDescription ?? "hidden id"))\">\(label)</th>"
                    continue
                }
                let current = query.sort == column
                let nextDescending = current && !query.descending
                let href = HTML.url(path, [("q", query.filter), ("sort", column), ("desc", nextDescending ? "1" : nil), ("size", size == 50 ? nil : String(size))])
                let arrow = current ? (query.descending ? " ▼" : " ▲") : ""
                body += "<th title=\"\(HTML.escape(property.typeDescription)) — sort\"><a class=\"sort\" href=\"\(href)\">\(label)\(arrow)</a></th>"
            }
            body += "</tr></thead><tbody>\n"
            let keyColumn = schema.primaryKeyProperty?.name ?? "_id"
            for object in slice {
                body += "<tr>"
                for column in columns {
                    let property = schema[column]
                    let numeric = HTML.isNumeric(property)
                    body += numeric ? "<td class=\"num\">" : "<td>"
                    if column == keyColumn {
                        let key = key(of: object, in: schema)
                        body += "<a class=\"detail\" href=\"\(HTML.objectURL(type, key: key))\">\(HTML.escape(key))</a>"
                    } else {
                        body += HTML.value(object[column], property: property, full: false)
                    }
                    body += "</td>"
                }
                body += "</tr>\n"
            }
            body += "</tbody></table>\n"
            if matching == 0 { body += "<p class=\"muted\">No objects match.</p>\n" }

            func pageLink(_ number: Int, _ text: String, id: String) -> String {
                guard number != page, number >= 1, number <= pages else { return "<span class=\"muted\">\(text)</span>" }
                return "<a id=\"\(id)\" href=\"\(HTML.url(path, query.link + [("page", String(number)), ("size", size == 50 ? nil : String(size))]))\">\(text)</a>"
            }
            body += "<div class=\"pager\">\(pageLink(1, "« first", id: "first")) \(pageLink(page - 1, "‹ previous", id: "previous")) "
            body += "<span>page \(page) of \(pages)</span> \(pageLink(page + 1, "next ›", id: "next")) \(pageLink(pages, "last »", id: "last"))</div>\n"
            return (.ok, HTML.page(title: type, store: store, fingerprint: fingerprint, body: body))
        }
    }

    /// The query error, with a caret under the offset it names.
    static func errorBox(error: String, query: String, offset: Int) -> String {
        let caret = String(repeating: " ", count: max(0, min(offset, query.count))) + "^"
        return "<div class=\"error\" id=\"query-error\">\(HTML.escape(error))<pre>\(HTML.escape(query))\n\(caret)</pre></div>\n"
    }

    // MARK: object

    static func find(_ inspector: StoreInspector, _ schema: ObjectSchema, key: String) throws -> [String: Any]? {
        let type = schema.className
        if let pk = schema.primaryKeyProperty {
            switch pk.kind {
            case .int, .int8, .int16, .int32, .int64:
                guard let number = Int(key) else { return nil }
                return try inspector.objects(ofType: type, matching: "%K == %@", arguments: [pk.name, number]).first
            case .string:
                return try inspector.objects(ofType: type, matching: "%K == %@", arguments: [pk.name, key]).first
            default:
                break
            }
        }
        return try inspector.objects(ofType: type).first { Self.key(of: $0, in: schema) == key }
    }

    static func object(_ store: StudioStore, type: String, key: String?) throws -> String {
        let fingerprint = store.fingerprint()
        guard let key, !key.isEmpty else { throw StudioFailure(.badRequest, "which object? give its primary key as ?key=") }
        return try store.inspect { inspector in
            let (inspector, schema) = try schema(inspector, type)
            guard let object = try find(inspector, schema, key: key) else {
                throw StudioFailure(.notFound, "\(type) has no object with key '\(key)'")
            }
            let path = HTML.typePath(type)
            var body = "<p><a href=\"\(HTML.escape(path))\">← all \(HTML.escape(type)) objects</a></p>\n"
            body += "<h1>\(HTML.escape(type)) <code id=\"key\">\(HTML.escape(key))</code></h1>\n"
            body += "<table class=\"object\" id=\"object\"><thead><tr><th>property</th><th>type</th><th>value</th></tr></thead><tbody>\n"
            for column in try inspector.columns(ofType: type) {
                let property = schema[column]
                body += "<tr><th>\(HTML.escape(column))</th><td class=\"kind\">\(HTML.escape(property?.typeDescription ?? "hidden id"))</td>"
                body += "<td>\(HTML.value(object[column], property: property, full: true))</td></tr>\n"
            }
            body += "</tbody></table>\n"
            body += "<h2>JSON</h2><pre class=\"json\" id=\"json\">\(HTML.escape(try StoreInspector.json([object])))</pre>\n"
            return HTML.page(title: "\(type) \(key)", store: store, fingerprint: fingerprint, body: body)
        }
    }

    // MARK: export

    static func export(_ store: StudioStore, type: String, parameters: Parameters, csv: Bool) throws -> (String, Int) {
        try store.inspect { inspector in
            let (inspector, schema) = try schema(inspector, type)
            let query = try ObjectQuery(schema: schema, parameters: parameters)
            let objects = try query.run(inspector)
            if csv {
                let columns = try inspector.columns(ofType: type)
                let records = objects.map { StoreInspector.csvRecord($0, columns: columns) }
                return (StoreInspector.csvRecord(columns) + records.joined(), objects.count)
            }
            return (try StoreInspector.json(objects), objects.count)
        }
    }

    // MARK: stats

    static func stats(_ store: StudioStore) throws -> String {
        let fingerprint = store.fingerprint()
        let (stats, estimate, counts) = try store.read { s in
            let counts = try StoreInspector(store: s).map { i in
                i.schema.objectSchemas.map { ($0.className, i.count(ofType: $0.className)) }.sorted { $0.0 < $1.0 }
            }
            return (s.stats, s.compactionEstimate(), counts)
        }
        var body = "<h1>Stats</h1>\n"
        body += "<table class=\"stats\" id=\"stats\"><tbody>\n"
        let rows: [(String, String)] = [
            ("segments", "\(stats.segments)"),
            ("live bytes", "\(HTML.bytes(stats.liveBytes)) (\(stats.liveBytes))"),
            ("dead bytes", "\(HTML.bytes(stats.deadBytes)) (\(stats.deadBytes))"),
            ("pinned bytes", "\(HTML.bytes(stats.pinnedBytes)) in \(stats.pinnedSegments) deleted segment(s) still mapped by snapshots"),
            ("disk bytes", "\(HTML.bytes(stats.diskBytes)) (all files)"),
            ("keys", "\(stats.keys)"),
            ("index memory", HTML.bytes(stats.indexBytes)),
            ("compression", String(format: "%.2f× over live values", stats.compressionRatio)),
            ("last commit", "sequence \(stats.lastSequence)"),
        ]
        for (name, value) in rows { body += "<tr><th>\(name)</th><td>\(HTML.escape(value))</td></tr>\n" }
        body += "</tbody></table>\n"

        body += "<h2>Space</h2>\n" + spaceBar(live: stats.liveBytes, dead: stats.deadBytes, pinned: stats.pinnedBytes)
        body += "<h2>Segment map</h2>\n<p class=\"muted\">One block per segment file, its width by size; the green part is live records, the rest dead bytes. A dashed border marks the active segment, a thick one a segment written by compaction.</p>\n"
        body += segmentMap(stats.segmentDetails)
        if let counts, !counts.isEmpty {
            body += "<h2>Objects per type</h2>\n" + typeBars(counts)
        }

        body += "<h2>Compaction</h2>\n"
        body += "<p>Compaction would rewrite \(estimate.segments) segment(s), \(HTML.escape(HTML.bytes(estimate.bytes))): keep \(HTML.escape(HTML.bytes(estimate.liveBytes))) live and reclaim \(HTML.escape(HTML.bytes(estimate.reclaimableBytes))).</p>\n"
        if store.writable {
            body += #"<form method="post" action="/compact" id="compact-form"><button class="danger" type="submit" id="compact">Compact now</button></form>"# + "\n"
        } else {
            body += #"<p class="muted" id="compact-disabled">The studio is read-only: start it with <code>--writable</code> to compact.</p>"# + "\n"
        }
        let history = store.compactions
        if history.isEmpty {
            body += "<p class=\"muted\">No compactions since the studio started.</p>\n"
        } else {
            body += historyChart(history)
            body += "<table id=\"compactions\"><thead><tr><th>when</th><th>before</th><th>after</th><th>reclaimed</th><th>seconds</th><th>segments</th></tr></thead><tbody>\n"
            let style = Date.ISO8601FormatStyle()
            for record in history.reversed() {
                let r = record.report
                body += "<tr><td>\(style.format(record.date))</td><td>\(HTML.bytes(r.diskBytesBefore))</td><td>\(HTML.bytes(r.diskBytesAfter))</td>"
                body += "<td>\(HTML.bytes(r.reclaimedBytes))</td><td>\(String(format: "%.3f", r.seconds))</td><td>\(r.segmentsCompacted) → \(r.segmentsWritten)</td></tr>\n"
            }
            body += "</tbody></table>\n"
        }
        return HTML.page(title: "Stats", store: store, fingerprint: fingerprint, body: body)
    }

    static let live = "#3a9a5b", dead = "#c9822b", pinned = "#8a63c9"

    static func spaceBar(live liveBytes: Int, dead deadBytes: Int, pinned pinnedBytes: Int) -> String {
        let width = 760.0
        let total = Double(max(1, liveBytes + deadBytes + pinnedBytes))
        var svg = "<svg id=\"space\" width=\"\(Int(width) + 20)\" height=\"70\" viewBox=\"0 0 \(Int(width) + 20) 70\" role=\"img\" aria-label=\"live, dead and pinned bytes\">"
        var x = 10.0
        for (name, bytes, color) in [("live", liveBytes, live), ("dead", deadBytes, dead), ("pinned", pinnedBytes, pinned)] {
            let w = width * Double(bytes) / total
            if w > 0 {
                svg += "<rect x=\"\(fmt(x))\" y=\"8\" width=\"\(fmt(w))\" height=\"30\" fill=\"\(color)\"><title>\(name): \(HTML.bytes(bytes))</title></rect>"
            }
            x += w
        }
        svg += "<rect x=\"10\" y=\"8\" width=\"\(fmt(width))\" height=\"30\" fill=\"none\" stroke=\"#1d2330\" stroke-width=\"1\"/>"
        var lx = 10.0
        for (name, bytes, color) in [("live", liveBytes, live), ("dead", deadBytes, dead), ("pinned", pinnedBytes, pinned)] {
            let label = "\(name) \(HTML.bytes(bytes)) (\(Int((Double(bytes) / total * 100).rounded()))%)"
            svg += "<rect x=\"\(fmt(lx))\" y=\"50\" width=\"11\" height=\"11\" fill=\"\(color)\"/><text x=\"\(fmt(lx + 15))\" y=\"60\">\(HTML.escape(label))</text>"
            lx += 230
        }
        return svg + "</svg>\n"
    }

    static func segmentMap(_ segments: [SegmentStats]) -> String {
        let maxWidth = 900.0, height = 58.0, gap = 8.0
        let largest = Double(max(1, segments.map(\.diskBytes).max() ?? 1))
        var x = 10.0, y = 10.0
        var shapes = ""
        for segment in segments {
            let w = max(70, 300 * Double(segment.diskBytes) / largest)
            if x + w > maxWidth + 10 && x > 10 {
                x = 10
                y += height + 22
            }
            let liveFraction = segment.diskBytes > 0 ? min(1, Double(segment.liveBytes) / Double(segment.diskBytes)) : 0
            let state = !segment.sealed ? "active" : segment.compacted ? "compacted" : "sealed"
            let title = "segment \(segment.id) (\(state)): \(HTML.bytes(segment.diskBytes)), \(HTML.bytes(segment.liveBytes)) live, \(HTML.bytes(segment.deadBytes)) dead"
            shapes += "<g class=\"segment\" data-segment=\"\(segment.id)\"><title>\(HTML.escape(title))</title>"
            shapes += "<rect x=\"\(fmt(x))\" y=\"\(fmt(y))\" width=\"\(fmt(w))\" height=\"\(fmt(height))\" fill=\"\(dead)\" fill-opacity=\"0.55\"/>"
            if liveFraction > 0 {
                shapes += "<rect x=\"\(fmt(x))\" y=\"\(fmt(y))\" width=\"\(fmt(w * liveFraction))\" height=\"\(fmt(height))\" fill=\"\(live)\"/>"
            }
            let dash = state == "active" ? " stroke-dasharray=\"5 3\"" : ""
            shapes += "<rect x=\"\(fmt(x))\" y=\"\(fmt(y))\" width=\"\(fmt(w))\" height=\"\(fmt(height))\" fill=\"none\" stroke=\"#1d2330\" stroke-width=\"\(state == "compacted" ? 3 : 1)\"\(dash)/>"
            shapes += "<text x=\"\(fmt(x + 5))\" y=\"\(fmt(y + 15))\">#\(segment.id) \(state)</text>"
            shapes += "<text x=\"\(fmt(x + 5))\" y=\"\(fmt(y + 30))\">\(HTML.escape(HTML.bytes(segment.diskBytes)))</text>"
            shapes += "<text x=\"\(fmt(x + 5))\" y=\"\(fmt(y + 45))\">\(Int((liveFraction * 100).rounded()))% live</text>"
            if w >= 170 {
                shapes += "<text x=\"\(fmt(x))\" y=\"\(fmt(y + height + 14))\" fill-opacity=\"0.7\">\(HTML.escape(HTML.bytes(segment.liveBytes))) live · \(HTML.escape(HTML.bytes(segment.deadBytes))) dead</text>"
            }
            shapes += "</g>"
            x += w + gap
        }
        if segments.isEmpty { shapes = "<text x=\"10\" y=\"30\">no segments</text>" }
        let totalHeight = y + height + 30
        return "<svg id=\"segment-map\" width=\"\(Int(maxWidth) + 20)\" height=\"\(fmt(totalHeight))\" viewBox=\"0 0 \(Int(maxWidth) + 20) \(fmt(totalHeight))\" role=\"img\" aria-label=\"segment map\">\(shapes)</svg>\n"
    }

    static func typeBars(_ counts: [(String, Int)]) -> String {
        let largest = Double(max(1, counts.map(\.1).max() ?? 1))
        var svg = "<svg id=\"type-counts\" width=\"780\" height=\"\(counts.count * 24 + 10)\" role=\"img\" aria-label=\"objects per type\">"
        for (index, (name, count)) in counts.enumerated() {
            let y = Double(index * 24 + 5)
            let w = max(2, 480 * Double(count) / largest)
            svg += "<text x=\"10\" y=\"\(fmt(y + 14))\">\(HTML.escape(name))</text>"
            svg += "<rect x=\"180\" y=\"\(fmt(y + 2))\" width=\"\(fmt(w))\" height=\"16\" fill=\"#2f5fd0\" fill-opacity=\"0.8\"/>"
            svg += "<text x=\"\(fmt(186 + w))\" y=\"\(fmt(y + 14))\">\(count)</text>"
        }
        return svg + "</svg>\n"
    }

    static func historyChart(_ history: [CompactionRecord]) -> String {
        let shown = history.suffix(20)
        let largest = Double(max(1, shown.map(\.report.diskBytesBefore).max() ?? 1))
        var svg = "<svg id=\"compaction-history\" width=\"780\" height=\"130\" role=\"img\" aria-label=\"disk bytes before and after each compaction\">"
        for (index, record) in shown.enumerated() {
            let x = Double(10 + index * 36)
            let before = 90 * Double(record.report.diskBytesBefore) / largest
            let after = 90 * Double(record.report.diskBytesAfter) / largest
            svg += "<rect x=\"\(fmt(x))\" y=\"\(fmt(100 - before))\" width=\"14\" height=\"\(fmt(before))\" fill=\"\(dead)\"><title>before: \(HTML.bytes(record.report.diskBytesBefore))</title></rect>"
            svg += "<rect x=\"\(fmt(x + 15))\" y=\"\(fmt(100 - after))\" width=\"14\" height=\"\(fmt(after))\" fill=\"\(live)\"><title>after: \(HTML.bytes(record.report.diskBytesAfter))</title></rect>"
            svg += "<text x=\"\(fmt(x))\" y=\"116\">#\(history.count - shown.count + index + 1)</text>"
        }
        return svg + "<text x=\"10\" y=\"128\" fill-opacity=\"0.7\">disk bytes before (orange) and after (green) each compaction</text></svg>\n"
    }

    static func fmt(_ value: Double) -> String { String(format: "%.1f", value) }
}

typealias HTTPStatusCode = HTTPResponse.Status
