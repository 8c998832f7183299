#!/bin/sh
# CTest (label local_llm): one short forge loop against the real local model that
# scripts/local-llm serves (llama.cpp's llama-server, Qwen2.5-Coder-1.5B). Deterministic
# sampling (temperature 0, seed 7), capped answers, gelu on cpp, one optimization pass.
# It asserts what the loop must do with a real model, never what the model achieves:
#   - the run ends with a status and a stop reason;
#   - every answer was parsed (code extracted, a recommendation read) or re-asked;
#   - the store's token totals equal what the server counted (its /metrics counters before
#     and after the run: prompt tokens it evaluated, tokens it generated) and what
#     `kforge show` prints;
#   - every prompt and answer is recorded, with the sampling sent.
# Skipped (77) when no local model answers, unless KFORGE_REQUIRE_LOCAL_LLM=1 (scripts/test
# sets it after starting the server, so in CI a missing model fails the test).
set -eu
KFORGE=$1
PORT=${KFORGE_LLM_PORT:-8089}
URL=http://127.0.0.1:$PORT
MODEL="local:qwen2.5-coder-1.5b@$URL/v1"

if ! /usr/bin/python3 -c "import urllib.request,sys; urllib.request.urlopen('$URL/health', timeout=5)" 2>/dev/null; then
  if [ "${KFORGE_REQUIRE_LOCAL_LLM:-0}" = 1 ]; then
    echo "FAIL: no local model answers on $URL (KFORGE_REQUIRE_LOCAL_LLM=1): run scripts/local-llm start"
    exit 1
  fi
  echo "no local model on $URL: skipped (scripts/local-llm start starts one; then ctest -L local_llm)"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export KFORGE_WORKSPACE="$work/.kforge"
metrics() {
  /usr/bin/python3 - "$URL" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=10).read().decode()
values = {}
for line in text.splitlines():
    if line and not line.startswith("#"):
        name, value = line.split()[:2]
        values[name] = int(float(value))
print(values["llamacpp:prompt_tokens_total"], values["llamacpp:tokens_predicted_total"])
PY
}
before=$(metrics) || { echo "FAIL: $URL/metrics does not answer (start the server with --metrics: scripts/local-llm does)"; exit 1; }
start=$(date +%s)
rc=0
"$KFORGE" optimize gelu -b cpp --llm "$MODEL" --iterations 1 --candidates 1 --functional-attempts 1 \
  --generator-temperature 0 --analyst-temperature 0 --llm-seed 7 \
  --generator-max-output-tokens 512 --analyst-max-output-tokens 384 \
  --quick --no-confirm --budget-ms 200 >"$work/out.txt" 2>"$work/err.txt" || rc=$?
after=$(metrics)
echo "kforge optimize exited $rc after $(($(date +%s) - start)) s"
cat "$work/out.txt"
tail -n 20 "$work/err.txt"
# 0: a correct kernel (the seed counts), 1: none. Anything else is a usage or environment error.
[ "$rc" -le 1 ] || { echo "FAIL: kforge optimize exited $rc"; cat "$work/err.txt"; exit 1; }
"$KFORGE" show 1 >"$work/show.txt" || { echo "FAIL: kforge show 1"; exit 1; }
"$KFORGE" show 1 --json >"$work/show.json" || { echo "FAIL: kforge show 1 --json"; exit 1; }

/usr/bin/python3 - "$KFORGE_WORKSPACE/runs.db" "$before" "$after" "$work/show.txt" "$work/show.json" <<'PY'
import json, re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.row_factory = sqlite3.Row
p0, g0 = map(int, sys.argv[2].split())
p1, g1 = map(int, sys.argv[3].split())
show = open(sys.argv[4]).read()
failures = []
def check(ok, what):
    if not ok:
        failures.append(what)

run = db.execute("SELECT * FROM runs").fetchone()
check(run["status"] in ("done", "failed"), "run status is %r" % run["status"])
check(run["stop_reason"] != "", "the run has no stop reason")
print("run: %s: %s" % (run["status"], run["stop_reason"]))

