#!/bin/sh
# CTest (issue 14, item 3): `kforge serve`'s live page in headless Chromium while a run
# progresses. An offline run (matmul on cpp, the tuner, quick sizes) starts beside the server;
# one page load, long-polling /api/status for 12 answers (?polls=12), must show the run's
# attempt counter move (its row's data-attempts-seen holds several numbers) with no console
# message. Also: the run's report and a bench file's are served, a path outside the bench files
# is not, a key in the server's environment appears nowhere, and a non-loopback --host is
# refused without --allow-remote. A screenshot lands in ARTIFACTS. Skips (77) only without
# chromium (scripts/setup installs it).
#   serve_browser_test.sh KFORGE SOURCE_DIR ARTIFACTS
set -eu
KFORGE=$1
SRC=$2
ART=$3
CHROMIUM=${KFORGE_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: no chromium on PATH (install it: apt install chromium, or scripts/setup)"
  exit 77
fi
mkdir -p "$ART"
dir=$(mktemp -d)
serve_pid=""
run_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  [ -n "$run_pid" ] && kill "$run_pid" 2>/dev/null && wait "$run_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"
unset KFORGE_WORKSPACE
fail() { echo "FAIL: $1"; [ -n "${2:-}" ] && tail -20 "$2"; exit 1; }

rc=0
"$KFORGE" serve --host 0.0.0.0 --port 0 >remote.txt 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "serve --host 0.0.0.0 without --allow-remote exited $rc, not 2" remote.txt
grep -q "allow-remote" remote.txt || fail "the refusal does not name --allow-remote" remote.txt

printf '{"meta": {"suite": "bundled", "backend": "cpp", "precision": ["strict"]}, "rows": [{"problem": "gelu", "status": "correct", "median_ms": 1.0, "baselines_ms": {"seed": 2.0}}]}\n' >bench.json
OPENAI_API_KEY=sk-kforge-test-secret-0123456789 "$KFORGE" serve --port 0 >serve.txt 2>serve.err &
serve_pid=$!
"$KFORGE" optimize matmul -b cpp --quick --max-evals 10 --confirm-rounds 2 >run.txt 2>run.err &
run_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://[^ ]*' serve.txt 2>/dev/null || true)
  [ -n "$url" ] && [ -f .kforge/runs.db ] && break
  sleep 0.1
done
[ -n "$url" ] || fail "kforge serve printed no address" serve.err

echo "serving at $url; loading the page while the run progresses"
# A bounded wait: a browser that never finishes is a failure that says so, not a CTest timeout.
# Each run its own profile: a second Chromium on a profile whose first has not quite exited hands
# its page to that one and can wait for it.
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$dir/profile-dom" --hide-scrollbars \
  --enable-logging=stderr --v=0 --virtual-time-budget=60000 --dump-dom "${url}?polls=12" >dom.html 2>chromium.err ||
  fail "chromium did not load the live page within 120 s (exit $?)" chromium.err
timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$dir/profile-shot" --hide-scrollbars \
  --virtual-time-budget=5000 --window-size=1280,700 --screenshot="$ART/live-page.png" "${url}?polls=1" >/dev/null 2>&1 ||
  fail "chromium did not take the live page's screenshot within 60 s (exit $?)"
echo "page loaded; fetching the reports"
for path in api/status run/1 bench/bench.json; do
  /usr/bin/python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())" \
    "$url$path" >"fetched-$(echo "$path" | tr / -)" 2>/dev/null || echo "GET /$path failed" >>fetch-failures.txt
done
/usr/bin/python3 - "$url" dom.html chromium.err <<'PY' || exit 1
import glob, re, sys, urllib.error, urllib.request
url, dom, log = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
fails = []
for line in re.findall(r":CONSOLE[^\]]*\] (.*)", log):
    fails.append("console: " + line)
row = re.search(r'<tr data-run="1" data-attempts-seen="([^"]*)"', dom)
seen = [int(x) for x in row.group(1).split()] if row else []
if len({n for n in seen if n > 0}) < 2:  # two attempts seen, not only "none yet" then one
    fails.append("run 1's attempt counter did not move on the page: seen %r" % seen)
updates = re.search(r'data-updates="(\d+)"', dom)
if not updates or int(updates.group(1)) < 2:
    fails.append("the page did not update: data-updates %r" % (updates.group(1) if updates else None))
for line in open("fetch-failures.txt").read().splitlines() if glob.glob("fetch-failures.txt") else []:
    fails.append(line)
for name in glob.glob("fetched-*"):
    if "sk-kforge-test-secret" in open(name).read():
        fails.append(name + " shows the key from the server's environment")
if "<canvas" not in open("fetched-run-1").read() or "chart-fastp" not in open("fetched-bench-bench.json").read():
    fails.append("the run or bench report was not served")
try:
    urllib.request.urlopen(url + "bench/..%2F.kforge%2Fruns.db")
    fails.append("a path outside the bench files was served")
except urllib.error.HTTPError as e:
    if e.code != 404:
        fails.append("a path outside the bench files answered %d, not 404" % e.code)
for f in fails:
    print("FAIL:", f)
if not fails:
    print("ok: the live page showed run 1 at attempts %s over %s updates; no console message" % (seen, updates.group(1)))
sys.exit(1 if fails else 0)
PY
echo "ok: screenshot $ART/live-page.png"
