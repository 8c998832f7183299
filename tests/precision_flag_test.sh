#!/bin/sh
# CTest: --precision on eval, optimize and bench (and through --config) rejects an unknown
# policy with exit code 2 and a message naming the valid ones, before any evaluation starts.
set -eu
KFORGE=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
valid="expected one of strict, tf32, bf16, fp16, kernelbench"
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
    echo "ok: kforge $*: $(cat "$dir/err")"
  fi
}

expect "kforge eval: --precision: unknown precision policy 'TF32'; $valid" eval matmul seed --precision TF32
expect "kforge eval: --precision takes one policy here (got 'strict,tf32')" eval matmul seed --precision strict,tf32
expect "kforge optimize: --precision: unknown precision policy 'fp8'; $valid" optimize matmul --precision fp8
expect "kforge bench: --precision: unknown precision policy 'fp8'; $valid" bench bundled --candidates "$dir" --precision strict,fp8
printf '[eval]\nprecision = "nope"\n' >"$dir/eval.toml"
expect "unknown precision policy 'nope'; $valid" --config "$dir/eval.toml" eval matmul seed
printf '[bench]\nprecision = ["strict", "bogus"]\n' >"$dir/bench.toml"
expect "unknown precision policy 'bogus'; $valid" --config "$dir/bench.toml" bench bundled --candidates "$dir"
[ "$fails" -eq 0 ]
