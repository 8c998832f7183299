#!/bin/sh
# CTest: `kforge doctor` lists the cute backend and says what it lacks: without CuTe DSL in the
# worker's interpreter, how to install it; with it (KFORGE_CUTE_CHECK_PYTHON) but no CUDA device,
# that it runs only on an NVIDIA GPU. On a machine with a GPU and the DSL it says ok.
set -u
KFORGE=$1
line=$(KFORGE_PYTHON=/nonexistent/kforge-no-python "$KFORGE" doctor 2>&1 | grep "^  cute ")
echo "no interpreter: $line"
echo "$line" | grep -q "NOT USABLE" || { echo "FAIL: cute is usable without a Python"; exit 1; }
line=$("$KFORGE" doctor 2>&1 | grep -A1 "^  cute ")
echo "this machine's worker interpreter: $line"
[ -n "$line" ] || { echo "FAIL: doctor lists no cute backend"; exit 1; }
if echo "$line" | grep -q "'cutlass', which does not import"; then
  echo "$line" | grep -q "pip install nvidia-cutlass-dsl" || { echo "FAIL: no how-to-install in: $line"; exit 1; }
fi
if [ -n "${KFORGE_CUTE_CHECK_PYTHON:-}" ]; then
  line=$(KFORGE_PYTHON=$KFORGE_CUTE_CHECK_PYTHON "$KFORGE" doctor 2>&1 | grep -A1 "^  cute ")
  echo "with CuTe DSL ($KFORGE_CUTE_CHECK_PYTHON): $line"
  if echo "$line" | head -1 | grep -q "NOT USABLE"; then
    echo "$line" | grep -q "only on an NVIDIA GPU" || { echo "FAIL: not the no-GPU message: $line"; exit 1; }
  else
    echo "$line" | grep -q "cutlass " || { echo "FAIL: usable, but no cutlass version: $line"; exit 1; }
  fi
fi
echo PASS
