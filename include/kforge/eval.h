// Evaluating a candidate: the gates of EVALUATION.md, in order, ending in one Verdict.
//
//   static check -> compile -> trials (seeds x magnitudes, plus hidden sizes) -> reference
//   (float64) -> candidate run in the sandboxed worker (poisoned outputs, two poisons) ->
//   compare, input checksums, determinism -> timing (fresh inputs, cache flush, device timers)
//   -> re-verify the last timed output -> precision -> speed of light -> baselines.
//
// Thread-safety: Evaluate may run concurrently for different devices; timing on one device
// is serialised by a lock file.
#ifndef KFORGE_EVAL_H_
#define KFORGE_EVAL_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "kforge/problem.h"
#include "kforge/status.h"
#include "kforge/verdict.h"

namespace kforge {

class ProcessRunner;

struct EvalOptions {
  std::string backend = "cpp";
  int device = 0;
  std::map<std::string, int64_t> sizes;  // overrides of the problem's defaults
  bool quick = false;                    // use the problem's quick sizes
  int seeds = 5;                         // trials at the timed size (at least 5)
  bool hidden_sizes = true;              // two more trials at a variant size
  bool baselines = true;                 // time the reference and the seed in the same run
  bool timing = true;
  double budget_ms = 2000;               // timing budget per implementation
  double cv_target = 0.02;
  int min_runs = 10;
  int max_runs = 300;
  double timeout_seconds = 120;          // wall clock per worker run
  uint64_t memory_bytes = 8ull << 30;    // address-space limit of the worker
  // A median below slack x the theoretical floor is "suspicious" (the margin covers timer
  // granularity and clocks above the reported maximum); below slack x the achievable floor
  // the cached measured peaks are measured again first.
  double sol_slack = 0.8;
  int timed_checks = 3;                  // timed runs (picked at random) checked against a reference
  // The source pattern check (advice: every gate holds without it; tests prove that).
  bool static_check = true;
  // The precision policy (kforge/precision.h): the tolerance of every comparison and whether
  // the precision gate accepts fast-math. Unset: the problem's declared policy, else strict.
  std::optional<PrecisionPolicy> precision;
  // Advisory reports (docs/profiling.md); they never change the status.
  bool profile = false;                  // Nsight Compute metrics of one call -> verdict.profile
  bool sanitize = false;                 // compute-sanitizer memcheck of one call -> verdict.sanitizer
  bool racecheck = false;                // with sanitize: racecheck too
};

// Judges `candidate` (a source file for options.backend) on `problem`. The Verdict carries
// every kernel outcome; a non-OK Status means the evaluation itself could not happen (unknown
// backend, a precision policy the problem does not allow, broken problem reference, no worker
// binary) and says what to do.
Result<Verdict> Evaluate(const Problem& problem, const std::filesystem::path& candidate,
                         const EvalOptions& options, ProcessRunner& runner);

// PyTorch problems only: runs the reference and times the eager and torch.compile baselines
// (baselines "torch_eager", "torch_compile", "torch_best"), judging no candidate. The verdict's
// status is correct when they ran; failures of a baseline are warnings.
Result<Verdict> MeasureBaselines(const Problem& problem, const EvalOptions& options, ProcessRunner& runner);

// Peaks of a backend's device, both kinds (docs/evaluation.md, section 4):
//  - achievable: measured by kforge's peak kernels once and cached per device fingerprint;
//    they give SOL%, and read low when the machine was busy;
//  - theoretical: upper bounds from what the device is (cores, clocks, units), computed by
//    the worker's probe on every call; they give the speed-of-light floor, the gate.
struct DevicePeaks {
  double bandwidth_gbs = 0;  // achievable
  double fp32_gflops = 0;    // achievable
  bool cached = false;       // the achievable peaks came from the cache
  nlohmann::json fingerprint;
  // TheoreticalPeaksToJson (src/backend/theoretical_peaks.h): units, bandwidth_gbs,
  // bandwidth_source, cache_resident_bytes, basis.
  nlohmann::json theoretical;
};
// `remeasure` ignores (and replaces) the cached achievable peaks. Fails when the device
// cannot be probed or measured, or reports no theoretical peaks.
Result<DevicePeaks> GetDevicePeaks(const std::string& backend, int device, ProcessRunner& runner,
                                   bool remeasure = false);

}  // namespace kforge

#endif  // KFORGE_EVAL_H_
