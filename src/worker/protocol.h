// The orchestrator <-> kforge-worker protocol (docs/worker-protocol.md).
//
// The orchestrator writes job.json and the input tensors (raw little-endian bytes) into the
// worker's private directory and starts `kforge-worker run job.json` in the sandbox. The worker
// writes result.json (replaced atomically after every step, so a crash keeps what was done) and
// output tensors as raw files beside it. Everything the worker reports about correctness is
// raw data; the orchestrator draws the conclusions.
#ifndef KFORGE_WORKER_PROTOCOL_H_
#define KFORGE_WORKER_PROTOCOL_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/device.h"
#include "kforge/problem.h"
#include "kforge/status.h"
#include "kforge/tensor.h"

namespace kforge {

// A distribution kind's name in jobs: "normal", "uniform", "integers".
const char* DistName(Distribution::Kind k);

// How the worker draws a fresh value set for an input (GenerateTensor in eval/inputs.h).
struct InputGenerator {
  Distribution dist;
  std::string key;  // "<problem>/<input>"
  // Values drawn in this type and widened to the tensor's (a float64 reference's view of a
  // float32 input); unset: the tensor's own type.
  std::optional<DType> dtype;
};

struct TensorFile {
  TensorShape shape;
  std::string file;  // relative to the job folder; inputs only
  std::optional<InputGenerator> gen;  // inputs of timed sets: fresh values for every timed run
  // The input is drawn by the worker from `gen` with this seed at the set's magnitude, not read
  // from a file: a reference job for sampled timed runs, whose seeds are all it needs.
  std::optional<uint64_t> draw_seed;
};

// One set of inputs with its own sizes, buffers and outputs.
struct InputSet {
  double magnitude = 1;  // the scale fresh timed inputs are drawn at
  std::vector<LaunchAttr> attrs;
  std::vector<TensorFile> inputs;
  std::vector<TensorFile> outputs;
};

struct TimingPlan {
  std::vector<int> sets;   // rotated over, one set per timed run (at least two for fresh inputs)
  int warmup_runs = 3;
  double warmup_ms = 30;
  int min_runs = 10;
  int max_runs = 300;
  double budget_ms = 2000;  // stop after this once min_runs are done
  double cv_target = 0.02;
  double precision_target = 0.03;  // or stop once the median is known to +-3% (base/stats.h MedianPrecision)
  bool flush = true;        // flush the last-level cache before every timed run
  // Every timed run gets fresh inputs, drawn by the worker from a seed its supervisor picks
  // (inputs need a generator). Off only for probes that time a fixed workload.
  bool fresh_inputs = true;
  int timed_checks = 3;          // timed runs whose outputs come back for a reference check
  int calibration_runs = 12;     // null runs that measure the supervisor's round trip
  bool reference_finite = true;  // the check references had no NaN/Inf: timed outputs must not either
  bool degenerate = false;       // outputs may repeat across inputs (constant references)
  // The device's head start before each timed and null run, ms (Device::SetQueue): the run's
  // launches reach the device's queue before it gets to them. 0: none.
  double queue_ms = 0;
};

struct Job {
  std::string backend;
  int device = 0;
  std::string library;              // relative to the job folder
  std::string entry;
  std::string program_source_file;  // relative; may be empty
  std::vector<InputSet> sets;
  std::vector<int> checks;          // sets to run and return outputs of
  bool check_twice = true;          // run each check set with both poisons (determinism)
  std::optional<TimingPlan> timing;
  bool peaks = false;               // only measure device peaks
  // Record which kernels the first check ran (CUDA: CUPTI), result.json's "kernels". Off for
  // jobs under a profiler or sanitizer, which trace the process themselves.
  bool record_kernels = true;
  // The device lock (base/device_lock.h) the supervisor takes itself: shared for the job, and
  // exclusive from each null or timed run's cache flush to the end of its call. Empty: the
  // orchestrator holds the device for the whole job (peaks, profiles), or there is no lock.
  std::string lock_file;
};

nlohmann::json JobToJson(const Job& job);
nlohmann::json TimingPlanToJson(const TimingPlan& plan);
Result<Job> JobFromJson(const nlohmann::json& j);

// Output file names the worker writes.
std::string CheckOutputFile(int set, char poison, const std::string& tensor);
std::string TimedOutputFile(int run, const std::string& tensor);  // a sampled timed run

// Poison patterns per dtype: NaNs with distinct payloads for floats, sentinels for integers.
// `which` is 0 or 1. Returns the pattern size in bytes.
size_t PoisonPattern(DType t, int which, unsigned char out[8]);

}  // namespace kforge

#endif  // KFORGE_WORKER_PROTOCOL_H_
