// The cuda backend's profiler and sanitizer (its spec's `profiler` and `sanitizer` hooks),
// advisory: a worker job run under Nsight Compute (`ncu`) or
// compute-sanitizer, its report normalised into JSON for the verdict's `profile` and
// `sanitizer` fields (docs/profiling.md). Nothing here decides a verdict: a profiler that is
// missing, refused or broken yields {"error": "..."} and the evaluation goes on.
// Thread-safety: pure functions, except FindCudaTool/AvailableNcuMetrics (cached, locked).
#ifndef KFORGE_BACKEND_CUDA_CUDA_TOOLS_H_
#define KFORGE_BACKEND_CUDA_CUDA_TOOLS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/subprocess.h"

namespace kforge {

// The metrics kforge asks ncu for, and what each becomes in the normalised profile.
struct NcuMetric {
  const char* metric;  // e.g. "dram__bytes.sum.per_second"
  const char* key;     // e.g. "dram_bandwidth_gbs"
};
const std::vector<NcuMetric>& NcuMetrics();

// Path of a CUDA tool ("ncu", "compute-sanitizer"): $KFORGE_<NAME> (NCU, COMPUTE_SANITIZER),
// PATH, /usr/local/cuda/bin; "" when absent.
std::string FindCudaTool(const std::string& name);

// Metric names ncu supports on this machine's GPU (`ncu --query-metrics`), base names only;
// empty when the query fails (then every metric is requested).
std::vector<std::string> AvailableNcuMetrics(ProcessRunner& runner, const std::string& ncu);

// argv prefix that runs a command under ncu with kforge's metrics (those `available` lists,
// or all when it is empty): ncu --clock-control none --print-units base --csv --metrics ...
std::vector<std::string> NcuCommand(const std::string& ncu, const std::vector<std::string>& available);

// Parses ncu's --csv output (one row per kernel launch and metric) into
//   {"kernels": [{"name", "launches", "duration_ms", "dram_bandwidth_gbs", "sm_throughput_pct",
//                 "tensor_pipe_pct", "achieved_occupancy_pct", "l1_hit_rate_pct",
//                 "l2_hit_rate_pct", "top_stalls": [{"reason", "cycles_per_issue"}], ...}],
//    "duration_ms": sum over kernels of the mean duration per launch}
// Lines that are not CSV rows (ncu's ==PROF== messages, the worker's output) are skipped.
nlohmann::json ParseNcuCsv(const std::string& text);

// argv prefix for compute-sanitizer with `tool` ("memcheck", "racecheck").
std::vector<std::string> SanitizerCommand(const std::string& sanitizer, const std::string& tool);

// {"tool", "errors": N, "clean": bool, "report": the ========= lines, trimmed}.
nlohmann::json SummarizeSanitizer(const std::string& tool, const std::string& output);

}  // namespace kforge

#endif  // KFORGE_BACKEND_CUDA_CUDA_TOOLS_H_
