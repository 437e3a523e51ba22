// Small HTML helpers: escaping, URL building, the page frame, and values as cells.

import Foundation
import Strata

enum HTML {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A URL component, percent-encoded (everything but unreserved characters).
    static func component(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// A path and its query parameters (nil and empty values left out), escaped for an attribute.
    static func url(_ path: String, _ parameters: [(String, String?)] = []) -> String {
        let query = parameters.compactMap { name, value in
            value.flatMap { $0.isEmpty ? nil : "\(name)=\(component($0))" }
        }
        return escape(query.isEmpty ? path : path + "?" + query.joined(separator: "&"))
    }

    static func typePath(_ type: String) -> String { "/types/" + component(type) }

    static func objectURL(_ type: String, key: String) -> String {
        url(typePath(type) + "/object", [("key", key)])
    }

    /// The page frame: header with navigation, refresh and the live-update banner.
    static func page(title: String, store: StudioStore, fingerprint: String?, body: String) -> String {
        let mode = store.writable ? #"<span class="mode writable" title="compaction allowed">writable</span>"#
                                  : #"<span class="mode" title="the store is opened read-only for each request">read-only</span>"#
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) — Strata Studio</title>
        <link rel="stylesheet" href="/assets/studio.css">
        <script src="/assets/studio.js" defer></script>
        </head>
        <body\(fingerprint.map { " data-fingerprint=\"\(escape($0))\"" } ?? "")>
        <header>
        <a class="brand" href="/">Strata Studio</a>
        <span class="store">\(escape(store.path))</span>
        <a href="/">Types</a>
        <a href="/stats">Stats</a>
        <span class="spacer"></span>
        \(mode)
        <label title="reload the page by itself when the store changes"><input type="checkbox" id="auto"> auto-refresh</label>
        <button id="refresh" type="button" title="reload this page from the store">Refresh</button>
        </header>
        <div class="banner" id="changed" hidden>The store has changed since this page was drawn. <a href="">Refresh</a></div>
        <main>
        \(body)
        </main>
        </body>
        </html>

        """
    }

    static func errorPage(_ failure: StudioFailure, store: StudioStore) -> String {
        page(title: "Error", store: store, fingerprint: nil, body: """
        <h1>\(failure.status.rawValue) \(reason(failure.status))</h1>
        <div class="error" id="error">\(escape(failure.message))</div>
        <p><a href="/">Back to the types</a></p>
        """)
    }

    static func reason(_ status: StudioFailure.HTTPStatus) -> String {
        switch status {
        case .badRequest: return "Bad request"
        case .forbidden: return "Forbidden"
        case .notFound: return "Not found"
        case .methodNotAllowed: return "Method not allowed"
        case .unavailable: return "Store unavailable"
        case .serverError: return "Error"
        }
    }

    // MARK: values

    /// One stored value as HTML: links to the linked object, lists and JSON expandable.
    static func value(_ value: Any?, property: PropertySchema?, full: Bool) -> String {
        if value == nil || value is NSNull { return #"<span class="null">null</span>"# }
        if let property, property.isList, let items = value as? [Any] {
            if items.isEmpty { return #"<span class="muted">[ ]</span>"# }
            var element = property
            element.isList = false
            let rows = items.map { "<li>" + self.value($0, property: element, full: full) + "</li>" }.joined()
            return "<details\(full ? " open" : "")><summary>\(items.count) item\(items.count == 1 ? "" : "s")</summary><ol>\(rows)</ol></details>"
        }
        if let property, property.kind == .object, let target = property.objectClassName {
            let key = StoreInspector.text(of: value)
            return #"<a class="link" href="\#(objectURL(target, key: key))">\#(escape(target)) \#(escape(key))</a>"#
        }
        if value is [Any] || value is [String: Any] {
            let text = (try? JSONSerialization.data(withJSONObject: value!, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]))
                .map { String(decoding: $0, as: UTF8.self) } ?? StoreInspector.text(of: value)
            let summary = value is [Any] ? "[…]" : "{…}"
            return "<details\(full ? " open" : "")><summary>\(summary)</summary><pre class=\"json\">\(escape(text))</pre></details>"
        }
        var text = StoreInspector.text(of: value)
        if !full, text.count > 160 { text = String(text.prefix(159)) + "…" }
        return escape(text)
    }

    static func isNumeric(_ property: PropertySchema?) -> Bool {
        guard let property, !property.isList else { return false }
        switch property.kind {
        case .int, .int8, .int16, .int32, .int64, .double, .float, .decimal: return true
        default: return false
        }
    }

    static func bytes(_ bytes: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes), unit = 0
        while abs(value) >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}
