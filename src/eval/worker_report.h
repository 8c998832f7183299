// A worker's report (the result.json of a job folder) as the orchestrator reads it. Both
// workers write one: kforge-worker's supervisor (src/worker/worker.cc, Supervisor::result_) and
// the Python worker's (python/kforge_pyworker.py, Results.data); docs/worker-protocol.md and
// docs/python-worker.md describe them. ParseWorkerReport reads it once, where a run is read back
// (eval/worker_client.h), so that a judge reads typed fields and a report of the wrong shape is
// one error naming its field, not an exception wherever a field is read.
//
// Every field is optional in the file: a worker that failed part-way leaves a partial report,
// and each worker writes only its own fields. An absent (or null) field keeps the default below.
// Fields copied into a verdict as they came (and read there only as JSON) stay JSON.
//
// Thread-safety: values; parsing touches no shared state.
#ifndef KFORGE_EVAL_WORKER_REPORT_H_
#define KFORGE_EVAL_WORKER_REPORT_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/status.h"
#include "kforge/verdict.h"

namespace kforge {

// "error": why the job stopped.
struct WorkerError {
  std::string stage;    // where: "load", "check set 0", "kernel_compile", "result", ...
  std::string message;  // for a person; from the candidate's process in part (untrusted text)
  // kforge-worker: the child's record of a kernel source built at run time (OpenCL) that did
  // not build: {"log", "source", "options", "code"}, untrusted, read leniently
  // (Evaluation::KernelBuildFailed). Null when absent.
  nlohmann::json build_failure;
};

// "checks[]": one check trial, run once or twice ('a' and 'b', with different output poison).
struct WorkerCheck {
  int set = 0;  // the job's input set
  // The candidate's own timer, per run (the Python worker: its child's "ms").
  double ms_a = 0, ms_b = 0;
  // "wrote past the end of output 'y'": the guard bytes after an output changed.
  std::optional<std::string> overrun;
  // Per input of the set, kforge-worker's hashes ("<hex>"), the Python worker's states
  // ("same"/"changed"); before the first run and after the last.
  std::optional<std::vector<std::string>> input_hashes_before, input_hashes_after;
};

// "timing.samples[]": one timed run kept back for a reference check (a uniform sample).
struct TimedSample {
  int run = 0;  // index of the timed run; required
  int set = 0;  // the input set it ran on; required
  // The fresh inputs' seed; null when the run reused a check set's inputs.
  std::optional<uint64_t> seed;
  std::optional<double> magnitude;  // Python worker: the set's magnitude
  // Output name -> its file in the job folder; required.
  std::map<std::string, std::string> files;
};

// The null runs timed before the candidate was loaded ("calibration", and the Python worker's
// "timing.calibration").
struct Calibration {
  int runs = 0;                // kforge-worker: "runs"
  int null_runs = 0;           // Python worker: "null_runs"
  double overhead_ms = 0;      // median of (supervisor's wall clock - device time) per null run
  double overhead_mad_ms = 0;  // kforge-worker: its median absolute deviation
  double collect_ms = 0;       // median time to hand over the outputs
  double copy_ms = 0;          // Python worker: median of the supervisor's copy out of the shared region
  double prepare_ms = 0, wall_ms = 0, device_ms = 0;  // Python worker: medians of the null runs
  // Python worker: each null run's host and device times and, queued behind a head start, how
  // long its launches took (the queued host-time gate's baseline, CheckPythonClocks).
  std::vector<double> null_host_ms, null_device_ms, null_enqueue_ms;
};

// "timing": the timed runs, one entry per run in each per-run array.
struct WorkerTiming {
  std::vector<double> device_ms;   // the candidate's process's device timer (untrusted)
  std::vector<double> host_ms;     // its host clock (untrusted)
  std::vector<double> wall_ms;     // the supervisor's clock around the call
  std::vector<double> collect_ms;  // the supervisor's clock around the hand-over of outputs
  std::vector<double> prepare_ms;  // Python worker: around the preparation (fresh inputs, flush)
  // Python worker: its copy of each run's outputs out of the shared region, after the child's
  // reply (not in collect_ms, which is the child's part of the hand-over; 0 for outputs sent
  // over the channel).
  std::vector<double> copy_ms;
  // Python worker: the wait for each run's output scans (digest, NaN/Inf and poison counts) that
  // the next run's prepare did not hide, and each run's whole step, start to start.
  std::vector<double> scan_ms, step_ms;
  // Python worker on CUDA: each timed run's host time from its first device event to its last
  // (untrusted), for the device's head start (fingerprint.device.queue_ms) it had to beat.
  std::vector<double> enqueue_ms;
  std::vector<int> sets_used;      // the input set of each run
  // The fresh inputs' seed of each run (the Python worker: null when not fresh).
  std::vector<std::optional<uint64_t>> seeds;
  std::vector<double> magnitudes;  // Python worker: the set's magnitude of each run
  bool fresh_inputs = false;       // runs drew fresh inputs (else reused the check sets')
  // The supervisor's findings about timed outputs; the first decides the verdict.
  std::vector<std::string> issues;
  std::vector<TimedSample> samples;
  int threads_before = 0, threads_after = 0;  // the candidate's process's threads around the runs
  std::optional<double> overhead_ms;  // calibration's overhead; absent when no null run finished
  double overhead_mad_ms = 0;         // kforge-worker: calibration's deviation
  double collect_overhead_ms = 0;     // kforge-worker: calibration's collect_ms
  double lock_wait_s = 0;             // Python worker: null and timed runs' waits for the device lock
  std::optional<Calibration> calibration;  // Python worker
  std::optional<std::string> note;         // Python worker: a remark for the verdict's warnings
  // Python worker: per timed set ("0", "1"), each input's state ("same"/"changed") before the
  // first timed run and after the last.
  std::optional<std::map<std::string, std::vector<std::string>>> input_hashes_before,
      input_hashes_after;
};

// "peaks": kforge-worker's peaks job (job.peaks).
struct WorkerPeaks {
  double bandwidth_gbs = 0, fp32_gflops = 0;
  nlohmann::json detail;  // how they were measured, kept in the peaks cache as it came
};

// "sets[].inputs[]" of a Python reference job: a tensor the module's get_inputs made (or one of
// its parameters).
struct ReferenceInput {
  std::string name, kind, dtype;    // name, dtype required; kind "input" or "parameter"
  std::vector<int64_t> dims;        // required
  std::string hash;                 // of its bytes (kforge_pychild.tensor_hash); required
  std::optional<std::string> file;  // its bytes in the job folder, when the job asked for them
};

// "sets[].outputs[]" of a Python reference job.
struct ReferenceOutput {
  std::string name, dtype, reference_dtype;  // required; reference_dtype is the file's ("float64")
  std::vector<int64_t> dims;                 // required
  std::string file;                          // the reference's bytes in the job folder; required
};

// "sets[]" of a Python reference job: one set as the module described it.
struct ReferenceSet {
  int set = 0;
  std::vector<ReferenceInput> inputs;  // empty for fresh (timed-run) sets
  std::vector<ReferenceOutput> outputs;
  double flops = 0;                 // counted by the child; 0 when it could not
  std::string reference_precision;  // "float64", else the problem's own
  // The module's constants, into the verdict's fingerprint.
  nlohmann::json constants = nlohmann::json::object();
  std::vector<std::string> init_inputs;  // repr() of get_init_inputs()
  nlohmann::json scalars;  // non-tensor arguments, [{"name", "value"}]: any JSON value
};

struct WorkerReport {
  bool done = false;  // the supervisor reached its end without an error
  std::optional<WorkerError> error;
  std::map<std::string, std::string> files;  // every output file it wrote -> its SHA-256
  // As they came, into the verdict: the device ("fingerprint"), where the job's time went
  // (kforge-worker's "phases_ms"), the precision state and fast-math options ("precision"), the
  // kernel record of the first check (untrusted, eval/kernels.h; null when none).
  nlohmann::json fingerprint = nlohmann::json::object();
  nlohmann::json phases_ms = nlohmann::json::object();
  nlohmann::json precision = nlohmann::json::object();
  nlohmann::json kernels;
  int64_t llc_bytes = 0;                                      // the device's last-level cache
  int threads_after_first_run = 0, threads_after_checks = 0;  // the candidate's process's threads
  std::vector<WorkerCheck> checks;
  std::optional<WorkerTiming> timing;
  // kforge-worker only.
  std::vector<std::vector<std::string>> input_hashes;  // per set, per input, as uploaded
  std::optional<Calibration> calibration;
  std::optional<WorkerPeaks> peaks;
  // Python worker only.
  std::vector<ReferenceSet> sets;  // mode "reference"
  // The candidate model's parameters and dtypes, into the verdict; null when none.
  nlohmann::json parameters;
  double first_call_seconds = 0;  // mode "baseline": the first call (torch.compile's compile)
  int threads_before_load = 0;    // mode "candidate"
  std::map<std::string, double> stage_seconds;  // the supervisor's clock per stage
  std::map<std::string, double> child_seconds;  // the child's own stopwatch (diagnostic only)
  bool cancelled = false;                       // a standby job that was never given its sets
};

// Reads a report. Never throws: a field of the wrong type, or a required field missing, is an
// InvalidArgument Status naming it ("timing.samples[1].seed: ...").
Result<WorkerReport> ParseWorkerReport(const nlohmann::json& report);

// The input set of each of `runs` timed runs: timing.sets_used, or empty when it has not one
// per run (the runs are then pooled).
std::vector<int> TimingSets(const WorkerTiming& timing, size_t runs);

// What the supervisor's clock allows a judged median to be, at least: its wall-clock median less
// the calibrated round trip (overhead_ms), less a tolerance for its own wake-up latency, which
// grows on a loaded machine: 5% of the device median and 3 deviations of the null runs
// (overhead_mad_ms). A forged timer gains at most that tolerance.
double SupervisorBound(double wall_median_ms, double overhead_ms, double device_median_ms, double overhead_mad_ms);
// The same rule in words (a Python verdict's fingerprint.timing.clock).
std::string SupervisorBoundRule();
// Calls queued behind a head start of `queue_ms` (docs/evaluation.md, "Fence"): the median over
// runs of the host time beyond the device time and beyond what the launches took past the head
// start (enqueue_ms - queue_ms). An honest call's is the synchronize's wake-up; one that keeps
// the device busy past its end event (a stream of its own) adds that work. 0 when the series'
// lengths differ or are empty.
double QueuedHostExcess(const std::vector<double>& host_ms, const std::vector<double>& device_ms,
                        const std::vector<double>& enqueue_ms, double queue_ms);

// The statistics of a worker's timing (kforge-worker or the Python worker): device samples, and
// a median never below SupervisorBound. The device timer runs inside the candidate's process,
// so only that bound is trusted.
TimingStats TimingFromWorker(const WorkerTiming& timing);

}  // namespace kforge

#endif  // KFORGE_EVAL_WORKER_REPORT_H_
