#!/bin/sh
# CTest: every bundled problem's cute seed compiles for sm_90a without a GPU
# (cute_compile_check.py), so does the prompt's worked example, and a kernel that does not
# compile fails the check. Needs an
# interpreter with CuTe DSL and PyTorch: KFORGE_CUTE_CHECK_PYTHON=/opt/kforge/cute-venv/bin/python3
# (KFORGE_CUTE=1 scripts/setup makes it); skips (77) without it.
set -u
repo=$1
py=${KFORGE_CUTE_CHECK_PYTHON:-}
if [ -z "$py" ]; then
  echo "SKIP: KFORGE_CUTE_CHECK_PYTHON is not set (an interpreter with nvidia-cutlass-dsl and PyTorch; KFORGE_CUTE=1 scripts/setup makes /opt/kforge/cute-venv)"
  exit 77
fi
check=$repo/src/backend/cute/cute_compile_check.py
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
CUTE_DSL_ARCH=sm_90a "$py" "$check" --all "$repo/problems" || { echo "FAIL: a cute seed does not compile"; exit 1; }
# The prompt's worked example (prompts/backends/cute.md), on the test problem it is written for.
sed -n '/^```python$/,/^```$/p' "$repo/prompts/backends/cute.md" | sed '1d;$d' >"$work/prompt_example.py"
CUTE_DSL_ARCH=sm_90a "$py" "$check" "$repo/src/eval/testdata/scale" "$work/prompt_example.py" ||
  { echo "FAIL: the prompt's example does not compile"; exit 1; }
out=$(CUTE_DSL_ARCH=sm_90a "$py" "$check" "$repo/problems/gelu" "$repo/src/backend/cute/testdata/does_not_compile.py" 2>&1)
rc=$?
echo "$out" | tail -3 | cut -c1-400
[ $rc = 1 ] || { echo "FAIL: a kernel that does not compile passed the check (exit $rc)"; exit 1; }
echo "$out" | grep -q "undefined_name" || { echo "FAIL: the check does not say what does not compile"; exit 1; }
echo PASS
