// rocprof's output files normalised into the verdict's `profile` shape, the one ncu's CSV
// becomes (profile/profile.h ParseNcuCsv): {"kernels": [{"name", "launches", "duration_ms",
// ...}], "duration_ms", "tool": "rocprof"}. Advisory, like every profile: a file kforge cannot
// read yields {"error": ...}.
//
// Formats read (from ROCm's rocprof documentation; see testdata/rocprof/README.md):
//  - rocprof v1 (ROCm 5) `-o results.csv`, one row per dispatch: "Index","KernelName",
//    "gpu-id", ..., "vgpr" (or "arch_vgpr", "accum_vgpr"), "sgpr", "lds", "scr", the counters
//    an input file's `pmc:` lines asked for, and with `--timestamp on` "BeginNs","EndNs";
//  - rocprofv3 (ROCm 6) `<pid>_kernel_trace.csv`: "Kernel_Name", "Start_Timestamp",
//    "End_Timestamp" (ns), "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count", "LDS_Block_Size",
//    "Scratch_Size";
//  - rocprof `--stats` `results.stats.csv`: "Name","Calls","TotalDurationNs","AverageNs",
//    "Percentage";
//  - rocprof `--hip-trace`/`--hsa-trace` `results.json`: a Chrome trace, {"traceEvents": [...]}
//    where "ph":"M" "process_name" events name the lanes and kernels are "ph":"X" events
//    (ts and dur in microseconds, numbers or numeric strings) in a lane named "GPU<n>".
// Thread-safety: pure functions.
#ifndef KFORGE_BACKEND_HIP_ROCPROF_H_
#define KFORGE_BACKEND_HIP_ROCPROF_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge {

// A per-dispatch CSV (rocprof v1 results.csv or rocprofv3 kernel_trace.csv), per kernel:
// "launches", "duration_ms" (mean over launches), and where present "vgprs", "agprs", "sgprs",
// "lds_bytes", "scratch_bytes", and the counters: "valu_utilization_pct" (VALUUtilization),
// "valu_busy_pct" (VALUBusy), "salu_busy_pct" (SALUBusy), "memory_unit_busy_pct" (MemUnitBusy),
// "l2_hit_rate_pct" (L2CacheHit), "lds_bank_conflict_pct" (LDSBankConflict), "wavefronts"
// (Wavefronts), and "dram_bandwidth_gbs" from FetchSize + WriteSize (kilobytes) over the
// dispatch's duration.
nlohmann::json ParseRocprofDispatchCsv(const std::string& text);

// results.stats.csv: per kernel "launches" (Calls) and "duration_ms" (AverageNs).
nlohmann::json ParseRocprofStatsCsv(const std::string& text);

// results.json: per kernel "launches" and "duration_ms" (mean "dur") of the GPU lanes' events.
nlohmann::json ParseRocprofTraceJson(const std::string& text);

// The files of one rocprof run in `dir`, the most detailed first: a dispatch CSV
// (results.csv, *kernel_trace.csv), else results.stats.csv, else results.json.
// {"error"} when none is there or none parses; "source" names the file used.
nlohmann::json ParseRocprofFolder(const std::string& dir);

// The `-i` input file kforge would give rocprof v1: one `pmc:` line of the counters above.
std::string RocprofInputFile();

// argv prefix: rocprof -i <input> --timestamp on --stats -o <out_dir>/results.csv.
std::vector<std::string> RocprofCommand(const std::string& rocprof, const std::string& input_file,
                                        const std::string& out_dir);

// The wrapper kforge eval --profile puts before a hip worker job (run in the job folder, its
// working directory): /bin/sh writes RocprofInputFile() to rocprof_input.txt, makes rocprof/,
// then execs RocprofCommand(rocprof, "rocprof_input.txt", "rocprof") with the worker's argv.
// ParseRocprofFolder(<job folder>/rocprof) reads what it wrote.
std::vector<std::string> RocprofWrapper(const std::string& rocprof);

// $KFORGE_ROCPROF when set, else rocprof on PATH, else /opt/rocm/bin/rocprof; "" when absent.
std::string FindRocprof();

}  // namespace kforge

#endif  // KFORGE_BACKEND_HIP_ROCPROF_H_
