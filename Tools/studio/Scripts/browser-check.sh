#!/usr/bin/env bash
# Strata Studio in a real browser (run by `make studio-check`): headless Chromium loads a
# query page of the demo store, checks that it renders rows, follows a link to the linked
# object and checks that page, sees a bad query's error inline, and saves the screenshots
# docs/studio.png and docs/studio-stats.png. Bounded: the server is started with --seconds
# and killed when the check ends, pass or fail.
#
#   Tools/studio/Scripts/browser-check.sh <strata binary> <strata-studio binary> [docs dir]
set -euo pipefail

STRATA=$1
STUDIO=$2
DOCS=${3:-docs}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/strata-studio-check.XXXXXX")
SERVER=""
cleanup() {
    if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "studio-check: FAILED: $*" >&2; exit 1; }

echo "studio-check: demo store"
"$STRATA" demo "$WORK/demo" > "$WORK/demo.log" 2>&1 || { tail -20 "$WORK/demo.log"; fail "strata demo"; }
STORE="$WORK/demo/objects"

"$STUDIO" "$STORE" --port 0 --seconds 120 > "$WORK/studio.out" 2> "$WORK/studio.err" &
SERVER=$!
PORT=""
for _ in $(seq 1 100); do
    PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$WORK/studio.out" 2>/dev/null | head -1 | cut -d: -f2 || true)
    [ -n "$PORT" ] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/studio.err" >&2; fail "strata-studio exited at startup"; }
    sleep 0.1
done
[ -n "$PORT" ] || fail "strata-studio did not report its port"
BASE="http://127.0.0.1:$PORT"
echo "studio-check: strata-studio on $BASE (pid $SERVER)"

browser() {
    timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
        --user-data-dir="$WORK/profile" --hide-scrollbars "$@" 2> "$WORK/chromium.err"
}

# 1. A query page renders rows, with links to the linked objects.
QUERY="$BASE/types/Status?q=retweetCount+%3E%3D+0+SORT(id+DESC)"
browser --dump-dom "$QUERY" > "$WORK/query.html" || { tail -5 "$WORK/chromium.err" >&2; fail "chromium could not load $QUERY"; }
ROWS=$(grep -o '<a class="detail"' "$WORK/query.html" | wc -l)
[ "$ROWS" -gt 0 ] || fail "the query page shows no rows"
grep -q '<span id="matching">8 matching</span>' "$WORK/query.html" || fail "the query page does not count 8 matching Status objects"
echo "studio-check: query page renders $ROWS rows"

# 2. Follow the first link of the table (a Status's user) to the linked object's page.
LINK=$(grep -o '<a class="link" href="[^"]*"' "$WORK/query.html" | head -1 | sed 's/.*href="//; s/"$//; s/&amp;/\&/g')
[ -n "$LINK" ] || fail "the query page has no link to follow"
KEY=${LINK##*key=}
browser --dump-dom "$BASE$LINK" > "$WORK/linked.html" || fail "chromium could not load $BASE$LINK"
grep -q "<h1>TwitterUser <code id=\"key\">$KEY</code></h1>" "$WORK/linked.html" || fail "following $LINK did not show TwitterUser $KEY"
grep -q '<th>screenName</th>' "$WORK/linked.html" || fail "the linked object's page has no properties"
echo "studio-check: followed $LINK to TwitterUser $KEY"

# 3. A malformed query shows its error inline.
browser --dump-dom "$BASE/types/Restaurant?q=rating+%3E+%3E+3" > "$WORK/bad.html" || fail "chromium could not load the bad query"
grep -q 'id="query-error">invalid query at offset 9' "$WORK/bad.html" || fail "a malformed query does not show its error inline"
echo "studio-check: a malformed query shows its error inline"

# 4. Screenshots: a query page, and the stats page.
mkdir -p "$DOCS"
browser --screenshot="$DOCS/studio.png" --window-size=1280,900 "$BASE/types/Restaurant?q=rating+%3E%3D+4+SORT(rating+DESC)" > /dev/null \
    || fail "chromium could not take the screenshot"
browser --screenshot="$DOCS/studio-stats.png" --window-size=1280,900 "$BASE/stats" > /dev/null || fail "chromium could not take the stats screenshot"
[ -s "$DOCS/studio.png" ] || fail "no screenshot"
echo "studio-check: screenshots $DOCS/studio.png, $DOCS/studio-stats.png"

kill "$SERVER"
wait "$SERVER" 2>/dev/null || true
SERVER=""
echo "studio-check: passed"
