// The page's stylesheet and script, embedded in the binary: the studio serves these two and
// nothing else from /assets/ (no files are read from disk, nothing comes from a CDN).

enum Assets {
    struct Asset: Sendable {
        var contentType: String
        var body: String
    }

    static let all: [String: Asset] = [
        "studio.css": Asset(contentType: "text/css; charset=utf-8", body: css),
        "studio.js": Asset(contentType: "text/javascript; charset=utf-8", body: js),
    ]

    static let css = """
    :root { --fg: #1d2330; --muted: #677085; --line: #d9dde6; --bg: #f6f7fa; --accent: #2f5fd0; --bad: #b3261e; --live: #3a9a5b; --dead: #c9822b; --pinned: #8a63c9; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
    header { display: flex; align-items: center; gap: 18px; padding: 10px 20px; background: #1d2330; color: #fff; }
    header a { color: #fff; text-decoration: none; }
    header .brand { font-weight: 700; letter-spacing: .02em; }
    header .store { color: #aab3c5; font-family: ui-monospace, monospace; font-size: 12px; }
    header .spacer { flex: 1; }
    header .mode { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #3a4357; }
    header .mode.writable { background: #8a3b12; }
    header button, header label { font-size: 12px; color: #fff; }
    button, .button { font: inherit; padding: 5px 12px; border: 1px solid var(--line); border-radius: 5px; background: #fff; color: var(--fg); cursor: pointer; text-decoration: none; display: inline-block; }
    header button { background: #3a4357; border-color: #56607a; }
    button.danger { background: var(--bad); color: #fff; border-color: var(--bad); }
    main { padding: 18px 20px 40px; }
    h1 { font-size: 20px; margin: 0 0 12px; }
    h2 { font-size: 16px; margin: 22px 0 8px; }
    a { color: var(--accent); }
    .banner { padding: 8px 20px; background: #fff4cf; border-bottom: 1px solid #e8d58a; }
    .error { margin: 10px 0; padding: 10px 12px; border: 1px solid #e6b3ae; background: #fdeceb; color: var(--bad); border-radius: 5px; }
    .error pre { margin: 6px 0 0; color: var(--fg); }
    .notice { margin: 10px 0; padding: 10px 12px; border: 1px solid #b5d8bf; background: #ecf7ef; border-radius: 5px; }
    .muted { color: var(--muted); }
    form.query { display: flex; gap: 8px; margin: 8px 0 12px; }
    form.query input[type=text] { flex: 1; font: 13px ui-monospace, monospace; padding: 6px 8px; border: 1px solid var(--line); border-radius: 5px; }
    table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
    th, td { border-bottom: 1px solid var(--line); padding: 5px 9px; text-align: left; vertical-align: top; }
    th { background: #eef0f5; font-weight: 600; white-space: nowrap; }
    th a { color: var(--fg); text-decoration: none; }
    td { max-width: 360px; overflow-wrap: anywhere; }
    td.num { text-align: right; font-variant-numeric: tabular-nums; }
    .null { color: #a0a6b4; font-style: italic; }
    .kind { color: var(--muted); font-size: 12px; }
    details > summary { cursor: pointer; color: var(--accent); }
    details ol { margin: 4px 0; padding-left: 22px; }
    pre.json { margin: 4px 0; font-size: 12px; white-space: pre-wrap; }
    .pager { display: flex; gap: 10px; align-items: center; margin: 10px 0; }
    .toolbar { display: flex; gap: 10px; align-items: center; margin: 6px 0; }
    .types td:first-child a { font-weight: 600; }
    svg text { font: 11px system-ui, sans-serif; fill: #1d2330; }
    .legend span { display: inline-block; width: 11px; height: 11px; margin: 0 4px 0 12px; vertical-align: -1px; }
    .legend .live { background: var(--live); } .legend .dead { background: var(--dead); } .legend .pinned { background: var(--pinned); }
    """

    static let js = """
    // Strata Studio: the refresh button, and live updates by polling /api/status every
    // two seconds (a fingerprint of the store's files, read without opening the store).
    (function () {
      "use strict";
      var refresh = document.getElementById("refresh");
      if (refresh) refresh.addEventListener("click", function (e) { e.preventDefault(); location.reload(); });
      var auto = document.getElementById("auto");
      if (auto) {
        auto.checked = localStorage.getItem("strata-studio.auto") === "1";
        auto.addEventListener("change", function () { localStorage.setItem("strata-studio.auto", auto.checked ? "1" : "0"); });
      }
      var expand = document.getElementById("expand-all");
      if (expand) expand.addEventListener("click", function () {
        var all = document.querySelectorAll("main details");
        var open = !Array.prototype.every.call(all, function (d) { return d.open; });
        all.forEach(function (d) { d.open = open; });
      });
      var seen = document.body.getAttribute("data-fingerprint");
      var banner = document.getElementById("changed");
      if (!seen || !banner) return;
      setInterval(function () {
        fetch("/api/status", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (s) {
          if (s.fingerprint === seen) return;
          if (auto && auto.checked) { location.reload(); } else { banner.hidden = false; }
        }).catch(function () {});
      }, 2000);
    })();
    """
}
