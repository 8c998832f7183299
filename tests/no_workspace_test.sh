#!/bin/sh
# CTest: `kforge runs` and `kforge show` in a folder without a workspace say where no run store
# was found, and leave no .kforge/ behind (opening the store would create one).
set -u
KFORGE=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
unset KFORGE_WORKSPACE
out=$("$KFORGE" runs 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "FAIL: kforge runs exited $rc: $out"; exit 1; }
echo "$out" | grep -q "no run store at $dir/.kforge/runs.db" || { echo "FAIL: kforge runs said: $out"; exit 1; }
out=$("$KFORGE" show 1 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "FAIL: kforge show exited $rc: $out"; exit 1; }
echo "$out" | grep -q "no run store" || { echo "FAIL: kforge show said: $out"; exit 1; }
[ ! -e .kforge ] || { echo "FAIL: a .kforge folder was created"; exit 1; }
echo PASS
