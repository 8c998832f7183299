#!/bin/sh
# CTest: kforge optimize's per-role sampling flags reject out-of-range values with exit code 2
# and the allowed range, before any model is called or anything is evaluated.
set -eu
KFORGE=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fails=0

# expect <message fragment> <kforge arguments...>: exit code 2 and the fragment on stderr.
expect() {
  want=$1
  shift
  rc=0
  "$KFORGE" "$@" >"$dir/out" 2>"$dir/err" || rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" "$dir/err"; then
    echo "FAIL: kforge $*: exit $rc, stderr:"
    cat "$dir/err"
    fails=$((fails + 1))
  else
    echo "ok: kforge $*: $(head -n 1 "$dir/err")"
  fi
}

expect "--generator-max-output-tokens: Value 0 not in range 1 to 1000000" \
  optimize gelu --llm local --generator-max-output-tokens 0
expect "--analyst-max-output-tokens: Value -5 not in range 1 to 1000000" \
  optimize gelu --llm local --analyst-max-output-tokens -5
expect "--generator-temperature: Value 3 not in range 0" \
  optimize gelu --llm local --generator-temperature 3
expect "--analyst-temperature: Value -1 not in range 0" \
  optimize gelu --llm local --analyst-temperature -1
expect "Could not convert: --llm-seed = seven" optimize gelu --llm local --llm-seed seven
[ -d .kforge ] && { echo "FAIL: a run was started"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ]
