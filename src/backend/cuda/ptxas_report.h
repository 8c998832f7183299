// The resource report of `nvcc -Xptxas -v`, parsed per kernel: registers, spills, stack,
// shared and constant memory, barriers. It lands in the verdict as `resources`
// (docs/verdict-schema.md) so a reader sees at once that a kernel spills or is register bound.
//
// The report has, per kernel, lines of this shape (CUDA 12 and 13):
//   ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90'
//   ptxas info    : Function properties for _Z6kernelPf
//       8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
//   ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]
// Unknown lines are ignored. Thread-safety: pure functions.
#ifndef KFORGE_BACKEND_CUDA_PTXAS_REPORT_H_
#define KFORGE_BACKEND_CUDA_PTXAS_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

// {"kernels": [{"name": demangled, "mangled", "arch", "registers", "barriers", "smem_bytes",
//   "cmem_bytes", "stack_bytes", "spill_store_bytes", "spill_load_bytes"}, ...],
//  "spills": true when any kernel spills}. An empty "kernels" list when the log has no report.
nlohmann::json ParsePtxasReport(const std::string& log);

// The log without the ptxas -v lines (what a reader of a compile error wants to see).
std::string StripPtxasReport(const std::string& log);

}  // namespace kforge

#endif  // KFORGE_BACKEND_CUDA_PTXAS_REPORT_H_