calls = db.execute("SELECT * FROM llm_calls ORDER BY id").fetchall()
check(len(calls) >= 2, "expected an analyst and a generator call, got %d calls" % len(calls))
for c in calls:
    check(c["error"] == "", "call %d failed: %s" % (c["id"], c["error"]))
    prompt = json.loads(c["prompt_json"])
    check(prompt.get("messages"), "call %d: no prompt recorded" % c["id"])
    check(prompt.get("temperature") == 0 and prompt.get("seed") == 7,
          "call %d: sampling not recorded as sent: %r" % (c["id"], {k: prompt.get(k) for k in ("temperature", "seed")}))
    cap = 512 if c["agent"] == "generator" else 384
    check(prompt.get("max_output_tokens") == cap, "call %d: output cap %r, expected %d" % (c["id"], prompt.get("max_output_tokens"), cap))
    check(c["output_tokens"] <= cap, "call %d: %d output tokens over the cap %d" % (c["id"], c["output_tokens"], cap))
    check(c["response_text"] != "" or c["output_tokens"] == 0, "call %d: answer not recorded" % c["id"])
    check(c["finish_reason"] in ("stop", "length", "repetition"), "call %d: finish reason %r" % (c["id"], c["finish_reason"]))
    check(c["prompt_chars"] > 0 and c["prompt_tokens_estimate"] > 0, "call %d: prompt size not recorded" % c["id"])
    details = json.loads(c["details_json"])
    check(details.get("streamed") is True and "first_token_ms" in details,
          "call %d: not recorded as streamed with its first-token time: %r" % (c["id"], details))
    check("server_ms" in details, "call %d: llama.cpp's own timings not recorded: %r" % (c["id"], details))
    check(details.get("usage_estimated", False) == (c["finish_reason"] == "repetition"),
          "call %d: usage estimated %r but finish %r" % (c["id"], details.get("usage_estimated"), c["finish_reason"]))
    print("call %d %-9s attempt %d: %5d in (%5d cached; ~%d estimated, %d chars) %4d out, %-10s %6.1f s "
          "(first token %.1f s, server %.1f s, %.1f tokens/s)" % (
        c["id"], c["agent"], c["attempt"], c["input_tokens"], c["cached_tokens"], c["prompt_tokens_estimate"],
        c["prompt_chars"], c["output_tokens"], c["finish_reason"], c["latency_ms"] / 1000,
        details.get("first_token_ms", 0) / 1000, details.get("server_ms", 0) / 1000, details.get("tokens_per_s", 0)))

# Generator answers: each one either gave the attempt its code or was followed by a re-ask
# (the next call of that attempt carries it as the assistant turn).
attempts = {a["number"]: a for a in db.execute("SELECT * FROM attempts")}
by_attempt = {}
for c in calls:
    if c["agent"] == "generator":
        by_attempt.setdefault(c["attempt"], []).append(c)
check(by_attempt, "no generator call")
for number, chain in by_attempt.items():
    source = attempts[number]["source"]
    for i, c in enumerate(chain):
        if i + 1 < len(chain):
            nxt = json.loads(chain[i + 1]["prompt_json"])["messages"]
            asked = (len(nxt) >= 2 and nxt[-2]["role"] == "assistant" and
                     nxt[-2]["parts"][0]["text"].startswith(c["response_text"])) or \
                "re-asked without the earlier answer" in chain[i + 1]["prompt_shrunk"]
            check(asked, "attempt %d: answer %d was neither used nor re-asked" % (number, c["id"]))
        else:
            used = source.strip() != "" and source.strip() in c["response_text"]
            gave_up = source.startswith("// kforge: the model returned no usable code twice") and len(chain) == 2
            check(used or gave_up, "attempt %d: its last answer (call %d) is not its source" % (number, c["id"]))

