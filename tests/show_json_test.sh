#!/bin/sh
# CTest (issue 12, fix 10): `kforge show <run> --json` and `kforge show <run> --attempt N --json`
# print one JSON object each (no text headers), with what the text view shows and more: the
# run with its totals and every attempt; the attempt with its verdict, its calls (full requests)
# and the recommendations for it. An offline run (no model) of gelu on cpp makes the run.
set -eu
KFORGE=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
"$KFORGE" optimize gelu -b cpp --max-evals 1 --quick >"$dir/run.txt" 2>"$dir/err.txt" || {
  echo "FAIL: the offline run failed"; cat "$dir/err.txt"; exit 1; }
"$KFORGE" show 1 --json >"$dir/run.json"
"$KFORGE" show 1 --attempt 1 --json >"$dir/attempt.json"
rc=0
"$KFORGE" show 1 --attempt 99 --json >/dev/null 2>"$dir/missing.txt" || rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: a missing attempt exits $rc, not 2"; exit 1; }
/usr/bin/python3 - "$dir/run.json" "$dir/attempt.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
att = json.load(open(sys.argv[2]))
fails = []
def check(ok, what):
    if not ok:
        fails.append(what)
check(run["run"]["id"] == 1 and run["run"]["status"] == "done", "run status")
check(run["run"]["stop_reason"] != "", "the run's stop reason")
check(run["totals"]["attempts"] == len(run["attempts"]) >= 1, "totals.attempts matches the attempts")
check(all(set(a) >= {"attempt", "verdict", "calls", "recommendations"} for a in run["attempts"]), "attempt fields")
check(att["attempt"]["number"] == 1 and att["attempt"]["phase"] == "seed", "attempt 1 is the seed")
check(att["attempt"]["source"].strip() != "", "the attempt's source")
check(att["verdict"]["status"] == att["attempt"]["status"], "the verdict's status")
check(isinstance(att["calls"], list), "calls is a list")
recs = [r for a in run["attempts"] for r in a["recommendations"]]
check(len(recs) >= 1 and recs[0]["source"] == "rules" and "bottleneck" in recs[0]["recommendation"],
      "the rules' recommendation, as an object")
for f in fails:
    print("FAIL:", f)
print("ok: run %d with %d attempts; attempt 1 %s" % (run["run"]["id"], len(run["attempts"]), att["attempt"]["status"]))
sys.exit(1 if fails else 0)
PY
