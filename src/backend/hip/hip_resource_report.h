// The resource report of hipcc (clang) built with -Rpass-analysis=kernel-resource-usage,
// parsed per kernel: registers, spills, scratch, LDS and occupancy. It lands in the verdict
// as `resources` (docs/verdict-schema.md), like nvcc's ptxas report for the cuda backend.
//
// clang 15 (ROCm 5.2, Debian 12's hipcc) prints, per kernel and target, remarks of this shape:
//   k.hip:2:1: remark: Function Name: _Z5scalePfi [-Rpass-analysis=kernel-resource-usage]
//   k.hip:2:1: remark:     SGPRs: 11 [-Rpass-analysis=kernel-resource-usage]
//   k.hip:2:1: remark:     VGPRs: 6 [...]          (AGPRs: on gfx90a/gfx908/gfx94x only)
//   k.hip:2:1: remark:     ScratchSize [bytes/lane]: 0 [...]
//   k.hip:2:1: remark:     Occupancy [waves/SIMD]: 8 [...]
//   k.hip:2:1: remark:     SGPRs Spill: 0 [...]    VGPRs Spill: 0 [...]
//   k.hip:2:1: remark:     LDS Size [bytes/block]: 1024 [...]
// with the source line and a caret between some of them. Other lines are ignored. The remark
// does not name the target: kforge builds one target per compile, which the verdict records.
// Thread-safety: pure functions.
#ifndef KFORGE_BACKEND_HIP_HIP_RESOURCE_REPORT_H_
#define KFORGE_BACKEND_HIP_HIP_RESOURCE_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>

namespace kforge {

// {"kernels": [{"name": demangled, "mangled", "sgprs", "vgprs", "agprs", "scratch_bytes_per_lane",
//   "occupancy_waves_per_simd", "sgpr_spills", "vgpr_spills", "lds_bytes"}, ...] in the order
//  printed (a kernel built for two targets appears twice), "spills": true when any kernel
//  spills registers, "scratch": true when any kernel uses scratch (spills or local arrays)}. An
//  empty "kernels" list when the log has no report.
nlohmann::json ParseHipResourceReport(const std::string& log);

}  // namespace kforge

#endif  // KFORGE_BACKEND_HIP_HIP_RESOURCE_REPORT_H_
