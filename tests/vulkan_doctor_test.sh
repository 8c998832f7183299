#!/bin/sh
# CTest: `kforge doctor` lists the vulkan backend, and when the Vulkan loader finds no driver
# (VK_DRIVER_FILES / VK_ICD_FILENAMES name a file that does not exist) it says the backend is
# not usable and how to fix that (install mesa-vulkan-drivers or a GPU driver).
set -u
KFORGE=$1
missing=/nonexistent/kforge-no-such-icd.json
out=$(VK_DRIVER_FILES=$missing VK_ICD_FILENAMES=$missing "$KFORGE" doctor 2>&1)
line=$(echo "$out" | grep "^  vulkan ")
[ -n "$line" ] || { echo "FAIL: doctor lists no vulkan backend:"; echo "$out"; exit 1; }
echo "$line" | grep -q "NOT USABLE" || { echo "FAIL: vulkan is usable without a driver: $line"; exit 1; }
echo "$line" | grep -q "mesa-vulkan-drivers" || { echo "FAIL: no how-to-fix in: $line"; exit 1; }
echo "without a driver: $line"
out=$("$KFORGE" doctor 2>&1)
line=$(echo "$out" | grep -A3 "^  vulkan ")
[ -n "$line" ] || { echo "FAIL: doctor lists no vulkan backend:"; echo "$out"; exit 1; }
echo "with the machine's drivers: $line"
if echo "$line" | head -1 | grep -q "NOT USABLE"; then echo "SKIP: no Vulkan device here"; exit 77; fi
echo "$line" | grep -q "device 0: " || { echo "FAIL: no device listed"; exit 1; }
echo "$line" | grep -q "achievable peaks of device 0" || { echo "FAIL: no peaks for the Vulkan device"; exit 1; }
echo PASS
