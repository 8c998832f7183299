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
  double sol_slack = 0.8;                // measured < slack * floor is "suspicious"
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

// Device peaks for a backend/device, measured once and cached per device fingerprint.
struct DevicePeaks {
  double bandwidth_gbs = 0;
  double fp32_gflops = 0;
  bool cached = false;
  nlohmann::json fingerprint;
};
// `remeasure` ignores (and replaces) the cached values.
Result<DevicePeaks> GetDevicePeaks(const std::string& backend, int device, ProcessRunner& runner,
                                   bool remeasure = false);

}  // namespace kforge

#endif  // KFORGE_EVAL_H_
