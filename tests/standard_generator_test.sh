#!/bin/sh
# CTest: the build's generated sources (the CUDA peak kernels' PTX, embedded into the worker)
# (and the Vulkan peaks shader's SPIR-V) build with CMake's default generator (Unix Makefiles),
# not only with Ninja (scripts/build).
# Ninja makes an output's folder before running its command; Make does not, and nvcc could not
# write peaks.ptx there (issue 13, item 0). Configures a fresh tree with the default generator
# and builds the target that runs the custom command; without nvcc that target still builds
# (its PTX is left out) and the test says so.
set -eu
SRC=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset CMAKE_GENERATOR
cmake -S "$SRC" -B "$work" -DCMAKE_BUILD_TYPE=Release >"$work.configure.log" 2>&1 || {
  cat "$work.configure.log"; rm -f "$work.configure.log"; echo "FAIL: configure"; exit 1; }
grep -q "CMAKE_GENERATOR:INTERNAL=Unix Makefiles" "$work/CMakeCache.txt" || {
  echo "FAIL: the default generator here is not Unix Makefiles"; exit 1; }
rm -f "$work.configure.log"
cmake --build "$work" --target kforge_backend_cuda -j "$(nproc 2>/dev/null || echo 2)" || {
  echo "FAIL: kforge_backend_cuda does not build with Unix Makefiles"; exit 1; }
# The Vulkan peaks shader's SPIR-V, generated in the vulkan folder's own library.
if ! grep -q "KF_GLSLANG:FILEPATH=.*-NOTFOUND" "$work/CMakeCache.txt"; then
  cmake --build "$work" --target kforge_backend_vulkan -j "$(nproc 2>/dev/null || echo 2)" || {
    echo "FAIL: kforge_backend_vulkan does not build with Unix Makefiles"; exit 1; }
  grep -q "kf_vk_peaks_spirv" "$work/gen/backend/vulkan/peaks.spv.h" || { echo "FAIL: peaks.spv.h is not the SPIR-V"; exit 1; }
fi
if grep -q "KFORGE_NVCC:FILEPATH=.*-NOTFOUND" "$work/CMakeCache.txt"; then
  echo "PASS (no nvcc here: the peak kernels' PTX is not built)"
  exit 0
fi
test -s "$work/gen/backend/cuda/peaks.ptx" || { echo "FAIL: peaks.ptx missing or empty"; exit 1; }
grep -q "kfptx(" "$work/gen/backend/cuda/peaks.ptx.inc" || { echo "FAIL: peaks.ptx.inc is not the embedded PTX"; exit 1; }
echo "PASS: peaks.ptx built and embedded with Unix Makefiles"
