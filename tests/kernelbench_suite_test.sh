#!/bin/sh
# CTest: every problem of the kernelbench-l2-gemm suite loads and its PyTorch reference and
# eager baseline run on the CPU at --quick sizes. Needs a KernelBench copy: $KFORGE_KERNELBENCH,
# else ../shared/kernelbench beside the source tree; skipped (exit 77) without one.
set -eu
KFORGE=$1
SRC=$2
KB=${KFORGE_KERNELBENCH:-}
for d in "$KB" "$SRC/../shared/kernelbench" /work/shared/kernelbench; do
  if [ -n "$d" ] && [ -d "$d/level2" ]; then KB=$d; break; fi
done
if [ -z "$KB" ] || [ ! -d "$KB/level2" ]; then
  echo "no KernelBench copy (set KFORGE_KERNELBENCH): skipped"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
KFORGE_TORCH_DEVICE=cpu "$KFORGE" bench kernelbench-l2-gemm --kernelbench "$KB" --baselines-only --quick \
  --seeds 1 --budget-ms 10 -j 2 --json "$out/b.json" > "$out/table.txt"
cat "$out/table.txt"
/usr/bin/python3 - "$out/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert len(rows) == 37, len(rows)
bad = [r["problem"] + ": " + r["message"] for r in rows if r["status"] != "baselines" or r["baselines_ms"].get("torch_eager", 0) <= 0]
assert not bad, "\n".join(bad)
print("37 problems loaded; references and eager baselines ran")
PY
