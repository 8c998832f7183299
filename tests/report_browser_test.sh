#!/bin/sh
# CTest (issue 14): the HTML reports as a reader sees them. A real offline run (matmul on cpp,
# the tuner with small budgets, as scripts/main runs it), a run whose model is a script
# answering with markup (tests/report_agent.sh: a `</script>` in the answer must stay text) and
# a bench of the bundled problems
# with their hand-written candidates are written as pages (`kforge report 1`, `kforge bench
# --html`, `kforge report bench.json`) and each is opened in headless Chromium: no console
# message, every chart drew points, a screenshot kept in ARTIFACTS. Then the check itself is
# checked: a copy of the run page whose chart data is empty, and one that logs an error, must
# fail it. Skips (77) only when no Chromium is installed (scripts/setup installs it).
#   report_browser_test.sh KFORGE SOURCE_DIR ARTIFACTS
set -eu
KFORGE=$1
SRC=$2
ART=$3
CHROMIUM=${KFORGE_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: no chromium on PATH (install it: apt install chromium, or scripts/setup)"
  exit 77
fi
CHECK="/usr/bin/python3 $SRC/tests/report_browser_check.py $CHROMIUM"
mkdir -p "$ART"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
unset KFORGE_WORKSPACE  # the run is run 1 of a fresh ./.kforge
fail() { echo "FAIL: $1"; [ -n "${2:-}" ] && tail -20 "$2"; exit 1; }

"$KFORGE" optimize matmul -b cpp --quick --max-evals 4 --confirm-top 2 --confirm-rounds 2 >run.txt 2>run.err ||
  fail "the offline run failed" run.err
"$KFORGE" report 1 -o run.html 2>report.err || fail "kforge report 1" report.err

KFORGE_WORKSPACE="$dir/agent" "$KFORGE" optimize gelu -b cpp --quick --llm "exec:$SRC/tests/report_agent.sh" --iterations 1 \
  --confirm-rounds 2 >agent.txt 2>agent.err || fail "the run with the scripted model failed" agent.err
KFORGE_WORKSPACE="$dir/agent" "$KFORGE" report 1 -o agent.html 2>report.err || fail "kforge report 1 (scripted model)" report.err

mkdir cands
for d in "$SRC"/problems/*/candidates; do
  for f in "$d"/*.cc; do cp "$f" "cands/$(basename "$(dirname "$d")").cc"; done
done
rc=0
"$KFORGE" bench bundled -b cpp --quick --candidates cands --no-confirm --budget-ms 200 -j 2 \
  --json bench.json --html bench.html >bench.txt 2>bench.err || rc=$?
[ "$rc" -le 1 ] || fail "kforge bench exited $rc" bench.err  # 1: not every kernel correct
"$KFORGE" report bench.json -o bench-from-json.html 2>report.err || fail "kforge report bench.json" report.err

$CHECK run.html "$ART/run-report.png" speedup,roofline || fail "the run report"
$CHECK agent.html "$ART/run-report-scripted-model.png" speedup,roofline \
  --dom-contains 'Vectorized with OpenMP SIMD. &lt;/script&gt;&lt;script&gt;alert("answer")' \
  --dom-contains 'memory bandwidth &lt;/script&gt;' --dom-lacks '<img' --dom-lacks '<script>alert' ||
  fail "the run report with hostile model answers"
$CHECK bench.html "$ART/bench-report.png" fastp,geomean,correct || fail "the bench report (--html)"
$CHECK bench-from-json.html "$ART/bench-report-from-json.png" fastp,geomean,correct || fail "the bench report (kforge report bench.json)"
cmp -s bench.html bench-from-json.html || fail "kforge bench --html and kforge report bench.json wrote different pages"

# The check must be able to fail: a run page with no attempts in its data, and one that logs.
/usr/bin/python3 - run.html empty.html console.html <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
pattern = r'(<script type="application/json" id="kforge-data">)(.*?)(</script>)'
data = json.loads(re.search(pattern, page, re.S).group(2))
data["attempts"] = []
empty = re.sub(pattern, lambda m: m.group(1) + json.dumps(data).replace("<", "\\u003c") + m.group(3), page, flags=re.S)
open(sys.argv[2], "w").write(empty)
open(sys.argv[3], "w").write(page.replace("</body>", "<script>console.error('planted error')</script></body>"))
PY
if $CHECK empty.html "$dir/empty.png" speedup,roofline >empty.txt; then fail "the check passed a page whose charts have no data"; fi
grep -q "drew no point" empty.txt || fail "the empty page failed for another reason" empty.txt
if $CHECK console.html "$dir/console.png" speedup,roofline >console.txt; then fail "the check passed a page that logged an error"; fi
grep -q "planted error" console.txt || fail "the logging page failed for another reason" console.txt
echo "ok: screenshots in $ART: run-report.png, run-report-scripted-model.png, bench-report.png, bench-report-from-json.png"