# Analyst answers: one chain per pass, each answer re-asked (the next call carries it as the
# assistant turn) until one is read (recommendation source "llm"); after one re-ask the loop
# falls back to the rules visibly (source "rules"), never silently after a single answer.
def reasks(prev, nxt):
    m = json.loads(nxt["prompt_json"])["messages"]
    return len(m) >= 2 and m[-2]["role"] == "assistant" and m[-2]["parts"][0]["text"].startswith(prev["response_text"])
chains = []
for c in calls:
    if c["agent"] != "analyst":
        continue
    if chains and chains[-1][-1]["id"] < c["id"] and reasks(chains[-1][-1], c):
        chains[-1].append(c)
    else:
        chains.append([c])
recs = db.execute("SELECT source FROM recommendations ORDER BY id").fetchall()
check(len(recs) == len(chains), "%d analyst exchanges but %d recommendations" % (len(chains), len(recs)))
for chain, r in zip(chains, recs):
    ids = [c["id"] for c in chain]
    if r["source"] == "rules":
        check(len(chain) == 2, "analyst calls %s: the rules were used without one re-ask" % ids)
    else:
        check(r["source"] == "llm", "recommendation source %r" % r["source"])
        check(len(chain) <= 2, "analyst calls %s: re-asked more than once" % ids)
    print("analyst calls %s -> recommendation from %s" % (ids, r["source"]))

# Tokens: the store against the server's own counters. The server evaluates only the prompt
# tokens its cache does not hold (input - cached) and generates exactly the output tokens. An
# answer kforge stopped for repetition has estimated tokens (the server's count comes at the end
# of a stream): then the exact comparison cannot hold, and the counted calls must stay below it.
tin = sum(c["input_tokens"] for c in calls)
tcached = sum(c["cached_tokens"] for c in calls)
tout = sum(c["output_tokens"] for c in calls)
estimated = [c for c in calls if json.loads(c["details_json"]).get("usage_estimated")]
print("store: %d input (%d cached), %d output tokens; server: %d prompt tokens evaluated, %d generated" % (
    tin, tcached, tout, p1 - p0, g1 - g0))
if not estimated:
    check(tout == g1 - g0, "output tokens: store %d, server %d" % (tout, g1 - g0))
    check(tin - tcached == p1 - p0, "evaluated prompt tokens: store %d, server %d" % (tin - tcached, p1 - p0))
else:
    counted = [c for c in calls if c not in estimated]
    print("%d answer(s) stopped for repetition: their tokens are estimates" % len(estimated))
    check(sum(c["output_tokens"] for c in counted) <= g1 - g0, "output tokens of counted calls exceed the server's")
m = re.search(r"(\d+) llm calls, (\d+) input \+ (\d+) output tokens", show)
check(m is not None, "kforge show prints no totals")
if m:
    check((int(m[1]), int(m[2]), int(m[3])) == (len(calls), tin, tout),
          "kforge show totals %s differ from the store's (%d, %d, %d)" % (m.groups(), len(calls), tin, tout))
# kforge show --json: every recorded call under its attempt, with its whole request and finish.
shown = json.load(open(sys.argv[5]))
shown_calls = [c for a in shown["attempts"] for c in a["calls"]]
numbers = {a["attempt"]["number"] for a in shown["attempts"]}
placed = [c for c in calls if c["attempt"] in numbers]
check(len(placed) == len(calls), "%d recorded calls name no attempt" % (len(calls) - len(placed)))
check(len(shown_calls) == len(placed), "kforge show --json lists %d calls, the store %d" % (len(shown_calls), len(placed)))
check(all(isinstance(c["request"], dict) and c["request"].get("messages") for c in shown_calls),
      "kforge show --json: a call without its request's messages")
check(all(c["finish_reason"] or c["error"] for c in shown_calls), "kforge show --json: a call without a finish reason or error")
gen_s = sum(c["latency_ms"] for c in calls) / 1000
print("model time %.1f s, %.1f output tokens/s overall" % (gen_s, tout / gen_s if gen_s else 0))
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS: the loop finished, every answer was used or re-asked, tokens match the server's")
PY
