// hipcc, the HIP compiler driver (ROCm's clang), as kforge runs it on the orchestrator side:
// where it is, the flags for one --offload-arch target, and the targets kforge supports with
// Debian 12's hipcc (ROCm 5.2, clang 15). Thread-safety: pure functions (FindHipcc reads the
// environment).
#ifndef KFORGE_BACKEND_HIP_HIP_TOOLCHAIN_H_
#define KFORGE_BACKEND_HIP_HIP_TOOLCHAIN_H_

#include <string>
#include <vector>

namespace kforge {

// $KFORGE_HIPCC when set (and executable), else hipcc on PATH, else /opt/rocm/bin/hipcc; ""
// when there is none.
std::string FindHipcc();

// The targets every bundled HIP kernel is built for in CI: gfx90a (CDNA2: MI200) and gfx1030
// (RDNA2: Radeon RX 6800/6900, PRO W6800). ROCm 5.2's clang 15 rejects gfx942 (MI300X/A) and
// has no device library for gfx1100 (RDNA3); those need ROCm 6 (docs/abi-hip.md).
const std::vector<std::string>& SupportedHipTargets();

// hipcc -std=c++20 -O3 -shared -fPIC -fvisibility=hidden --offload-arch=<arch>
// -Rpass-analysis=kernel-resource-usage -I<include_dir>. No -ffast-math; -O3 keeps clang's
// HIP default FP contraction (fast) and denormals.
std::vector<std::string> HipccFlags(const std::string& arch, const std::string& include_dir);

// "HIP version: 5.2.21153-0; Debian clang version 15.0.6" from `hipcc --version` output.
std::string HipccVersionLine(const std::string& version_output);

}  // namespace kforge

#endif  // KFORGE_BACKEND_HIP_HIP_TOOLCHAIN_H_
