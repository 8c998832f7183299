// The evaluation pipeline. Each gate is one method; Run() reads as the list of stages.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "backend/registry.h"
#include "base/files.h"
#include "base/parallel.h"
#include "base/stats.h"
#include "base/subprocess.h"
#include "eval/compare.h"
#include "eval/compile_log.h"
#include "eval/compiler.h"
#include "eval/gates.h"
#include "eval/inputs.h"
#include "eval/kernels.h"
#include "eval/python_worker.h"
#include "eval/python_zygote.h"
#include "eval/roofline.h"
#include "eval/static_check.h"
#include "eval/trusted_state.h"
#include "eval/worker_client.h"
#include "kforge/eval.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// How kept baselines' times were computed from their runs (verdict.cc, base/stats.h): part of
// their key, so that a change of the statistic retimes them rather than comparing a new median
// with an old one. (What a run does, the cache flush included, is in the key as the worker's
// digest and the device's fingerprint.)
constexpr const char* kTimingStatistic =
    "mean of per-set medians of device times, at least the wall-clock median less overhead and tolerance, every worker";

// The device's head start before each timed and null run on CUDA, ms, for Python jobs and
// kforge-worker alike (QueueMs).
constexpr double kQueueMs = 0.2;

// Cached achievable peaks measured again within this many seconds are not measured again for a
// SOL above 100% (SpeedOfLight).
constexpr double kPeaksRemeasureAfterS = 3600;

// kQueueMs, or KFORGE_QUEUE_MS's value (0: none, to compare with and without it); a bad value is
// said once and ignored.
double QueueMs() {
  if (const char* env = std::getenv("KFORGE_QUEUE_MS"); env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && v >= 0 && v <= 10) return v;
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr, "kforge: KFORGE_QUEUE_MS=%s is not a number of milliseconds from 0 to 10; using %g\n", env, kQueueMs);
    });
  }
  return kQueueMs;
}

struct Trial {
  BoundProblem bound;
  uint64_t seed = 0;
  double magnitude = 1;
  bool hidden = false;
  std::vector<HostTensor> inputs;  // made on first use (Evaluation::TrialInputs)
  std::vector<std::vector<double>> reference;  // per output, float64
};

// Whether every reference value of every trial is finite, the outputs scanned on all cores (a
// KernelBench GEMM's seven float64 references are 56 M values).
bool AllFinite(const std::vector<Trial>& trials) {
  std::vector<const std::vector<double>*> refs;
  for (const Trial& t : trials)
    for (const std::vector<double>& r : t.reference) refs.push_back(&r);
  std::vector<char> finite(refs.size(), 1);
  ParallelFor(refs.size(), [&](size_t i) {
    bool all = true;
    for (double x : *refs[i]) all &= std::isfinite(x);
    finite[i] = all;
  });
  return std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
}

json LimitsToJson(const Limits& l) {
  return {{"wall_seconds", l.wall_seconds}, {"cpu_seconds", l.cpu_seconds},
          {"address_space_bytes", l.address_space_bytes}, {"file_size_bytes", l.file_size_bytes},
          {"output_bytes", l.output_bytes}, {"max_processes", l.max_processes},
          {"isolate_network", l.isolate_network}, {"drop_privileges", l.drop_privileges},
          {"folder_bytes", l.folder_bytes}};
}

std::vector<LaunchAttr> AttrsFor(const BoundProblem& b) {
  std::vector<LaunchAttr> attrs;
  for (const SizeParam& s : b.problem->sizes) {
    int64_t v = b.sizes.at(s.name);
    attrs.push_back({s.name, v, static_cast<double>(v)});
  }
  for (const Attribute& a : b.problem->attrs)
    attrs.push_back({a.name, static_cast<int64_t>(a.value), a.value});
  return attrs;
}

// A worker's input set for a bound problem. Sets of the problem's own inputs carry their
// generators (distribution and key), so the worker can draw them (DrawnFrom) and fresh values
// for timed runs.
InputSet SetFor(const BoundProblem& b, bool float64_inputs, double magnitude = 1) {
  InputSet s;
  s.magnitude = magnitude;
  s.attrs = AttrsFor(b);
  for (size_t k = 0; k < b.inputs.size(); ++k) {
    TensorShape t = b.inputs[k];
    if (float64_inputs && IsFloating(t.dtype)) t.dtype = DType::kFloat64;
    TensorFile f{t, "", std::nullopt};
    // Widened for a float64 reference: drawn in the input's own type, as the candidate gets it.
    if (k < b.problem->inputs.size() && b.problem->format != ProblemFormat::kPyTorch)
      f.gen = InputGenerator{b.problem->inputs[k].dist, InputKey(b, k),
                             t.dtype != b.inputs[k].dtype ? std::optional<DType>(b.inputs[k].dtype) : std::nullopt};
    s.inputs.push_back(f);
  }
  for (TensorShape t : b.outputs) {
    if (float64_inputs && IsFloating(t.dtype)) t.dtype = DType::kFloat64;
    s.outputs.push_back({t, "", std::nullopt});
  }
  return s;
}

// Set s drawn by kforge-worker itself from `seed` (the trial's), when every input has its
// generator (SetFor gives one to each of a kforge problem's inputs): the values GenerateInputs
// makes, with no input file written by the orchestrator or read by the worker.
bool DrawnFrom(uint64_t seed, InputSet* s) {
  for (const TensorFile& f : s->inputs)
    if (!f.gen) return false;
  for (TensorFile& f : s->inputs) f.draw_seed = seed;
  return true;
}

// SHA-256 of a file, once per path and process (the worker binary goes into trusted-state keys).
std::string DigestOnce(const fs::path& file) {
  static std::mutex mu;
  static std::map<std::string, std::string> digests;
  std::lock_guard<std::mutex> lock(mu);
  auto it = digests.find(file.string());
  if (it == digests.end()) it = digests.emplace(file.string(), FileDigest(file)).first;
  return it->second;
}

// The Python worker's scripts, which decide what its reference and baseline jobs compute.
json PythonWorkerDigests() {
  json d = json::object();
  for (const auto& [name, path] : PythonWorkerFiles()) d[name] = DigestOnce(path);
  return d;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The message of a run's error, else `otherwise`.
std::string ErrorMessage(const WorkerRun& run, const std::string& otherwise = "") {
  return run.report.error ? run.report.error->message : otherwise;
}

// The Python worker's timing.calibration as it wrote it ({} without one), for the verdict's
// fingerprint.
json PythonCalibrationJson(const std::optional<Calibration>& c) {
  if (!c) return json::object();
  return {{"null_runs", c->null_runs}, {"overhead_ms", c->overhead_ms}, {"wall_ms", c->wall_ms},
          {"device_ms", c->device_ms}, {"prepare_ms", c->prepare_ms}, {"collect_ms", c->collect_ms},
          {"copy_ms", c->copy_ms}};
}

// A run's error as the worker wrote it ({} without one), for the verdict's diagnostics.
json ErrorJson(const WorkerRun& run) {
  if (!run.report.error) return json::object();
  const WorkerError& e = *run.report.error;
  json j = {{"stage", e.stage}, {"message", e.message}};
  if (!e.build_failure.is_null()) j["build_failure"] = e.build_failure;
  return j;
}

class Evaluation {
 public:
  Evaluation(const Problem& p, fs::path candidate, const EvalOptions& o, ProcessRunner& r)
      : problem_(p), candidate_(std::move(candidate)), options_(o), runner_(r), trusted_(o.trusted_state) {}
  Result<Verdict> Run();

 private:
  // The stages Run() goes through, in order.
  Result<bool> Load();
  Status Reference();
  Status Conclude(bool passed);
  bool StaticGate();
  Result<bool> CompileGate();
  Status PrepareTrials();
  const std::vector<HostTensor>& TrialInputs(size_t t);
  // Trial t's set in `job`: drawn by the worker (DrawnFrom), else the orchestrator's inputs.
  void AddTrialSet(size_t t, Job* job, WorkerFiles* files);
  Status ComputeReference();
  // A reference job through the trusted store: the run kept under `key` if there is one, else
  // run() (and kept when read() accepts it). A kept run that read() refuses (a file changed or
  // missing) is dropped with a warning naming `what`, and run() computes it again. An empty key
  // neither reads nor keeps.
  Status KeptOrRun(const std::string& key, const json& fields, const std::string& what,
                   const std::function<Result<WorkerRun>()>& run, const std::function<Status(const WorkerRun&)>& read);
  Status ReferenceOutputs(std::vector<Trial>& trials, const std::string& what, const json& keep_fields = json(),
                          bool side_by_side = false);
  Status ReadReferences(const WorkerRun& run, std::vector<Trial>& trials, const std::string& what);
  json TrialFields(size_t count) const;
  std::optional<TrustedState::Baselines> KeptBaselines(const json& fields);
  void KeepBaselines(const json& fields, const std::map<std::string, TimingStats>& measured);
  TimingPlan PlanTiming(size_t sets) const;
  Result<std::vector<std::vector<std::vector<double>>>> RegeneratedReferences(const std::vector<TimedSample>& samples);
  bool CompareTimedSamples(const WorkerRun& run, const std::vector<TimedSample>& samples,
                           const std::vector<std::vector<std::vector<double>>>& refs, bool fresh);
  Result<bool> RunCandidate();
  Result<bool> JudgeCandidate();
  bool ProcessEnded(const WorkerRun& run);
  void KernelBuildFailed(const json& build);
  bool CheckTrials(const WorkerRun& run);
  Result<bool> CheckTiming(const WorkerRun& run);
  bool CheckPrecision(const WorkerRun& run);
  Status SpeedOfLight();
  void KernelAccountingGate();
  Status Baselines();
  Result<TimingStats> TimeBaseline(const fs::path& library, const std::string& backend,
                                   const std::string& entry, const fs::path& program);
  Limits WorkerLimits() const;
  std::string LockName(const std::string& backend) const;
  Status ChoosePrecision();
  // The one place a comparison's tolerance comes from: the problem's rule under the run's policy.
  Tolerance ToleranceFor(DType dtype) const { return problem_.ToleranceFor(dtype, policy_); }
  void RecordTolerances(const std::vector<TensorShape>& outputs);
  void ChooseArch();
  void Advisory();
  json RunAdvisoryJob(const std::vector<std::string>& wrapper, bool profiler, std::string* out,
                      const std::function<void(const fs::path&)>& read_job_folder = nullptr);
  // PyTorch problems and Python candidates (docs/pytorch-problems.md).
  Status StartPython();
  Status PreparePyTorch();
  Status ReadPyTorchReference(const WorkerRun& run, const std::vector<std::map<std::string, int64_t>>& sizes_of);
  Result<bool> RunPythonCandidate();
  Result<bool> CheckPythonTiming(const WorkerRun& run);
  void NoteHeadStart(const WorkerTiming& tj);
  bool CheckPythonClocks(const PythonTiming& t, const std::vector<double>& enqueue_ms);
  bool CheckSupervisorClock(const WorkerTiming& tj, const TimingStats& stats);
  void WarnIfWallBounded(const TimingStats& stats);
  Result<bool> CheckTimedSamples(const WorkerRun& run, const std::vector<TimedSample>& samples, bool fresh);
  Result<std::vector<std::vector<std::vector<double>>>> PythonTimedReferences(const std::vector<TimedSample>& samples);
  bool StandbyReferenceWanted() const;
  void StartStandbyReference();
  Status PyTorchBaselines();
  json PythonJob(const std::string& mode) const;
  bool PythonOutputsMayRepeat() const;
  Limits PythonLimits() const;
  uint64_t PythonCandidateFolderBytes(const PythonJobFiles& files) const;
  std::string PythonLockFile() const;
  json PythonTimingPlan(size_t sets) const;

 public:
  Result<Verdict> RunBaselinesOnly();
  // The backstop of Evaluate and KernelTimer for JSON of the wrong shape read outside a
  // worker's report (see Evaluate): a runtime error naming it, never an exception.
  Verdict Malformed(const std::string& what) {
    ReportMalformed("a JSON record the judge read is malformed (" + what + ")");
    return verdict_;
  }
  // KernelTimer (timing only, no check trials): prepare once, then time again and again.
  Status PrepareTimer(const std::string& baseline);
  Result<Verdict> TimeOnce();

 private:
  Result<TimingStats> TimePyTorchBaseline(const std::string& name);
  void Finish(VerdictStatus s, const std::string& message, const std::string& gate = "") {
    verdict_.status = s;
    verdict_.message = message;
    verdict_.gate = gate;
  }
  // A runtime_error (gate report) for a worker's report that is not what its writer writes.
  void ReportMalformed(const std::string& why) {
    Finish(VerdictStatus::kRuntimeError, why + "; nothing was judged from it", "report");
    verdict_.timing.reset();
  }
  void Stage(const std::string& name, std::chrono::steady_clock::time_point t0) {
    verdict_.stages[name] = Seconds(t0);
  }

  const Problem& problem_;
  fs::path candidate_;
  const EvalOptions& options_;
  ProcessRunner& runner_;
  TrustedState trusted_;  // references and baselines computed once per problem
  const BackendSpec* backend_ = nullptr;
  PrecisionPolicy policy_ = PrecisionPolicy::kStrict;  // set by ChoosePrecision
  std::string source_;
  fs::path library_, program_source_, reference_library_;
  std::string arch_;  // per-device-arch backends (cuda): the device's architecture, "sm_90"
  std::vector<Trial> trials_;
  Verdict verdict_;
  bool degenerate_ = false;        // the reference's outputs are (nearly) constant
  bool reference_finite_ = true;   // no NaN/Inf in any check trial's reference
  bool pytorch_ = false;           // the problem is a PyTorch module
  bool python_candidate_ = false;  // the candidate is a Python module (Python worker)
  json py_probe_;
  std::string torch_device_;       // "cpu" or "cuda:N" for Python jobs
  Problem described_;              // PyTorch problems: the problem with the tensors the reference reported
  json py_sets_ = json::array();   // PyTorch problems: per trial seed, magnitude, overrides, hashes, outputs
  // The timed-reference job of a Python candidate, started with the candidate's (StandbyReference).
  std::unique_ptr<StandbyPythonJob> standby_reference_;
  // KernelTimer: no check trials; the verdict as preparation left it; a PyTorch baseline to time.
  bool timing_only_ = false;
  bool timer_ready_ = false;
  Verdict prepared_;
  std::string timer_baseline_;
  json kernel_record_;  // the worker's "kernels" record of one checking call (GPU backends)
};

bool Evaluation::StaticGate() {
  if (!options_.static_check) {
    verdict_.warnings.push_back("the static pattern check was switched off (--no-static-check)");
    return true;
  }
  std::vector<std::string> findings =
      python_candidate_ ? StaticCheck(source_, PythonRules(), true) : StaticCheck(source_, backend_->deny);
  if (findings.empty()) return true;
  std::string all;
  for (const std::string& f : findings) all += (all.empty() ? "" : "; ") + f;
  Finish(VerdictStatus::kSuspicious, "static check: " + all, "static");
  return false;
}

Result<bool> Evaluation::CompileGate() {
  auto t0 = std::chrono::steady_clock::now();
  if (!pytorch_) {
    KF_ASSIGN_OR_RETURN(CompileOutput ref, Compile(runner_, *FindBackend("cpp"), problem_.reference, CompileKind::kReference));
    if (!ref.ok) return Status::InvalidArgument("the reference of problem '" + problem_.name + "' (" + problem_.reference.string() + ") does not compile:\n" + ref.log);
    reference_library_ = ref.library;
  }
  if (python_candidate_) return true;  // Python candidates load (and build inline code) in the worker
  ChooseArch();
  KF_ASSIGN_OR_RETURN(CompileOutput out, Compile(runner_, *backend_, candidate_, CompileKind::kCandidate, arch_));
  Stage("compile", t0);
  verdict_.compiler_output = out.log;
  verdict_.resources = out.resources;
  if (!out.ok) {
    Finish(VerdictStatus::kCompileError, "the candidate does not compile");
    return false;
  }
  library_ = out.library;
  return true;
}

Status Evaluation::PrepareTrials() {
  KF_ASSIGN_OR_RETURN(BoundProblem main, Bind(problem_, options_.sizes, options_.quick));
  verdict_.sizes = main.sizes;
  int seeds = std::max(options_.seeds, 1);
  for (int s = 0; s < seeds; ++s) {
    double mag = problem_.magnitudes[s % problem_.magnitudes.size()];
    trials_.push_back({main, static_cast<uint64_t>(s), mag, false, {}, {}});
  }
  std::map<std::string, int64_t> variant = VariantSizes(problem_, main.sizes);
  if (options_.hidden_sizes && variant != main.sizes) {
    KF_ASSIGN_OR_RETURN(BoundProblem hidden, Bind(problem_, variant, false));
    for (int s = 0; s < 2; ++s) {
      double mag = problem_.magnitudes[s % problem_.magnitudes.size()];
      uint64_t seed = 1000 + s;
      trials_.push_back({hidden, seed, mag, true, {}, {}});
    }
  }
  return Status::Ok();
}

// A kforge problem's trial inputs as the orchestrator draws them, made when first asked for: a
// job of kforge-worker's draws its own from the trial's seed (AddTrialSet), so a warm verdict
// of a native candidate never makes them here.
const std::vector<HostTensor>& Evaluation::TrialInputs(size_t t) {
  Trial& trial = trials_[t];
  if (trial.inputs.empty() && !pytorch_) trial.inputs = GenerateInputs(trial.bound, trial.seed, trial.magnitude);
  return trial.inputs;
}

void Evaluation::AddTrialSet(size_t t, Job* job, WorkerFiles* files) {
  job->sets.push_back(SetFor(trials_[t].bound, false, trials_[t].magnitude));
  if (DrawnFrom(trials_[t].seed, &job->sets.back())) {
    files->inputs.emplace_back();
  } else {
    files->inputs.push_back(TrialInputs(t));
  }
}

// Float64 (or the problem's native) reference outputs for `trials`, in the worker. With
// `keep_fields` (what the outputs depend on besides the trials), the job's folder is looked up
// in the trusted store first and kept there after it ran.
Status Evaluation::ReferenceOutputs(std::vector<Trial>& trials, const std::string& what, const json& keep_fields,
                                    bool side_by_side) {
  json fields;
  std::string key;
  if (!keep_fields.is_null() && trusted_.enabled() && !problem_.path.empty()) {
    fields = keep_fields;
    fields["trials"] = json::array();
    for (const Trial& t : trials)
      fields["trials"].push_back({{"sizes", t.bound.sizes}, {"seed", t.seed}, {"magnitude", t.magnitude}, {"hidden", t.hidden}});
    key = TrustedStateKey(fields);
  }
  if (!keep_fields.is_null() && key.empty()) verdict_.fingerprint["trusted_state"]["references"] = "computed (not kept)";
  // Trials [begin, end) in one reference job.
  auto job_of = [&](size_t begin, size_t end) -> Result<WorkerRun> {
    Job job;
    job.backend = "cpp";
    job.entry = problem_.reference_float64 ? "kf_reference_f64" : "kf_reference_native";
    job.check_twice = false;
    WorkerFiles files;
    files.library = reference_library_;
    // The worker draws each input from the trial's seed, as a candidate's job and a timed run
    // do (the draws are widened to float64 there for a float64 reference): no input file.
    for (size_t t = begin; t < end; ++t) {
      job.sets.push_back(SetFor(trials[t].bound, problem_.reference_float64, trials[t].magnitude));
      job.checks.push_back(static_cast<int>(t - begin));
      if (!DrawnFrom(trials[t].seed, &job.sets.back()))
        return Status::Internal("an input of problem '" + problem_.name + "' has no generator to draw its reference's from");
      files.inputs.emplace_back();
    }
    return RunWorker(runner_, job, files, WorkerLimits());
  };
  if (!side_by_side || trials.size() < 2)
    return KeptOrRun(key, fields, "the check trials' references", [&] { return job_of(0, trials.size()); },
                     [&](const WorkerRun& r) { return ReadReferences(r, trials, what); });
  // The sampled timed runs' (never kept: their seeds are new every time) split over up to one
  // reference job per core, run side by side (the reference is trusted C++ on the host; no
  // device, no lock). Three of gelu's took one job 0.4-0.6 s on the 2-core VM.
  const size_t jobs = std::min<size_t>(trials.size(), std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8));
  std::vector<std::vector<Trial>> parts(jobs);
  std::vector<size_t> first(jobs + 1, 0);
  for (size_t j = 0; j < jobs; ++j) first[j + 1] = first[j] + trials.size() / jobs + (j < trials.size() % jobs ? 1 : 0);
  std::vector<Status> statuses(jobs, Status::Ok());
  ParallelFor(jobs, [&](size_t j) {
    parts[j].assign(trials.begin() + static_cast<std::ptrdiff_t>(first[j]), trials.begin() + static_cast<std::ptrdiff_t>(first[j + 1]));
    Result<WorkerRun> r = job_of(first[j], first[j + 1]);
    if (!r.ok()) { statuses[j] = r.status(); return; }
    statuses[j] = ReadReferences(*r, parts[j], what);
    Cleanup(*r);
  }, jobs);
  for (size_t j = 0; j < jobs; ++j) {
    KF_RETURN_IF_ERROR(statuses[j]);
    for (size_t t = first[j]; t < first[j + 1]; ++t) trials[t].reference = std::move(parts[j][t - first[j]].reference);
  }
  return Status::Ok();
}

Status Evaluation::KeptOrRun(const std::string& key, const json& fields, const std::string& what,
                             const std::function<Result<WorkerRun>()>& run,
                             const std::function<Status(const WorkerRun&)>& read) {
  for (int attempt = 0;; ++attempt) {
    std::optional<WorkerRun> kept = key.empty() || attempt > 0 ? std::nullopt : trusted_.FindRun(key);
    if (!key.empty()) verdict_.fingerprint["trusted_state"]["references"] = kept ? "kept" : "computed";
    WorkerRun r;
    if (kept) {
      r = std::move(*kept);
    } else {
      KF_ASSIGN_OR_RETURN(r, run());
    }
    Status status = read(r);
    if (status.ok() && !kept && !key.empty()) {
      Status k = trusted_.KeepRun(key, fields, r);
      if (!k.ok()) verdict_.warnings.push_back(what + " were not kept: " + k.message());
    }
    Cleanup(r);
    if (status.ok() || !kept) return status;
    trusted_.Forget(key);
    verdict_.warnings.push_back(what + ", as kept, did not verify (" + status.message() + "); computed again");
  }
}

// The references of `trials` from a reference job's report.
Status Evaluation::ReadReferences(const WorkerRun& run, std::vector<Trial>& trials, const std::string& what) {
  Status status = Status::Ok();
  if (!run.finished() || run.report.error) {
    status = Status::Internal("the reference of problem '" + problem_.name + "' failed on " + what + " (" +
                              run.process.Describe() + ", stage " + run.last_stage + "): " + ErrorMessage(run) + "\n" +
                              TailLines(run.process.err, 10, 2000));
  }
  if (!status.ok()) return status;
  // A trial per thread: each output read back, its SHA-256 checked and widened.
  std::vector<Status> read(trials.size(), Status::Ok());
  ParallelFor(trials.size(), [&](size_t t) {
    trials[t].reference.clear();
    for (const TensorShape& out : trials[t].bound.outputs) {
      const std::string file = CheckOutputFile(static_cast<int>(t), 'a', out.name);
      TensorShape s = out;
      if (problem_.reference_float64 && IsFloating(s.dtype)) s.dtype = DType::kFloat64;
      std::vector<double> v(static_cast<size_t>(s.numel()));
      if (s.dtype == DType::kFloat64) {  // read where it is kept: no copy to widen
        read[t] = run.ReadOutputInto(file, v.data(), v.size() * sizeof(double));
        if (!read[t].ok()) return;
      } else {
        Result<std::shared_ptr<const std::string>> bytes = run.ReadOutput(file, static_cast<size_t>(s.bytes()));
        if (!bytes.ok()) { read[t] = bytes.status(); return; }
        ToDouble(s.dtype, (*bytes)->data(), v.size(), v.data());
      }
      trials[t].reference.push_back(std::move(v));
    }
  });
  for (const Status& s : read)
    if (!s.ok()) return s;
  return Status::Ok();
}

Status Evaluation::ComputeReference() {
  auto t0 = std::chrono::steady_clock::now();
  json fields = {{"what", "check-trial references"}, {"problem", FileDigest(problem_.path)},
                 {"reference_library", FileDigest(reference_library_)}, {"float64", problem_.reference_float64},
                 {"worker", DigestOnce(WorkerPath())}};
  Status status = ReferenceOutputs(trials_, "the check trials", fields);
  Stage("reference", t0);
  if (!status.ok()) return status;
  reference_finite_ = AllFinite(trials_);
  std::string why;
  const TensorShape& first = trials_[0].bound.outputs[0];
  if (IsDegenerate(trials_[0].reference[0], ToleranceFor(first.dtype), &why)) {
    degenerate_ = true;
    verdict_.warnings.push_back("degenerate problem: " + why);
  }
  return Status::Ok();
}

// The timing plan every kforge-worker job gets: fresh inputs per timed run (for the problem's
// own inputs), a sample of timed outputs back for a reference check.
TimingPlan Evaluation::PlanTiming(size_t sets) const {
  TimingPlan plan;
  plan.sets = sets > 1 ? std::vector<int>{0, 1} : std::vector<int>{0};
  plan.budget_ms = options_.budget_ms;
  plan.cv_target = options_.cv_target;
  plan.precision_target = options_.precision_target;
  plan.min_runs = options_.min_runs;
  plan.max_runs = options_.max_runs;
  plan.timed_checks = options_.timed_checks;
  plan.reference_finite = reference_finite_;
  plan.degenerate = degenerate_;
  // KernelBench problems' inputs come from the PyTorch module, which kforge-worker cannot draw
  // from: native candidates there are timed on the check sets, and every sampled timed output
  // is compared with that set's reference.
  plan.fresh_inputs = !pytorch_;
  plan.queue_ms = QueueMs();  // devices without a queue (the CPU) ignore it
  return plan;
}

Limits Evaluation::WorkerLimits() const {
  Limits l;
  l.wall_seconds = options_.timeout_seconds;
  l.cpu_seconds = options_.timeout_seconds * std::max(2u, std::thread::hardware_concurrency());
  l.address_space_bytes = backend_ && backend_->unlimited_address_space ? 0 : options_.memory_bytes;
  l.output_bytes = 64 << 10;
  return l;
}

// The run's policy: --precision, else the problem's; recorded in the verdict before any gate.
Status Evaluation::ChoosePrecision() {
  KF_ASSIGN_OR_RETURN(policy_, problem_.ChoosePrecision(options_.precision));
  verdict_.precision["policy"] = PrecisionPolicyName(policy_);
  return Status::Ok();
}

// precision.tolerance: the bounds each output is held to, once the outputs' dtypes are known.
void Evaluation::RecordTolerances(const std::vector<TensorShape>& outputs) {
  json all = json::object();
  for (const TensorShape& out : outputs) {
    Tolerance t = ToleranceFor(out.dtype);
    all[out.name] = {{"atol", t.atol}, {"rtol", t.rtol}, {"rms", t.rms}, {"atol_rms", t.atol_rms},
                     {"rule", DescribeTolerance(t)}};
  }
  verdict_.precision["tolerance"] = all;
}

// Builds for the evaluating device's own architecture (BuildArch; a guess is a warning).
void Evaluation::ChooseArch() {
  if (!backend_->per_device_arch) return;
  std::string guessed;
  arch_ = BuildArch(runner_, *backend_, options_.device, &guessed);
  if (!guessed.empty()) verdict_.warnings.push_back(guessed);
  verdict_.fingerprint["arch"] = arch_;
}

// One check run of trial 0 under a wrapper (profiler, sanitizer); its stdout in *out.
// `profiler`: ncu, which stays root (GPU performance counters are usually root-only) and may
// call perf_event_open through the seccomp filter.
// `read_job_folder`, when given, sees the job folder before it is removed (rocprof's files).
json Evaluation::RunAdvisoryJob(const std::vector<std::string>& wrapper, bool profiler, std::string* out,
                                const std::function<void(const fs::path&)>& read_job_folder) {
  Job job;
  job.backend = backend_->name;
  job.device = options_.device;
  job.entry = backend_->entry;
  job.check_twice = false;
  job.record_kernels = false;  // the wrapper traces the process itself (CUPTI allows one subscriber)
  WorkerFiles files;
  AddTrialSet(0, &job, &files);  // trial 0's inputs, as the checks had them
  job.checks.push_back(0);
  files.library = library_;
  files.program_source = program_source_;
  Limits limits = WorkerLimits();
  limits.wall_seconds = std::max(300.0, 4 * options_.timeout_seconds);
  limits.cpu_seconds = 0;
  limits.output_bytes = 4 << 20;
  limits.output_kill_bytes = 256 << 20;
  limits.max_processes = 0;
  limits.drop_privileges = !profiler;
  limits.allow_perf_events = profiler;
  limits.folder_bytes = JobFolderLimit(job, files);
  Result<WorkerRun> run = [&] {
    DeviceLock lock(LockName(backend_->name));
    return RunWorker(runner_, job, files, limits, wrapper);
  }();
  if (!run.ok()) return {{"error", run.status().message()}};
  *out = run->process.out + "\n" + run->process.err;
  json j = {{"process", run->process.Describe()}};
  if (run->report.error) j["worker_error"] = ErrorJson(*run);
  if (read_job_folder) read_job_folder(run->dir);
  Cleanup(*run);
  return j;
}

// --profile and --sanitize: reports beside the verdict, never a change of status.
void Evaluation::Advisory() {
  if (library_.empty() || trials_.empty() || (!options_.profile && !options_.sanitize)) return;
  auto t0 = std::chrono::steady_clock::now();
  const std::string backend = backend_->name;
  if (options_.profile) {
    const AdvisoryTool& p = backend_->profiler;
    Result<std::vector<std::string>> wrapper =
        p.wrapper ? p.wrapper(runner_, "") : Result<std::vector<std::string>>(Status::Unavailable("the " + backend + " backend has no profiler"));
    if (!wrapper.ok()) {
      verdict_.profile = {{"error", wrapper.status().message()}};
    } else {
      std::string out;
      json profile;
      json run = RunAdvisoryJob(*wrapper, true, &out, [&](const fs::path& dir) { profile = p.read("", out, dir.string()); });
      verdict_.profile = profile.is_null() ? json{{"error", "the profiled job did not run"}} : profile;
      verdict_.profile["run"] = run;
      if (verdict_.profile.contains("error")) verdict_.profile["output_tail"] = TailLines(out, 20, 4000);
    }
  }
  if (options_.sanitize) {
    const AdvisoryTool& s = backend_->sanitizer;
    json all = json::array();
    for (std::string tool : {"memcheck", "racecheck"}) {
      if (tool == "racecheck" && !options_.racecheck) continue;
      Result<std::vector<std::string>> wrapper =
          s.wrapper ? s.wrapper(runner_, tool) : Result<std::vector<std::string>>(Status::Unavailable("the " + backend + " backend has no sanitizer"));
      if (!wrapper.ok()) { all.push_back({{"tool", tool}, {"error", wrapper.status().message()}}); continue; }
      std::string out;
      json summary;
      json run = RunAdvisoryJob(*wrapper, false, &out, [&](const fs::path& dir) { summary = s.read(tool, out, dir.string()); });
      if (summary.is_null()) summary = {{"tool", tool}, {"error", "the sanitized job did not run"}};
      summary["run"] = run;
      all.push_back(summary);
    }
    verdict_.sanitizer = {{"runs", all}};
  }
  Stage("advisory", t0);
}

std::string Evaluation::LockName(const std::string& backend) const {
  const BackendSpec* spec = FindBackend(backend);
  return spec ? DeviceLockName(*spec, options_.device) : backend + "-" + std::to_string(options_.device);
}

bool Evaluation::ProcessEnded(const WorkerRun& run) {
  const ProcessResult& p = run.process;
  std::string where = " during " + run.last_stage;
  if (p.end == ProcessResult::End::kTimedOut) {
    Finish(VerdictStatus::kTimeout, "the candidate " + p.Describe() + where);
    return false;
  }
  if (p.end == ProcessResult::End::kOutputFlood) {
    Finish(VerdictStatus::kRuntimeError, "the candidate flooded its output: " + p.Describe() + where);
    return false;
  }
  if (p.end == ProcessResult::End::kFolderFlood) {
    Finish(VerdictStatus::kRuntimeError, "the candidate filled its job folder: " + p.Describe() + where);
    return false;
  }
  if (run.malformed) {
    ReportMalformed(ErrorMessage(run));
    return false;
  }
  if (const std::optional<WorkerError>& e = run.report.error) {
    if (e->build_failure.is_null()) Finish(VerdictStatus::kRuntimeError, e->stage + ": " + e->message);
    else KernelBuildFailed(e->build_failure);
    return false;
  }
  if (!p.Succeeded() || !run.finished()) {
    Finish(VerdictStatus::kRuntimeError, "the worker " + p.Describe() + where + "\n" + TailLines(p.err, 8, 2000));
    return false;
  }
  return true;
}

// A kernel source the candidate built while it ran (OpenCL's clBuildProgram) did not build: a
// compile_error like a toolchain's, its log at the candidate's own lines and trimmed the same
// way (eval/compile_log.h). The record comes from the candidate's process: untrusted text.
void Evaluation::KernelBuildFailed(const json& build) {
  auto text = [&](const char* key) {
    return build.is_object() && build.contains(key) && build[key].is_string() ? build[key].get<std::string>() : std::string();
  };
  const std::string source = text("source");
  std::vector<CandidateFile> files;
  if (Result<std::string> sibling = program_source_.empty() ? Result<std::string>(std::string()) : ReadFile(program_source_);
      sibling.ok() && !sibling->empty())
    files.push_back({program_source_.filename().string(), *sibling});
  files.push_back({candidate_.filename().string(), source_});
  const std::string log = MapKernelBuildLog(text("log"), source, LocateKernelSource(source, files));
  const bool coded = build.is_object() && build.contains("code") && build["code"].is_number_integer();
  const std::string code = coded ? std::to_string(build["code"].get<int64_t>()) : "?";
  verdict_.compiler_output = TrimCompilerLog(std::string(backend_->name) + " kernel build failed (driver code " + code +
                                             ", options \"" + text("options") + "\"):\n" + log);
  Finish(VerdictStatus::kCompileError, "the candidate's kernel source does not build (at run time, on the device)");
}

bool Evaluation::CheckTrials(const WorkerRun& run) {
  if (timing_only_) return true;  // a KernelTimer's jobs run no check trials
  // Threads may appear on the first call (an OpenMP pool); any growth after that is work
  // that outlives the call.
  int first = run.report.threads_after_first_run, after = run.report.threads_after_checks;
  if (after > first) {
    Finish(VerdictStatus::kSuspicious, "threads grew from " + std::to_string(first) + " to " + std::to_string(after) +
                                           " over the check runs: the candidate leaves threads behind", "threads");
    return false;
  }
  const std::vector<WorkerCheck>& checks = run.report.checks;
  if (checks.size() < trials_.size()) {
    ReportMalformed("the worker's report is malformed: it holds " + std::to_string(checks.size()) + " checks for " +
                    std::to_string(trials_.size()) + " trials");
    return false;
  }
  // Every output is read back (its SHA-256 checked) and compared on all cores at once, one
  // output at a time per thread: the memory is a few outputs, not the job's.
  struct Compared {
    bool read = false, same = false;
    std::string unread;  // why an output could not be read back
    Comparison a, b;
  };
  std::vector<std::pair<size_t, size_t>> outputs;  // (trial, output)
  for (size_t t = 0; t < trials_.size(); ++t)
    for (size_t o = 0; o < trials_[t].bound.outputs.size(); ++o) outputs.emplace_back(t, o);
  std::vector<Compared> compared(outputs.size());
  ParallelFor(outputs.size(), [&](size_t i) {
    const auto [t, o] = outputs[i];
    const TensorShape& shape = trials_[t].bound.outputs[o];
    const Tolerance tol = ToleranceFor(shape.dtype);
    const size_t bytes = static_cast<size_t>(shape.bytes());
    Result<std::shared_ptr<const std::string>> a = run.ReadOutput(CheckOutputFile(static_cast<int>(t), 'a', shape.name), bytes);
    Result<std::shared_ptr<const std::string>> b = run.ReadOutput(CheckOutputFile(static_cast<int>(t), 'b', shape.name), bytes);
    Compared& c = compared[i];
    c.read = a.ok() && b.ok();
    if (!c.read) {
      c.unread = (a.ok() ? b.status() : a.status()).message();
      return;
    }
    c.a = CompareOutput(shape, **a, trials_[t].reference[o], tol);
    if (problem_.nondeterministic) c.b = CompareOutput(shape, **b, trials_[t].reference[o], tol);
    c.same = **a == **b;
  });
  for (size_t t = 0, i = 0; t < trials_.size(); ++t) {
    const Trial& trial = trials_[t];
    const WorkerCheck& check = checks[t];
    json tj = {{"seed", trial.seed}, {"magnitude", trial.magnitude}, {"hidden_size", trial.hidden},
               {"sizes", trial.bound.sizes}, {"outputs", json::object()}};
    bool pass = true;
    std::string why;
    if (check.overrun) {
      pass = false;
      why = "the candidate " + *check.overrun;
    } else if (check.input_hashes_after != check.input_hashes_before) {
      pass = false;
      why = "the candidate modified its inputs (checksums differ after the run)";
    }
    for (size_t o = 0; o < trial.bound.outputs.size(); ++o, ++i) {
      const TensorShape& shape = trial.bound.outputs[o];
      const Compared& cmp = compared[i];
      if (!cmp.read) {
        if (pass) why = "output '" + shape.name + "' could not be read back from the worker: " + cmp.unread;
        pass = false;
        continue;
      }
      const Comparison& c = cmp.a;
      json cj = ComparisonToJson(c);
      if (!c.pass && pass) { pass = false; why = "output '" + shape.name + "': " + c.reason; }
      if (problem_.nondeterministic) {
        const Comparison& cb = cmp.b;
        if (!cb.pass && pass) { pass = false; why = "output '" + shape.name + "' (second run): " + cb.reason; }
      } else if (!cmp.same) {
        cj["deterministic"] = false;
        if (pass) { pass = false; why = "output '" + shape.name + "' differs between two runs with different poison (nondeterministic, or reads unwritten memory)"; }
      }
      tj["outputs"][shape.name] = cj;
    }
    tj["pass"] = pass;
    verdict_.trials.push_back(tj);
    if (!pass) {
      Finish(VerdictStatus::kWrongOutput, "trial " + std::to_string(t) + " (seed " + std::to_string(trial.seed) +
                                              (trial.hidden ? ", hidden size" : "") + "): " + why);
      return false;
    }
  }
  return true;
}

// References for sampled timed runs of a kforge problem, from either worker: each run's inputs
// regenerated from its seed (GenerateInputs, the generator both workers draw with; the set's
// sizes and magnitude are the orchestrator's own) and run through the problem's C++ reference.
Result<std::vector<std::vector<std::vector<double>>>> Evaluation::RegeneratedReferences(const std::vector<TimedSample>& samples) {
  std::vector<Trial> timed;
  for (const TimedSample& s : samples) {
    if (s.set < 0 || s.set >= static_cast<int>(trials_.size()))
      return Status::Internal("the worker reported a timed run of an unknown set (" + std::to_string(s.set) + ")");
    // The set's sizes and magnitude, not its inputs or reference (tens of MB each to copy): the
    // inputs are drawn by the reference job itself from the seed, nothing to write and read.
    const Trial& set = trials_[s.set];
    Trial t;
    t.bound = set.bound;
    t.magnitude = set.magnitude;
    t.hidden = set.hidden;
    t.seed = s.seed.value_or(0);  // CheckTimedSamples: every sample of fresh inputs has one
    timed.push_back(std::move(t));
  }
  auto t0 = std::chrono::steady_clock::now();
  KF_RETURN_IF_ERROR(ReferenceOutputs(timed, "the sampled timed runs", nullptr, /*side_by_side=*/true));
  Stage("timed_reference", t0);
  std::vector<std::vector<std::vector<double>>> refs;
  for (Trial& t : timed) refs.push_back(std::move(t.reference));
  return refs;
}

// Each sampled timed run's outputs against refs[k], the reference for that run's inputs: the
// first mismatch is wrong_output (gate timed_output) naming the run. Native and Python jobs.
bool Evaluation::CompareTimedSamples(const WorkerRun& run, const std::vector<TimedSample>& samples,
                                     const std::vector<std::vector<std::vector<double>>>& refs, bool fresh) {
  for (const TimedSample& s : samples) {
    if (s.set < 0 || static_cast<size_t>(s.set) >= trials_.size() || refs.size() < samples.size()) {
      Finish(VerdictStatus::kRuntimeError, "the worker reported a timed run of an unknown set");
      return false;
    }
  }
  // Every sampled output read back (its SHA-256 checked) and compared on all cores at once, as
  // the check trials' are; the first mismatch in the runs' order decides.
  std::vector<std::pair<size_t, size_t>> outputs;  // (sample, output)
  for (size_t k = 0; k < samples.size(); ++k)
    for (size_t o = 0; o < trials_[static_cast<size_t>(samples[k].set)].bound.outputs.size(); ++o) outputs.emplace_back(k, o);
  std::vector<Comparison> compared(outputs.size());
  ParallelFor(outputs.size(), [&](size_t i) {
    const auto [k, o] = outputs[i];
    const TimedSample& s = samples[k];
    const TensorShape& shape = trials_[static_cast<size_t>(s.set)].bound.outputs[o];
    auto file = s.files.find(shape.name);
    Result<std::shared_ptr<const std::string>> bytes =
        run.ReadOutput(file == s.files.end() ? std::string() : file->second, static_cast<size_t>(shape.bytes()));
    Comparison& c = compared[i];
    if (bytes.ok() && o < refs[k].size()) {
      c = CompareOutput(shape, **bytes, refs[k][o], ToleranceFor(shape.dtype));
    } else {
      c.pass = false;
      c.reason = bytes.ok() ? "missing from the worker" : bytes.status().message();
    }
  });
  json checked = json::array();
  for (size_t k = 0, i = 0; k < samples.size(); ++k) {
    const TimedSample& s = samples[k];
    const uint64_t seed = fresh ? s.seed.value_or(0) : 0;
    const std::string label = "timed run " + std::to_string(s.run) +
                              (fresh ? " (fresh inputs, seed " + std::to_string(seed) + ")" : " (inputs of trial " + std::to_string(s.set) + ")");
    for (const TensorShape& shape : trials_[static_cast<size_t>(s.set)].bound.outputs) {
      const Comparison& c = compared[i++];
      if (!c.pass) {
        verdict_.trials.push_back({{"timed_run", s.run}, {"seed", seed}, {"outputs", {{shape.name, ComparisonToJson(c)}}}, {"pass", false}});
        Finish(VerdictStatus::kWrongOutput, label + ": output '" + shape.name + "': " + c.reason, "timed_output");
        return false;
      }
    }
    checked.push_back(s.run);
  }
  verdict_.fingerprint["timed_runs_checked"] = checked;
  return true;
}

Result<bool> Evaluation::CheckTiming(const WorkerRun& run) {
  if (!run.report.timing) {
    ReportMalformed("the worker's report is malformed: a finished job with a timing plan has no timing");
    return false;
  }
  const WorkerTiming& tj = *run.report.timing;
  TimingStats stats = TimingFromWorker(tj);
  verdict_.timing = stats;
  NoteHeadStart(tj);
  if (!tj.issues.empty()) {
    Finish(VerdictStatus::kWrongOutput, tj.issues[0], "timed_output");
    return false;
  }
  KF_ASSIGN_OR_RETURN(bool samples_ok, CheckTimedSamples(run, tj.samples, tj.fresh_inputs));
  if (!samples_ok) return false;
  if (tj.input_hashes_after && tj.input_hashes_after != tj.input_hashes_before) {
    Finish(VerdictStatus::kWrongOutput, "the candidate modified its inputs during the timed runs");
    return false;
  }
  if (tj.threads_after > tj.threads_before) {
    Finish(VerdictStatus::kSuspicious, "threads grew from " + std::to_string(tj.threads_before) + " to " +
                                           std::to_string(tj.threads_after) + " during the timed runs (background work)", "threads");
    return false;
  }
  double gap = backend_->host_gap_suspicious_ms;
  double device = stats.device_median_ms > 0 ? stats.device_median_ms : stats.median_ms;
  if (gap > 0 && stats.host_median_ms > 1.5 * device + gap) {
    Finish(VerdictStatus::kSuspicious, "host time (median " + std::to_string(stats.host_median_ms) + " ms) is far above device time (" +
                                           std::to_string(device) + " ms): work escapes the device timer (a side stream or host work)", "host_time");
    return false;
  }
  if (stats.host_median_ms > 3 * device + 1.0)
    verdict_.warnings.push_back("host time is far above device time: work may escape the device timer");
  if (!CheckSupervisorClock(tj, stats)) return false;
  // Work moved out of the timed call into the hand-over of the outputs (a reply sent before
  // the work is done): collecting them takes far longer than it did before the candidate. The
  // lower quartile decides, not the median: a loaded machine delays the hand-over of many runs
  // (on the 2-core CI VM at load 10 the median of an honest kernel's went from 0.09 to 4.9 ms),
  // while a candidate gains a faster median only by moving work on more than half of its runs,
  // and on more than three quarters it is caught (between the two: docs/evaluation.md, section 3).
  const std::vector<double>& collect = tj.collect_ms;
  const double collect_null = tj.collect_overhead_ms;
  if (!collect.empty() && collect_null > 0) {
    double low = LowerQuantile(collect, 0.25);
    if (low > 1.5 * collect_null + 2.0 && low - collect_null > 0.5 * stats.median_ms) {
      Finish(VerdictStatus::kSuspicious,
             "handing over the outputs took at least " + std::to_string(low) + " ms on three runs in four against " +
                 std::to_string(collect_null) + " ms before the candidate was loaded: work moved outside the timed call",
             "untimed_work");
      return false;
    }
  }
  WarnIfWallBounded(stats);
  return true;
}

// The device timer runs in the candidate's process; the supervisor's clock does not. Every
// run's reported time well below what that clock allows is forged (or the work escaped the
// call). The smallest gap decides: on a busy machine the supervisor wakes up late on many
// runs, never on all of them, while a forged timer shows on every run. (The median already
// holds the supervisor's bound, TimingFromWorker, so a forger gains nothing by keeping one run
// honest.) Both workers.
bool Evaluation::CheckSupervisorClock(const WorkerTiming& tj, const TimingStats& stats) {
  const std::vector<double>& d = tj.device_ms;
  const std::vector<double>& w = tj.wall_ms;
  if (w.empty() || w.size() != d.size()) return true;
  double clock_gap = 1e300;
  for (size_t i = 0; i < w.size(); ++i) clock_gap = std::min(clock_gap, w[i] - d[i] - stats.overhead_ms);
  // The absolute margin is a loaded machine's wake-up latency (measured on this project's
  // 2-core CI VM beside other jobs); the median bound still applies below it.
  if (clock_gap > 0.25 * stats.device_median_ms && clock_gap > 10 * tj.overhead_mad_ms + 0.5) {
    Finish(VerdictStatus::kSuspicious,
           "the device time the candidate's process reported (median " + std::to_string(stats.device_median_ms) +
               " ms) is at least " + std::to_string(clock_gap) + " ms below what the worker's supervisor clocked on every run (median " +
               std::to_string(stats.wall_median_ms) + " ms, of which " + std::to_string(stats.overhead_ms) +
               " ms is its own overhead): a forged timer, or work outside the timed call",
           "supervisor_clock");
    return false;
  }
  return true;
}

void Evaluation::WarnIfWallBounded(const TimingStats& stats) {
  if (stats.wall_bounded)
    verdict_.warnings.push_back("the median is the supervisor's bound (" + std::to_string(stats.median_ms) + " ms: wall " +
                                std::to_string(stats.wall_median_ms) + " ms less its overhead), above the device time the candidate's process reported (" +
                                std::to_string(stats.device_median_ms) + " ms): a busy machine (late wake-ups) or work outside the timer");
}

bool Evaluation::CheckPrecision(const WorkerRun& run) {
  for (const auto& [k, v] : run.report.precision.items()) verdict_.precision[k] = v;
  // Under a reduced-precision policy the tolerance alone judges relaxed math.
  const bool allowed = problem_.allow_fast_math || PolicyAllowsFastMath(policy_);
  verdict_.precision["fast_math_allowed"] = allowed;
  const json fast = verdict_.precision.value("fast_math_options", json::array());
  if (!fast.empty() && !allowed) {
    Finish(VerdictStatus::kSuspicious, "the candidate built with " + fast.dump() +
                                           ", which this problem does not allow under the strict precision policy"
                                           " (--precision tf32, bf16, fp16 or kernelbench accepts it)", "precision");
    return false;
  }
  return true;
}

Result<bool> Evaluation::RunCandidate() {
  auto t0 = std::chrono::steady_clock::now();
  Job job;
  job.backend = backend_->name;
  job.device = options_.device;
  job.entry = backend_->entry;
  WorkerFiles files;
  files.library = library_;
  if (backend_->sibling_program_source) {
    fs::path sib = candidate_;
    sib.replace_extension(backend_->sibling_extension);
    if (fs::exists(sib)) files.program_source = sib;
  }
  program_source_ = files.program_source;
  for (size_t t = 0; t < trials_.size(); ++t) {
    AddTrialSet(t, &job, &files);
    if (!timing_only_) job.checks.push_back(static_cast<int>(t));
  }
  if (options_.timing) job.timing = PlanTiming(trials_.size());
  Limits limits = WorkerLimits();
  limits.folder_bytes = JobFolderLimit(job, files);
  verdict_.limits = LimitsToJson(limits);
  // The worker locks the device itself: shared for the job, exclusive for each timed run.
  job.lock_file = DeviceLockPath(LockName(backend_->name)).string();
  Result<WorkerRun> run = RunWorker(runner_, job, files, limits);
  if (!run.ok()) return run.status();
  Stage("run", t0);
  verdict_.worker_phases = run->report.phases_ms;
  verdict_.fingerprint["device"] = run->report.fingerprint;
  kernel_record_ = run->report.kernels;
  // When every check finished, judge them first: a wrong or cheating result says more than a
  // crash that came after it.
  auto t_compare = std::chrono::steady_clock::now();
  bool checks_done = run->report.checks.size() == trials_.size();
  bool ok = checks_done ? CheckTrials(*run) && ProcessEnded(*run) : ProcessEnded(*run) && CheckTrials(*run);
  ok = ok && CheckPrecision(*run);
  // A reference that fails on the timed runs' inputs is an error of the evaluation, not a
  // verdict on the candidate.
  Result<bool> timed = ok && options_.timing ? CheckTiming(*run) : Result<bool>(ok);
  Cleanup(*run);
  if (!timed.ok()) return timed.status();
  ok = *timed;
  // The outputs read back and compared, the job's folder removed (timed_reference, inside it,
  // is its own stage).
  Stage("compare", t_compare);
  if (verdict_.stages.contains("timed_reference"))
    verdict_.stages["compare"] = verdict_.stages["compare"].get<double>() - verdict_.stages["timed_reference"].get<double>();
  return ok;
}

// How far a queued Python call's host time may pass its device time (CheckPythonClocks), less a
// quarter of the device time: the synchronize's wake-up and the timer's own Python; or, where
// the null runs showed more of that (a slower host, a crowd), their excess and this margin, half
// the 0.1 ms the Triton side-stream cheat hid on an H100.
constexpr double kQueuedHostGapMs = 0.075;
constexpr double kQueuedHostNullMarginMs = 0.05;

// The gates a loaded machine can also trip: the supervisor's and the host's clocks against the
// device timer, and the hand-over of outputs. A forger trips them on every job; an honest kernel
// beside other work (the 2-core CI VM at load 8) sometimes on one.
bool LoadSensitiveGate(const std::string& gate) {
  return gate == "supervisor_clock" || gate == "host_time" || gate == "untimed_work";
}

// The candidate's job, and a second one when the first was judged suspicious by a
// load-sensitive gate: the second job's verdict stands, whatever it is, and nothing of the
// first is kept but a warning that names its gate. No gate is loosened: every number the
// verdict reports comes from a job that passed every gate.
Result<bool> Evaluation::JudgeCandidate() {
  const Verdict before = verdict_;
  auto t0 = std::chrono::steady_clock::now();
  KF_ASSIGN_OR_RETURN(bool passed, python_candidate_ ? RunPythonCandidate() : RunCandidate());
  if (passed || verdict_.status != VerdictStatus::kSuspicious || !LoadSensitiveGate(verdict_.gate)) return passed;
  const std::string gate = verdict_.gate, first = verdict_.message;
  const double first_seconds = Seconds(t0);
  verdict_ = before;
  KF_ASSIGN_OR_RETURN(passed, python_candidate_ ? RunPythonCandidate() : RunCandidate());
  verdict_.warnings.push_back("judged twice: the first job was suspicious by the " + gate +
                              " gate, which a loaded machine can also trip (" + first.substr(0, 240) +
                              "); this verdict is the second job's");
  verdict_.stages["first_run"] = first_seconds;
  // The same, for programs: which gate, and its whole message (the warning cuts it).
  verdict_.fingerprint["first_job"] = {{"gate", gate}, {"message", first.substr(0, 2000)}, {"seconds", first_seconds}};
  return passed;
}

// The theoretical floor is the gate: no timing went into it, so a busy machine cannot make an
// honest kernel look impossible. The achievable floor, from the measured peaks, gives SOL%;
// a SOL% above 100 first re-measures cached peaks (they read low on a busy machine), and
// one still above 100 is explained in a warning.
Status Evaluation::SpeedOfLight() {
  const BoundProblem& b = trials_[0].bound;
  verdict_.flops = b.flops;
  verdict_.bytes = b.bytes;
  // Python jobs on the CPU are held to the host's peaks; on a GPU to the CUDA device's.
  std::string peaks_backend = !python_candidate_ ? backend_->name : torch_device_ == "cpu" ? "cpp" : "cuda";
  KF_ASSIGN_OR_RETURN(DevicePeaks peaks, GetDevicePeaks(peaks_backend, options_.device, runner_));
  // Without theoretical peaks (a device that tells neither its units nor its clocks) there is
  // no floor: the verdict says that the impossible-speed gate was not applied.
  std::optional<TheoreticalFloor> theory;
  if (peaks.theoretical_error.empty()) {
    KF_ASSIGN_OR_RETURN(TheoreticalPeaks bounds, TheoreticalPeaksFromJson(peaks.theoretical));
    theory = ComputeTheoreticalFloor(bounds, b.flops, b.bytes, RequiredPrecisionBits(*b.problem));
    verdict_.floor_ms = theory->ms;
    verdict_.roofline["theoretical"] = theory->ToJson();
    verdict_.fingerprint["theoretical_peaks"] = peaks.theoretical;
  } else {
    verdict_.roofline["theoretical"] = {{"error", peaks.theoretical_error}};
    verdict_.warnings.push_back(peaks.theoretical_error + ": no speed-of-light floor, so the gate against impossible "
                                "times was not applied (SOL% is against the peaks measured here)");
  }
  // Held to the measured units the problem's precision allows: a bf16 tensor-core kernel of a
  // loose-tolerance GEMM is not measured against the fp32 FMA rate (on the H100 every Triton
  // tf32 verdict of KernelBench level2/12 read SOL 117-121% that way, and measured the peaks
  // again each time: 0.45 s a judgement).
  const int required_bits = RequiredPrecisionBits(*b.problem);
  auto achievable = [&](bool remeasured) {
    std::vector<ComputeUnit> measured = {{"fp32 (measured)", peaks.fp32_gflops, 24}};
    if (peaks.tensor_bf16_gflops > 0) measured.push_back({"tensor bf16 (measured)", peaks.tensor_bf16_gflops, 8});
    AchievableFloor f = ComputeAchievableFloor(measured, peaks.bandwidth_gbs, b.flops, b.bytes, required_bits);
    verdict_.achievable_floor_ms = f.ms;
    verdict_.roofline["achievable"] = {{"floor_ms", f.ms},          {"bound", f.bound},
                                       {"gflops", f.compute.gflops}, {"unit", f.compute.unit},
                                       {"products", f.compute.products}, {"required_bits", required_bits},
                                       {"bandwidth_gbs", peaks.bandwidth_gbs}, {"remeasured", remeasured}};
    if (peaks.remeasured_age_s >= 0) verdict_.roofline["achievable"]["remeasured_age_s"] = peaks.remeasured_age_s;
    verdict_.fingerprint["peaks"] = {{"kind", "achievable (measured)"}, {"bandwidth_gbs", peaks.bandwidth_gbs},
                                     {"fp32_gflops", peaks.fp32_gflops}, {"remeasured", remeasured}};
    if (peaks.tensor_bf16_gflops > 0) verdict_.fingerprint["peaks"]["tensor_bf16_gflops"] = peaks.tensor_bf16_gflops;
    return f;
  };
  AchievableFloor floor = achievable(false);
  if (!verdict_.timing || verdict_.timing->median_ms <= 0) return Status::Ok();
  double median = verdict_.timing->median_ms, slack = options_.sol_slack;
  bool impossible = theory && median < slack * theory->ms;
  // SOL above 100%: cached peaks may have been measured on a busy machine, so they are measured
  // again, but not when that was done within the hour (the cache keeps the higher of the two
  // measurements, so a second one rarely moves them; a kernel on a unit no peak kernel measures,
  // wgmma say, would otherwise pay for a peaks job on every judgement).
  bool remeasured = !impossible && peaks.cached && median < floor.ms &&
                    (peaks.remeasured_age_s < 0 || peaks.remeasured_age_s > kPeaksRemeasureAfterS);
  if (remeasured) {
    KF_ASSIGN_OR_RETURN(peaks, GetDevicePeaks(peaks_backend, options_.device, runner_, true));
    floor = achievable(true);
  }
  verdict_.sol_percent = 100 * floor.ms / median;
  if (impossible) {
    Finish(VerdictStatus::kSuspicious, fmt::format("measured time is below the theoretical speed-of-light floor "
                                                   "({:.4f} ms < {} x {:.4f} ms; {}): impossible",
                                                   median, slack, theory->ms, theory->Describe(b.flops)), "speed_of_light");
  } else if (verdict_.sol_percent > 100) {
    verdict_.warnings.push_back(fmt::format(
        "SOL {:.0f}%: faster than the achievable peaks measured on this machine ({:.1f} GFLOP/s {}, {:.1f} GB/s{}): "
        "they were measured low or the kernel uses a faster unit{}",
        verdict_.sol_percent, floor.compute.gflops,
        floor.compute.products > 1 ? fmt::format("{} in {} products", floor.compute.unit, floor.compute.products)
                                   : floor.compute.unit,
        peaks.bandwidth_gbs,
        remeasured                      ? std::string(", measured again just now")
        : peaks.remeasured_age_s >= 0 ? fmt::format(", measured again {:.0f} min ago", peaks.remeasured_age_s / 60)
                                      : std::string(),
        theory ? fmt::format("; the theoretical floor ({:.4f} ms) holds", theory->ms) : std::string()));
  }
  return Status::Ok();
}

// Which kernels one checking call ran (docs/evaluation.md, "Kernels accounted for"), in every
// verdict whose job made a record: a correct candidate whose own kernels never ran, or ran too
// briefly to have written its outputs, is `no_custom_kernel` (timing and SOL stay).
void Evaluation::KernelAccountingGate() {
  if (kernel_record_.is_null()) return;
  double output_bytes = 0;
  for (const TensorShape& o : trials_[0].bound.outputs) output_bytes += static_cast<double>(o.bytes());
  double bandwidth = verdict_.fingerprint.value("theoretical_peaks", json::object()).value("bandwidth_gbs", 0.0);
  KernelAccounting a = AccountKernels(kernel_record_, source_, output_bytes, bandwidth);
  verdict_.kernels = a.summary;
  for (const std::string& w : a.warnings) verdict_.warnings.push_back(w);
  if (a.malformed && verdict_.status == VerdictStatus::kCorrect)
    Finish(VerdictStatus::kSuspicious, a.message, "kernels");
  if (a.no_custom_kernel && verdict_.status == VerdictStatus::kCorrect)
    Finish(VerdictStatus::kNoCustomKernel, a.message, "kernels");
}

Result<TimingStats> Evaluation::TimeBaseline(const fs::path& library, const std::string& backend,
                                             const std::string& entry, const fs::path& program) {
  Job job;
  job.backend = backend;
  const BackendSpec* spec = FindBackend(backend);
  job.device = spec && spec->device_is_host_cpu ? 0 : options_.device;
  job.entry = entry;
  WorkerFiles files;
  files.library = library;
  files.program_source = program;
  size_t n = std::min<size_t>(2, trials_.size());
  for (size_t t = 0; t < n; ++t) AddTrialSet(t, &job, &files);
  job.timing = PlanTiming(n);
  job.timing->timed_checks = 0;  // the reference and the seed are the problem's own code
  job.lock_file = DeviceLockPath(LockName(backend)).string();  // locked as a candidate's job is
  Result<WorkerRun> run = RunWorker(runner_, job, files, WorkerLimits());
  if (!run.ok()) return run.status();
  Cleanup(*run);
  if (!run->finished() || run->report.error)
    return Status::Internal("baseline failed: " + run->process.Describe() + " " + ErrorJson(*run).dump());
  if (!run->report.timing) return Status::Internal("baseline failed: its finished job has no timing");
  return TimingFromWorker(*run->report.timing);
}

// The first `count` trials' sizes and magnitudes, for trusted-state keys of timings.
json Evaluation::TrialFields(size_t count) const {
  json sets = json::array();
  for (size_t t = 0; t < std::min(count, trials_.size()); ++t)
    sets.push_back({{"sizes", trials_[t].bound.sizes}, {"magnitude", trials_[t].magnitude}});
  return sets;
}

// Baselines kept for `fields`, unless the run asks for new ones (--rebaseline) or they are
// older than the run allows; the verdict says which it got.
std::optional<TrustedState::Baselines> Evaluation::KeptBaselines(const json& fields) {
  std::optional<TrustedState::Baselines> kept;
  if (!options_.rebaseline) kept = trusted_.FindBaselines(TrustedStateKey(fields), options_.baseline_max_age_s);
  if (kept)
    verdict_.fingerprint["trusted_state"]["baselines"] = {{"kept", true}, {"measured_at", kept->measured_at}, {"age_s", kept->age_s}};
  else
    verdict_.fingerprint["trusted_state"]["baselines"] = {{"kept", false}, {"rebaseline", options_.rebaseline}};
  return kept;
}

void Evaluation::KeepBaselines(const json& fields, const std::map<std::string, TimingStats>& measured) {
  Status k = trusted_.KeepBaselines(TrustedStateKey(fields), fields, measured);
  if (!k.ok()) verdict_.warnings.push_back("the baselines were not kept: " + k.message());
}

Status Evaluation::Baselines() {
  auto t0 = std::chrono::steady_clock::now();
  bool all_f32 = true;
  for (const TensorDecl& t : problem_.inputs) all_f32 &= !IsFloating(t.dtype) || t.dtype == DType::kFloat32;
  for (const TensorDecl& t : problem_.outputs) all_f32 &= !IsFloating(t.dtype) || t.dtype == DType::kFloat32;
  // The seed is timed as a baseline unless it is the candidate (then its own timing serves).
  fs::path seed_library, seed_program;
  bool seed_is_candidate = false;
  auto seed = problem_.seeds.find(backend_->name);
  if (seed != problem_.seeds.end()) {
    KF_ASSIGN_OR_RETURN(CompileOutput out, Compile(runner_, *backend_, seed->second, CompileKind::kCandidate, arch_));
    if (out.library == library_) {
      seed_is_candidate = true;
    } else if (out.ok) {
      seed_library = out.library;
      fs::path sib = seed->second;
      sib.replace_extension(backend_->sibling_extension);
      if (backend_->sibling_program_source && fs::exists(sib)) seed_program = sib;
    }
  }
  const size_t sets = std::min<size_t>(2, trials_.size());
  json fields = {{"what", "native baselines"}, {"statistic", kTimingStatistic}, {"problem", FileDigest(problem_.path)},
                 {"reference_library", all_f32 ? FileDigest(reference_library_) : ""},
                 {"seed_library", seed_library.empty() ? "" : FileDigest(seed_library)},
                 {"seed_program", seed_program.empty() ? "" : FileDigest(seed_program)},
                 {"backend", backend_->name}, {"device", options_.device},
                 {"device_fingerprint", verdict_.fingerprint.value("device", json::object())},
                 {"sets", TrialFields(sets)}, {"plan", TimingPlanToJson(PlanTiming(sets))},
                 {"worker", DigestOnce(WorkerPath())}};
  std::optional<TrustedState::Baselines> kept;
  if (!problem_.path.empty() && (all_f32 || !seed_library.empty())) kept = KeptBaselines(fields);
  std::map<std::string, TimingStats> measured;
  if (kept) {
    measured = kept->timings;
  } else {
    bool complete = true;
    if (all_f32) {
      Result<TimingStats> ref = TimeBaseline(reference_library_, "cpp", "kf_reference_native", "");
      if (ref.ok()) measured["reference"] = *ref;
      else verdict_.warnings.push_back("reference baseline: " + ref.status().message()), complete = false;
    }
    if (!seed_library.empty()) {
      Result<TimingStats> st = TimeBaseline(seed_library, backend_->name, backend_->entry, seed_program);
      if (st.ok()) measured["seed"] = *st;
      else verdict_.warnings.push_back("seed baseline: " + st.status().message()), complete = false;
    }
    if (complete && !problem_.path.empty()) KeepBaselines(fields, measured);
  }
  for (const auto& [name, t] : measured) verdict_.baselines[name] = t;
  if (seed_is_candidate) verdict_.baselines["seed"] = *verdict_.timing;
  for (const auto& [name, t] : verdict_.baselines)
    if (verdict_.timing->median_ms > 0) verdict_.speedups[name] = t.median_ms / verdict_.timing->median_ms;
  Stage("baselines", t0);
  return Status::Ok();
}


// --- PyTorch problems and Python candidates (docs/pytorch-problems.md). ----------------------

Status Evaluation::StartPython() {
  pytorch_ = problem_.format == ProblemFormat::kPyTorch;
  if (!pytorch_ && !python_candidate_) return Status::Ok();
  const auto t0 = std::chrono::steady_clock::now();
  struct Staged {  // however it returns
    Evaluation* e;
    std::chrono::steady_clock::time_point t0;
    ~Staged() { e->Stage("python_start", t0); }
  } staged{this, t0};
  // The warm worker a Python candidate's jobs will use imports PyTorch while the probe runs and
  // the candidate compiles (its sandbox does not depend on the device the probe finds). A native
  // candidate on a PyTorch problem may need no Python job at all (references and baselines
  // kept): its first Python job, if any, starts the worker.
  if (python_candidate_) PrewarmPythonWorker(runner_, PythonJob("candidate"), PythonLimits());
  // The probe imports the backend's module only for this backend's judgements (CuTe DSL's
  // import alone takes about a second).
  bool probe_kept = false;
  KF_ASSIGN_OR_RETURN(py_probe_, ProbePython(runner_, backend_->python_module, &probe_kept));
  verdict_.fingerprint["trusted_state"]["python_probe"] = probe_kept ? "kept" : "probed";
  if (std::string why = PythonBackendUnusable(*backend_, py_probe_); !why.empty()) return Status::Unavailable(why);
  // Native GPU backends and GPU-minded Python backends run the Python side on the GPU.
  bool gpu = backend_->wants_gpu || backend_->per_device_arch;
  torch_device_ = TorchDevice(py_probe_, gpu, options_.device);
  const std::string module = backend_->python_module;
  verdict_.fingerprint["python"] = py_probe_;
  verdict_.fingerprint["torch_device"] = torch_device_;
  // The standby reference job holds a warm worker for the candidate's whole run, and the
  // candidate's job needs one too: both start now. With one, a kept probe (no Python to wait
  // for before the run) left the candidate's job to start a second worker after the standby
  // had taken the first (KernelBench level2/12 Triton by `kforge eval` on an H100: 17.4-17.6 s
  // warm against 14.2-14.5 s when the probe ran and hid the first one's start).
  if (python_candidate_ && StandbyReferenceWanted()) PrewarmPythonWorker(runner_, PythonJob("candidate"), PythonLimits(), 2);
  if (python_candidate_ && torch_device_ == "cpu" && module == "triton")
    verdict_.warnings.push_back("no CUDA device: Triton runs in its interpreter on the CPU (correctness only; its times say nothing about a GPU)");
  return Status::Ok();
}

Limits Evaluation::PythonLimits() const {
  Limits l = WorkerLimits();
  l.address_space_bytes = 0;        // CUDA and PyTorch reserve large virtual ranges
  l.cpu_seconds = 0;                 // compilers (inductor, nvcc via load_inline) run in parallel
  l.max_processes = 512;             // inductor and ninja start workers
  l.wall_seconds = std::max(options_.timeout_seconds, 600.0);
  l.output_bytes = 64 << 10;
  return l;
}

// The bound on a Python candidate's job folder (Limits::folder_bytes; JobFolderLimit for a
// kforge-worker job): twice what its supervisor writes there (the input files, two check runs'
// outputs per set, the sampled timed runs') and kJobFolderSlack besides.
uint64_t Evaluation::PythonCandidateFolderBytes(const PythonJobFiles& files) const {
  uint64_t bytes = 1 << 20, largest = 0;
  for (const auto& [name, blob] : files.blobs) bytes += blob.size();
  for (const auto& [name, path] : files.copies) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (!ec) bytes += size;
  }
  for (const Trial& t : trials_) {
    uint64_t outputs = 0;
    for (const TensorShape& out : t.bound.outputs) outputs += static_cast<uint64_t>(out.bytes());
    bytes += 2 * outputs;
    largest = std::max(largest, outputs);
  }
  bytes += largest * static_cast<uint64_t>(std::max(options_.timed_checks, 0) + 4);
  return 2 * bytes + kJobFolderSlack;
}

std::string Evaluation::PythonLockFile() const {
  // The lock kforge-worker jobs on the same device take (LockName): "cpu" or "cuda-<device>".
  return DeviceLockPath(torch_device_ == "cpu" ? "cpu" : LockName("cuda")).string();
}

// queue_ms: the device's head start before each timed call on CUDA (docs/python-worker.md,
// "Timed runs"); KFORGE_QUEUE_MS sets another, 0 none (to compare with and without it).
json Evaluation::PythonTimingPlan(size_t sets) const {
  const double queue_ms = QueueMs();
  return {{"sets", sets > 1 ? json{0, 1} : json{0}}, {"warmup_runs", 3}, {"warmup_ms", 30},
          {"min_runs", options_.min_runs}, {"max_runs", options_.max_runs}, {"budget_ms", options_.budget_ms},
          {"cv_target", options_.cv_target}, {"precision_target", options_.precision_target}, {"flush", true},
          {"queue_ms", queue_ms}};
}

json Evaluation::PythonJob(const std::string& mode) const {
  json job = {{"mode", mode}, {"device", torch_device_}, {"sets", json::array()}};
  // How many timed runs come back for a reference check: the caller's --timed-checks for a
  // candidate; none for the problem's own code (a reference or a baseline).
  job["timed_checks"] = mode == "candidate" ? std::max(options_.timed_checks, 0) : 0;
  // A Python DSL's compile error at a kernel's first call is the candidate's compile error.
  job["compile_errors"] = FirstCallCompileErrors();
  if (pytorch_) {
    job["problem"] = {{"kind", "kernelbench"}, {"module", "problem.py"}};
    job["sets"] = py_sets_;
  } else {
    job["problem"] = {{"kind", "native"}};
    for (size_t t = 0; t < trials_.size(); ++t) {
      json set = {{"magnitude", trials_[t].magnitude}, {"attrs", json::array()}, {"inputs", json::array()},
                  {"outputs", json::array()}};
      for (const LaunchAttr& a : AttrsFor(trials_[t].bound)) {
        bool integer = trials_[t].bound.sizes.count(a.name) > 0;
        for (const Attribute& pa : problem_.attrs) integer |= pa.name == a.name && pa.is_integer;
        set["attrs"].push_back({{"name", a.name}, {"i", a.i}, {"f", a.f}, {"integer", integer}});
      }
      const BoundProblem& b = trials_[t].bound;
      for (size_t k = 0; k < b.inputs.size(); ++k) {
        const TensorShape& in = b.inputs[k];
        json d = {{"name", in.name}, {"dtype", DTypeName(in.dtype)}, {"dims", in.dims},
                  {"file", "in_" + std::to_string(t) + "_" + in.name + ".bin"}};
        // The generator of fresh timed inputs (python/kforge_inputs.py draws what GenerateTensor
        // draws from the key's hash and the run's seed).
        if (k < problem_.inputs.size()) {
          const Distribution& dist = problem_.inputs[k].dist;
          d["gen"] = {{"kind", DistName(dist.kind)}, {"a", dist.a}, {"b", dist.b}, {"positive", dist.positive},
                      {"key_hash", KeyHash(InputKey(b, k))}};
        }
        set["inputs"].push_back(d);
      }
      for (const TensorShape& out : trials_[t].bound.outputs)
        set["outputs"].push_back({{"name", out.name}, {"dtype", DTypeName(out.dtype)}, {"dims", out.dims}});
      job["sets"].push_back(set);
    }
  }
  if (torch_device_ == "cpu" && python_candidate_) job["interpret"] = true;  // Triton's interpreter
  // What the worker's supervisor checks every timed output against (docs/python-worker.md).
  bool finite = !trials_.empty();
  for (const Trial& t : trials_)
    for (const std::vector<double>& ref : t.reference)
      finite = finite && std::all_of(ref.begin(), ref.end(), [](double x) { return std::isfinite(x); });
  job["reference_finite"] = finite;
  job["degenerate"] = PythonOutputsMayRepeat();
  job["deterministic"] = !problem_.nondeterministic;
  return job;
}

// True when two timed runs may legitimately return byte-identical outputs from different
// inputs: a degenerate reference (near-constant or tiny), or two check trials at the same sizes
// whose references are identical.
bool Evaluation::PythonOutputsMayRepeat() const {
  if (trials_.empty() || trials_[0].reference.empty()) return false;
  std::string why;
  if (IsDegenerate(trials_[0].reference[0], ToleranceFor(trials_[0].bound.outputs[0].dtype), &why)) return true;
  return trials_.size() > 1 && trials_[1].bound.sizes == trials_[0].bound.sizes && trials_[1].reference == trials_[0].reference;
}

// A Python reference job's output `out`, read back (its digest checked) and widened to double:
// `numel` elements of its reference_dtype.
Result<std::vector<double>> WidenedReference(const WorkerRun& run, const ReferenceOutput& out, int64_t numel) {
  KF_ASSIGN_OR_RETURN(DType rdt, ParseDType(out.reference_dtype));
  if (numel < 0) return Status::Internal("reference output '" + out.name + "' has the wrong size");
  std::vector<double> v(static_cast<size_t>(numel));
  if (rdt == DType::kFloat64) {  // read where it is kept: no copy to widen
    Status read = run.ReadOutputInto(out.file, v.data(), v.size() * sizeof(double));
    if (!read.ok()) return Status::Internal("reference output '" + out.name + "': " + read.message());
    return v;
  }
  KF_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> bytes, run.ReadOutput(out.file, static_cast<size_t>(numel) * DTypeSize(rdt)));
  ToDouble(rdt, bytes->data(), v.size(), v.data());
  return v;
}

// The check trials of a PyTorch problem from its reference job's report (fresh or kept):
// shapes, inputs when written, float64 references, the problem as the module described it.
Status Evaluation::ReadPyTorchReference(const WorkerRun& run, const std::vector<std::map<std::string, int64_t>>& sizes_of) {
  Status status = Status::Ok();
  if (!run.finished() || run.report.error || run.report.sets.size() != py_sets_.size()) {
    status = Status::Internal("the PyTorch reference of problem '" + problem_.name + "' failed (" + run.process.Describe() +
                              ", stage " + run.last_stage + "): " + ErrorMessage(run) +
                              "\n" + TailLines(run.process.err, 12, 3000));
  }
  // Every file read back and its SHA-256 checked on all cores at once, before anything uses it
  // (nine sets of an 8192-wide GEMM: one 256 MiB weight, nine inputs, nine float64 outputs).
  // Sets share the files of equal inputs (a model's parameters): those are read once.
  std::map<std::string, std::shared_ptr<const std::string>> input_files;  // file -> its verified bytes
  std::vector<const ReferenceOutput*> outs;                   // every set's outputs, set by set
  std::vector<Result<std::vector<double>>> widened;           // outs[i]'s reference
  if (status.ok()) {
    std::vector<std::string> names;
    std::vector<Result<size_t>> sizes;  // names[i]'s, from its dtype and dims
    for (const ReferenceSet& d : run.report.sets) {
      for (const ReferenceInput& in : d.inputs) {
        if (!in.file || !input_files.emplace(*in.file, nullptr).second) continue;
        names.push_back(*in.file);
        Result<DType> dt = ParseDType(in.dtype);
        const bool negative = std::any_of(in.dims.begin(), in.dims.end(), [](int64_t dim) { return dim < 0; });
        sizes.push_back(!dt.ok()   ? Result<size_t>(dt.status())
                        : negative ? Result<size_t>(Status::Internal("input '" + in.name + "' has a negative dimension"))
                                   : Result<size_t>(TensorShape{in.name, *dt, in.dims}.bytes()));
      }
      for (const ReferenceOutput& out : d.outputs) outs.push_back(&out);
    }
    std::vector<Result<std::shared_ptr<const std::string>>> read(names.size(), Status::Internal("not read"));
    widened.assign(outs.size(), Status::Internal("not read"));
    ParallelFor(names.size() + outs.size(), [&](size_t i) {
      if (i < names.size()) {
        read[i] = sizes[i].ok() ? run.ReadOutput(names[i], *sizes[i]) : Result<std::shared_ptr<const std::string>>(sizes[i].status());
        return;
      }
      const ReferenceOutput& out = *outs[i - names.size()];
      int64_t n = 1;
      for (int64_t d : out.dims) n *= d;
      widened[i - names.size()] = WidenedReference(run, out, n);
    });
    for (size_t i = 0; i < names.size(); ++i) {
      if (!read[i].ok()) {
        if (status.ok()) status = read[i].status();
        continue;
      }
      input_files[names[i]] = std::move(*read[i]);
    }
  }
  size_t next_out = 0;  // into outs and widened
  described_ = problem_;
  described_.inputs.clear();
  described_.outputs.clear();
  for (size_t t = 0; status.ok() && t < py_sets_.size(); ++t) {
    const ReferenceSet& d = run.report.sets[t];
    Trial trial;
    trial.seed = py_sets_[t]["seed"].get<uint64_t>();
    trial.magnitude = py_sets_[t]["magnitude"].get<double>();
    trial.hidden = py_sets_[t].value("hidden", false);
    trial.bound.problem = &described_;
    trial.bound.sizes = sizes_of[t];
    json hashes = json::object(), outputs = json::array();
    for (const ReferenceInput& in : d.inputs) {
      Result<DType> dt = ParseDType(in.dtype);
      if (!dt.ok()) { status = dt.status(); break; }
      TensorShape shape{in.name, *dt, in.dims};
      trial.bound.inputs.push_back(shape);
      hashes[shape.name] = in.hash;
      if (t == 0) described_.inputs.push_back({shape.name, {}, *dt, {}});
      if (in.file) {
        trial.inputs.push_back(HostTensor{shape, input_files.at(*in.file)});
      }
    }
    for (size_t o = 0; o < d.outputs.size(); ++o) {
      const ReferenceOutput& out = d.outputs[o];
      Result<DType> dt = ParseDType(out.dtype);
      if (!dt.ok()) { status = dt.status(); break; }
      TensorShape shape{out.name, *dt, out.dims};
      trial.bound.outputs.push_back(shape);
      if (t == 0) described_.outputs.push_back({shape.name, {}, *dt, {}});
      outputs.push_back({{"name", shape.name}, {"dtype", DTypeName(*dt)}, {"dims", shape.dims}});
      Result<std::vector<double>>& v = widened.at(next_out++);
      if (!v.ok()) { status = v.status(); break; }
      trial.reference.push_back(std::move(*v));
    }
    if (!status.ok()) break;
    for (const TensorShape& sh : trial.bound.inputs) trial.bound.bytes += static_cast<double>(sh.bytes());
    for (const TensorShape& sh : trial.bound.outputs) trial.bound.bytes += static_cast<double>(sh.bytes());
    trial.bound.flops = d.flops;
    py_sets_[t]["input_hashes"] = hashes;
    py_sets_[t]["outputs"] = outputs;
    if (t == 0) {
      verdict_.precision["reference"] = d.reference_precision;
      if (d.reference_precision != "float64")
        verdict_.warnings.push_back("the reference ran in the problem's own precision: " + d.reference_precision);
      verdict_.fingerprint["reference_device"] = run.report.fingerprint;
      verdict_.fingerprint["problem_constants"] = d.constants;
    }
    trials_.push_back(std::move(trial));
  }
  return status;
}

Status Evaluation::PreparePyTorch() {
  auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, int64_t> overrides = options_.sizes;
  if (options_.quick) {
    for (const auto& [k, v] : QuickSizes(problem_)) overrides.emplace(k, v);
  }
  KF_ASSIGN_OR_RETURN(BoundProblem main, Bind(problem_, overrides, false));
  verdict_.sizes = main.sizes;
  const int seeds = std::max(options_.seeds, 1);
  std::vector<std::map<std::string, int64_t>> sizes_of;
  for (int s = 0; s < seeds; ++s) {
    py_sets_.push_back({{"seed", s}, {"magnitude", problem_.magnitudes[s % problem_.magnitudes.size()]}, {"overrides", main.sizes}});
    sizes_of.push_back(main.sizes);
  }
  // Hidden sizes: only the batch dimension moves (VariantSizes' rule: about 3/4, odd), the one
  // size every KernelBench candidate must take as given; other constants may be structural
  // (kernel sizes, groups).
  auto batch = main.sizes.find("batch_size");
  if (options_.hidden_sizes && batch != main.sizes.end() && batch->second > 1) {
    std::map<std::string, int64_t> variant = main.sizes;
    variant["batch_size"] = VariantSizes(problem_, main.sizes).at("batch_size");
    for (int s = 0; s < 2; ++s) {
      py_sets_.push_back({{"seed", 1000 + s}, {"magnitude", problem_.magnitudes[s % problem_.magnitudes.size()]}, {"overrides", variant}, {"hidden", true}});
      sizes_of.push_back(variant);
    }
  }
  json job = PythonJob("reference");
  job["write_inputs"] = !python_candidate_;  // native candidates read the inputs from files
  // The trusted store's key: the job as written (less the lock's path), the module, the
  // interpreter and its libraries, and the worker's scripts.
  const json fields = {{"what", "pytorch references"}, {"problem", FileDigest(problem_.path)}, {"job", job},
                       {"python", py_probe_}, {"worker", PythonWorkerDigests()}};
  const std::string key = trusted_.enabled() && !problem_.path.empty() ? TrustedStateKey(fields) : "";
  job["lock_file"] = PythonLockFile();
  if (key.empty()) verdict_.fingerprint["trusted_state"]["references"] = "computed (not kept)";
  auto run = [&]() -> Result<WorkerRun> {
    PythonJobFiles files;
    files.copies["problem.py"] = problem_.path;
    KF_ASSIGN_OR_RETURN(WorkerRun r, RunPythonWorker(runner_, job, files, PythonLimits()));
    AddPythonStages("python_reference", r, &verdict_.stages);
    return r;
  };
  Status status = KeptOrRun(key, fields, "the PyTorch references", run, [&](const WorkerRun& r) {
    trials_.clear();
    return ReadPyTorchReference(r, sizes_of);
  });
  Stage("reference", t0);
  if (!status.ok()) return status;
  if (trials_.empty() || trials_[0].bound.outputs.empty()) return Status::Internal("the PyTorch reference returned no outputs");
  std::string why;
  if (IsDegenerate(trials_[0].reference[0], ToleranceFor(trials_[0].bound.outputs[0].dtype), &why)) {
    degenerate_ = true;
    verdict_.warnings.push_back("degenerate problem: " + why);
  }
  reference_finite_ = AllFinite(trials_);
  return Status::Ok();
}

// KernelBench problems: the reference job of the sampled timed runs is started now, so that it
// starts and imports PyTorch while the candidate's job runs, and waits (no device touched, no
// lock held) for their seeds. On by default where the device is a GPU; on a CPU its start would
// compete with the candidate's job for the cores; with warm Python workers (eval/python_zygote.h)
// a job starts with a fork, and the reference job simply follows the candidate's.
// KFORGE_STANDBY_REFERENCE=1 or 0 overrides. (torch_device_ is known once the probe answered.)
bool Evaluation::StandbyReferenceWanted() const {
  const char* env = std::getenv("KFORGE_STANDBY_REFERENCE");
  const bool wanted = env && *env ? std::string(env) != "0" : torch_device_ != "cpu";
  return wanted && pytorch_ && options_.timing && !timing_only_;
}

void Evaluation::StartStandbyReference() {
  if (!StandbyReferenceWanted()) return;
  json job = PythonJob("reference");
  job["lock_file"] = PythonLockFile();
  PythonJobFiles files;
  files.copies["problem.py"] = problem_.path;
  Limits limits = PythonLimits();
  limits.wall_seconds *= 2;  // the candidate's job, then its own work
  Result<std::unique_ptr<StandbyPythonJob>> standby = StandbyPythonJob::Start(runner_, job, files, limits);
  if (standby.ok()) standby_reference_ = std::move(*standby);
}

Result<bool> Evaluation::RunPythonCandidate() {
  auto t0 = std::chrono::steady_clock::now();
  StartStandbyReference();
  struct Release {  // a standby never given work is cancelled when the candidate's part is over
    std::unique_ptr<StandbyPythonJob>& job;
    ~Release() { job.reset(); }
  } release{standby_reference_};
  json job = PythonJob("candidate");
  job["candidate"] = "candidate.py";
  job["entry"] = source_.find("class ModelNew") != std::string::npos ? "ModelNew" : backend_->python_hosted ? backend_->entry : "kf_run";
  job["checks"] = json::array();
  for (size_t t = 0; t < trials_.size() && !timing_only_; ++t) job["checks"].push_back(t);
  if (options_.timing) job["timing"] = PythonTimingPlan(trials_.size());
  job["lock_file"] = PythonLockFile();
  // A JIT-compiling DSL compiles at the first call: on a GPU it does that in a process of its own
  // beside this one, without the device lock (docs/python-worker.md "Compile pass").
  // KFORGE_COMPILE_PASS=always forces it (on the CPU too, where it only starts and ends the
  // process: the tests of its plumbing), =never turns it off.
  const std::string name = backend_->name;
  const char* force = std::getenv("KFORGE_COMPILE_PASS");
  const std::string forced = force ? force : "";
  job["compile_pass"] = !timing_only_ && forced != "never" &&
                        (forced == "always" || (torch_device_ != "cpu" && (name == "triton" || name == "cute" ||
                                                                          source_.find("triton") != std::string::npos)));
  PythonJobFiles files;
  files.copies["candidate.py"] = candidate_;
  if (pytorch_) files.copies["problem.py"] = problem_.path;
  for (size_t t = 0; !pytorch_ && t < trials_.size(); ++t) {
    for (const HostTensor& h : TrialInputs(t)) files.blobs["in_" + std::to_string(t) + "_" + h.shape.name + ".bin"] = h.bytes();
  }
  Limits limits = PythonLimits();
  limits.folder_bytes = PythonCandidateFolderBytes(files);
  verdict_.limits = LimitsToJson(limits);
  KF_ASSIGN_OR_RETURN(WorkerRun run, RunPythonWorker(runner_, job, files, limits));
  Stage("run", t0);
  AddPythonStages("python_candidate", run, &verdict_.stages);
  verdict_.fingerprint["device"] = run.report.fingerprint;
  kernel_record_ = run.report.kernels;
  if (!run.report.parameters.is_null()) verdict_.precision["parameters"] = run.report.parameters;
  // Import errors, inline builds (load_inline) and Triton kernels, which compile at their first
  // call (stage "kernel_compile"), are the candidate's compile errors; the worker ran it as candidate.py.
  const std::string failed_stage = run.report.error ? run.report.error->stage : "";
  if (failed_stage == "load" || failed_stage == "kernel_compile") {
    const std::string name = candidate_.filename().string();
    const std::string message = RenameSourceInLog(ErrorMessage(run), "candidate.py", name);
    verdict_.compiler_output = TrimCompilerLog(message);
    Finish(VerdictStatus::kCompileError, failed_stage == "load" ? "the candidate does not load: " + message.substr(0, 300)
                                                                : "a kernel of the candidate does not compile (at its first call)");
    Cleanup(run);
    return false;
  }
  // Kernels it defines: __global__ functions, functions after a DSL's kernel decorator (kernels.h).
  if (!BuildsTorchExtension(source_) && OwnKernelNames(source_).empty())
    verdict_.warnings.push_back(
        "the candidate defines no kernel of its own (no load_inline, no function after " + KernelDecoratorList() + "): it is PyTorch code");
  if (failed_stage == "check") {
    // Outputs of the wrong shape or dtype, or a different number of them.
    Finish(VerdictStatus::kWrongOutput, ErrorMessage(run));
    Cleanup(run);
    return false;
  }
  // Staged as kforge-worker's job is (JudgeCandidate): the verdicts of the H100's Triton runs
  // left 0.5 s of every warm one to "other" without it.
  auto t_compare = std::chrono::steady_clock::now();
  bool checks_done = run.report.checks.size() == trials_.size();
  bool ok = checks_done ? CheckTrials(run) && ProcessEnded(run) : ProcessEnded(run) && CheckTrials(run);
  ok = ok && CheckPrecision(run);
  // Threads started when the candidate was imported are there before its first run, where the
  // thread gates start counting; on a CPU device such a thread can work during the untimed steps.
  const int before_load = run.report.threads_before_load, after_checks = run.report.threads_after_checks;
  if (ok && before_load > 0 && after_checks > before_load)
    verdict_.warnings.push_back("the candidate's process has " + std::to_string(after_checks - before_load) +
                                " more thread(s) after its checks than before it was loaded");
  Result<bool> timed = ok && options_.timing ? CheckPythonTiming(run) : Result<bool>(ok);
  Cleanup(run);
  Stage("compare", t_compare);
  if (verdict_.stages.contains("timed_reference"))
    verdict_.stages["compare"] = verdict_.stages["compare"].get<double>() - verdict_.stages["timed_reference"].get<double>();
  return timed;
}

// The timed runs of a Python candidate (docs/python-worker.md), timed as kforge-worker's are
// (TimingFromWorker): the median of the device times, never below the supervisor's wall-clock
// median less its overhead and tolerance; every timed output was checked by the supervisor
// (timing.issues), a reservoir sample of them is compared with float64 references for their own
// fresh inputs; then the inputs, threads and clocks.
Result<bool> Evaluation::CheckPythonTiming(const WorkerRun& run) {
  static const WorkerTiming kNoTiming;  // ParsePythonTiming says what it lacks
  const WorkerTiming& tj = run.report.timing ? *run.report.timing : kNoTiming;
  Result<PythonTiming> parsed = ParsePythonTiming(tj);
  if (!parsed.ok()) {
    Finish(VerdictStatus::kRuntimeError, parsed.status().message());
    return false;
  }
  const PythonTiming& t = *parsed;
  verdict_.timing = TimingFromWorker(tj);
  verdict_.fingerprint["timing"] = {
      {"clock", SupervisorBoundRule()},  // kforge-worker's verdicts say it through wall_bounded and warnings
      {"overhead_ms", t.overhead_ms}, {"overhead_mad_ms", tj.overhead_mad_ms},
      {"device_median_ms", SetMedian(t.device_ms, t.sets)}, {"wall_median_ms", SetMedian(t.wall_ms, t.sets)},
      {"prepare_median_ms", Median(t.prepare_ms)}, {"collect_median_ms", Median(t.collect_ms)},
      {"copy_median_ms", tj.copy_ms.empty() ? 0.0 : Median(tj.copy_ms)},
      {"scan_median_ms", Median(tj.scan_ms)}, {"step_median_ms", Median(tj.step_ms)},
      {"calibration", PythonCalibrationJson(tj.calibration)}, {"fresh_inputs", tj.fresh_inputs},
      {"lock_wait_s", tj.lock_wait_s}};
  NoteHeadStart(tj);
  if (tj.note) verdict_.warnings.push_back(*tj.note);
  if (!tj.issues.empty()) {
    Finish(VerdictStatus::kWrongOutput, tj.issues[0], "timed_output");
    return false;
  }
  KF_ASSIGN_OR_RETURN(bool samples_ok, CheckTimedSamples(run, tj.samples, tj.fresh_inputs));
  if (!samples_ok) return false;
  if (tj.input_hashes_after != tj.input_hashes_before) {
    Finish(VerdictStatus::kWrongOutput, "the candidate modified its inputs during the timed runs");
    return false;
  }
  if (tj.threads_after > tj.threads_before) {
    Finish(VerdictStatus::kSuspicious, "threads grew from " + std::to_string(tj.threads_before) + " to " +
                                           std::to_string(tj.threads_after) + " during the timed runs (background work)", "threads");
    return false;
  }
  if (!CheckSupervisorClock(tj, *verdict_.timing) || !CheckPythonClocks(t, tj.enqueue_ms)) return false;
  WarnIfWallBounded(*verdict_.timing);
  return true;
}

// The device's head start (docs/evaluation.md, "Timed runs"): where the call's launches took
// the host longer than that, the device idled between the events and the device times include
// the host's launch path. Both workers.
void Evaluation::NoteHeadStart(const WorkerTiming& tj) {
  if (tj.enqueue_ms.empty()) return;
  const double queue_ms = verdict_.fingerprint.value("device", json::object()).value("queue_ms", 0.0);
  const double enqueue = Median(tj.enqueue_ms);
  if (!verdict_.fingerprint.contains("timing") || !verdict_.fingerprint["timing"].is_object()) verdict_.fingerprint["timing"] = json::object();
  verdict_.fingerprint["timing"]["enqueue_median_ms"] = enqueue;
  if (queue_ms > 0 && enqueue > queue_ms)
    verdict_.warnings.push_back(fmt::format(
        "the call's launches took the host {:.3f} ms (median), more than the device's {:.3f} ms head start: its device "
        "times include host time between launches",
        enqueue, queue_ms));
}

// Work that escapes the child's timers shows as supervisor time: wall time far above the device
// time the child reports (side streams, patched timers), or preparing and collecting a run taking
// far longer than before the candidate was loaded (work moved outside the timed call).
bool Evaluation::CheckPythonClocks(const PythonTiming& t, const std::vector<double>& enqueue_ms) {
  const double device = SetMedian(t.device_ms, t.sets), effective = verdict_.timing->median_ms, host = verdict_.timing->host_median_ms;
  // On a CPU device the candidate and the supervisor share the cores: a loaded machine adds
  // milliseconds of scheduling delay to the supervisor's clock, so only far larger gaps count
  // (the time taken is max(device, wall - overhead) either way).
  const bool cpu = torch_device_ == "cpu";
  const double gap = cpu ? 20.0 : std::max(1.0, backend_->host_gap_suspicious_ms);
  std::vector<double> wall_gap;
  for (size_t i = 0; i < t.wall_ms.size(); ++i) wall_gap.push_back(t.wall_ms[i] - t.device_ms[i]);
  const double excess = Median(wall_gap) - t.overhead_ms;
  if (host > 1.5 * device + gap || excess > 0.5 * device + gap) {
    Finish(VerdictStatus::kSuspicious, "the worker's wall clock (median " + std::to_string(Median(t.wall_ms)) +
                                           " ms, round trip " + std::to_string(t.overhead_ms) + " ms) is far above the device time the candidate's process reports (" +
                                           std::to_string(device) + " ms): work escapes the device timer (a side stream or host work) or the timers are patched", "host_time");
    return false;
  }
  // A call queued behind the head start: its host time, the head start left out, is the device's
  // time plus the launches the head start did not cover, give or take the synchronize's wake-up.
  // More than that is the device busy past the end event (work on a stream of the candidate's
  // own) or host work after it, which the supervisor's bound sees only beyond its tolerance.
  const double queue_ms = verdict_.fingerprint.value("device", json::object()).value("queue_ms", 0.0);
  if (queue_ms > 0) {  // CUDA only: the head start is a spin on the device
    const double hidden = QueuedHostExcess(t.host_ms, t.device_ms, enqueue_ms, queue_ms);
    // The same excess of the null runs, timed the same way before the candidate was loaded:
    // what this host, at this load, adds to a queued call that does nothing (0 when the report
    // has none). An H100 host showed honest gelu Triton calls 0.081-0.107 ms over in a crowd of
    // 8, past the 0.075 ms a quieter one had needed.
    const Calibration& c = t.calibration;
    const double null_hidden = QueuedHostExcess(c.null_host_ms, c.null_device_ms, c.null_enqueue_ms, queue_ms);
    if (hidden > 0.25 * device + std::max(kQueuedHostGapMs, null_hidden + kQueuedHostNullMarginMs)) {
      Finish(VerdictStatus::kSuspicious,
             fmt::format("the calls' host time exceeds their device time by {:.3f} ms (median) beyond what their launches "
                         "took past the {:.3f} ms head start (device median {:.4f} ms; {:.3f} ms for the null runs before "
                         "the candidate was loaded): work escapes the device timer (a stream of the candidate's own, or host "
                         "work after the call)",
                         hidden, queue_ms, device, null_hidden),
             "host_time");
      return false;
    }
  }
  struct Phase { const char* what; double median, calibrated; };
  for (const Phase& p : {Phase{"preparing a timed run (fresh inputs, cache flush)", Median(t.prepare_ms), t.calibration.prepare_ms},
                         Phase{"collecting a timed run's outputs", Median(t.collect_ms), t.calibration.collect_ms}}) {
    if (p.median - p.calibrated > UntimedWorkAllowanceMs(effective, p.calibrated, cpu)) {
      Finish(VerdictStatus::kSuspicious, std::string(p.what) + " took " + std::to_string(p.median) + " ms (median) against " +
                                             std::to_string(p.calibrated) + " ms before the candidate was loaded: work moved outside the timed call", "untimed_work");
      return false;
    }
  }
  if (host > 3 * device + 1.0) verdict_.warnings.push_back("host time is far above device time: work may escape the device timer");
  return true;
}

// Each sampled timed run's outputs against the reference for its own inputs, regenerated from
// its seed: in a Python reference job (KernelBench problems: the module's get_inputs), or here
// with GenerateInputs and the problem's C++ reference (kforge problems: the child drew them with
// the same generator, python/kforge_inputs.py). A job without seeds (its sets carried no
// generators) reused the check inputs: then its set's check reference.
// The sampled timed runs (either worker): each output against a trusted reference for that
// run's inputs, regenerated from the seed the worker's supervisor drew (fresh inputs), else the
// reference of the check set it reused.
Result<bool> Evaluation::CheckTimedSamples(const WorkerRun& run, const std::vector<TimedSample>& samples, bool fresh) {
  if (samples.empty()) return true;
  for (const TimedSample& s : samples) {
    if (s.set < 0 || s.set >= static_cast<int>(trials_.size())) {
      Finish(VerdictStatus::kRuntimeError, "the worker reported a timed run of an unknown set");
      return false;
    }
    if (fresh && !s.seed) {
      Finish(VerdictStatus::kRuntimeError, "the worker reported a timed run with fresh inputs but no seed");
      return false;
    }
  }
  std::vector<std::vector<std::vector<double>>> refs;
  if (fresh && pytorch_) {
    KF_ASSIGN_OR_RETURN(refs, PythonTimedReferences(samples));
  } else if (fresh) {
    KF_ASSIGN_OR_RETURN(refs, RegeneratedReferences(samples));
  } else {
    for (const TimedSample& smp : samples) refs.push_back(trials_[smp.set].reference);  // sets checked above
  }
  return CompareTimedSamples(run, samples, refs, fresh);
}

// Float64 references for sampled timed runs: a reference job whose sets carry the runs' seeds
// and `fresh`, so the worker regenerates exactly their inputs (same generator, same device).
Result<std::vector<std::vector<std::vector<double>>>> Evaluation::PythonTimedReferences(const std::vector<TimedSample>& samples) {
  auto t0 = std::chrono::steady_clock::now();
  json job = PythonJob("reference");
  job["sets"] = json::array();
  for (const TimedSample& s : samples) {
    const json& from = py_sets_.at(s.set);
    job["sets"].push_back({{"seed", s.seed ? json(*s.seed) : json()}, {"magnitude", s.magnitude.value_or(from.value("magnitude", 1.0))},
                           {"overrides", from["overrides"]}, {"fresh", true}});
  }
  job["lock_file"] = PythonLockFile();
  PythonJobFiles files;
  files.copies["problem.py"] = problem_.path;
  WorkerRun run;
  bool ran = false;
  if (standby_reference_) {
    run = standby_reference_->Run(job["sets"]);
    standby_reference_.reset();
    ran = run.finished() && !run.report.error;
    if (!ran) {
      verdict_.warnings.push_back("the standby reference job failed (" + run.process.Describe() + "): " + ErrorMessage(run) +
                                  "; ran it again");
      Cleanup(run);
    }
  }
  if (!ran) {
    KF_ASSIGN_OR_RETURN(run, RunPythonWorker(runner_, job, files, PythonLimits()));
  }
  AddPythonStages("python_timed_reference", run, &verdict_.stages);
  std::vector<std::vector<std::vector<double>>> refs;
  Status status = Status::Ok();
  if (!run.finished() || run.report.error || run.report.sets.size() != samples.size())
    status = Status::Internal("the reference for the sampled timed runs failed (" + run.process.Describe() + ", stage " + run.last_stage +
                              "): " + ErrorMessage(run) + "\n" + TailLines(run.process.err, 12, 3000));
  // Each sample's reference outputs read back (SHA-256 checked) and widened on all cores at once.
  std::vector<std::pair<size_t, size_t>> outputs;  // (sample, output)
  for (size_t k = 0; status.ok() && k < samples.size(); ++k) {
    const size_t n = trials_[samples[k].set].bound.outputs.size();
    if (run.report.sets[k].outputs.size() < n)
      status = Status::Internal("the reference for a sampled timed run has " + std::to_string(run.report.sets[k].outputs.size()) +
                                " outputs for " + std::to_string(n));
    refs.emplace_back(n);
    for (size_t o = 0; o < n; ++o) outputs.emplace_back(k, o);
  }
  std::vector<std::string> failed(outputs.size());
  if (status.ok()) {
    ParallelFor(outputs.size(), [&](size_t i) {
      const auto [k, o] = outputs[i];
      const TensorShape& shape = trials_[samples[k].set].bound.outputs[o];
      Result<std::vector<double>> v = WidenedReference(run, run.report.sets[k].outputs[o], shape.numel());
      if (!v.ok()) {
        failed[i] = "the reference for a sampled timed run has no usable output '" + shape.name + "'";
        return;
      }
      refs[k][o] = std::move(*v);
    });
  }
  for (const std::string& f : failed)
    if (status.ok() && !f.empty()) status = Status::Internal(f);
  Cleanup(run);
  Stage("timed_reference", t0);
  if (!status.ok()) return status;
  return refs;
}

Status Evaluation::PyTorchBaselines() {
  auto t0 = std::chrono::steady_clock::now();
  json plan = PythonJob("baseline");
  plan["timing"] = PythonTimingPlan(trials_.size());
  plan.erase("interpret");
  const json fields = {{"what", "pytorch baselines"}, {"statistic", kTimingStatistic}, {"problem", FileDigest(problem_.path)}, {"job", plan},
                       {"python", py_probe_}, {"worker", PythonWorkerDigests()}};
  std::optional<TrustedState::Baselines> kept;
  if (!problem_.path.empty()) kept = KeptBaselines(fields);
  std::map<std::string, TimingStats> measured;
  for (const std::string kind : {"eager", "compile"}) {
    if (kept) break;
    json job = PythonJob("baseline");
    job["baseline"] = kind;
    job["timing"] = PythonTimingPlan(trials_.size());
    job["lock_file"] = PythonLockFile();
    job.erase("interpret");
    PythonJobFiles files;
    files.copies["problem.py"] = problem_.path;
    Result<WorkerRun> run = RunPythonWorker(runner_, job, files, PythonLimits());
    if (!run.ok()) return run.status();
    std::string name = kind == "eager" ? "torch_eager" : "torch_compile";
    AddPythonStages("python_" + name, *run, &verdict_.stages);
    if (!run->finished() || run->report.error || !run->report.timing) {
      std::string msg = ErrorMessage(*run, run->process.Describe());
      verdict_.warnings.push_back(name + " baseline: " + msg.substr(0, 400));
    } else {
      // Timed as the candidate is: fresh inputs, the device median bounded by the wall clock.
      Result<PythonTiming> t = ParsePythonTiming(*run->report.timing);
      if (t.ok()) measured[name] = TimingFromWorker(*run->report.timing);
      else verdict_.warnings.push_back(name + " baseline: " + t.status().message());
      verdict_.stages[name + "_first_call"] = run->report.first_call_seconds;
    }
    Cleanup(*run);
  }
  if (kept) measured = kept->timings;
  else if (measured.count("torch_eager") && !problem_.path.empty()) KeepBaselines(fields, measured);  // torch.compile may not exist here
  for (const auto& [name, t] : measured) verdict_.baselines[name] = t;
  auto eager = verdict_.baselines.find("torch_eager"), compiled = verdict_.baselines.find("torch_compile");
  if (eager != verdict_.baselines.end() && compiled != verdict_.baselines.end())
    verdict_.baselines["torch_best"] = eager->second.median_ms <= compiled->second.median_ms ? eager->second : compiled->second;
  else if (eager != verdict_.baselines.end())
    verdict_.baselines["torch_best"] = eager->second;
  if (verdict_.timing && verdict_.timing->median_ms > 0)
    for (const auto& [name, t] : verdict_.baselines) verdict_.speedups[name] = t.median_ms / verdict_.timing->median_ms;
  Stage("baselines", t0);
  return Status::Ok();
}

Result<Verdict> Evaluation::RunBaselinesOnly() {
  backend_ = FindBackend(options_.backend);
  if (!backend_) return Status::InvalidArgument("unknown backend '" + options_.backend + "'; known: " + BackendNames());
  if (problem_.format != ProblemFormat::kPyTorch)
    return Status::InvalidArgument("problem '" + problem_.name + "' is not a PyTorch problem: it has no eager or torch.compile baseline");
  verdict_.problem = problem_.name;
  verdict_.backend = backend_->name;
  KF_RETURN_IF_ERROR(ChoosePrecision());
  KF_RETURN_IF_ERROR(StartPython());
  python_candidate_ = true;  // no native inputs are needed
  KF_RETURN_IF_ERROR(PreparePyTorch());
  RecordTolerances(trials_[0].bound.outputs);
  verdict_.flops = trials_[0].bound.flops;
  verdict_.bytes = trials_[0].bound.bytes;
  KF_RETURN_IF_ERROR(PyTorchBaselines());
  Finish(VerdictStatus::kCorrect, "baselines only: no candidate was judged");
  return verdict_;
}

// --- KernelTimer: timing only (confirmation, docs/evaluation.md "Confirmed speedups"). -------

// The gates up to the reference of the timed input sets, once: static check, compile,
// trials (the caller's options ask for two seeds and no hidden sizes), reference. A kernel that
// fails a gate here keeps that verdict; TimeOnce returns it.
Status Evaluation::PrepareTimer(const std::string& baseline) {
  timing_only_ = true;
  timer_baseline_ = baseline;
  backend_ = FindBackend(options_.backend);
  if (!backend_) return Status::InvalidArgument("unknown backend '" + options_.backend + "'; known: " + BackendNames());
  verdict_.problem = problem_.name;
  verdict_.backend = backend_->name;
  if (baseline.empty()) {
    KF_ASSIGN_OR_RETURN(source_, ReadFile(candidate_));
    verdict_.candidate = candidate_.string();
    verdict_.candidate_hash = HashHex(source_);
    python_candidate_ = backend_->python_hosted || candidate_.extension() == ".py";
    if (!StaticGate()) return Status::Ok();
  } else if (baseline != "torch_eager" && baseline != "torch_compile") {
    return Status::InvalidArgument("unknown baseline '" + baseline + "' to time; known: torch_eager, torch_compile");
  } else {
    python_candidate_ = true;  // as in RunBaselinesOnly: no native inputs are needed
    verdict_.candidate = baseline;
  }
  KF_RETURN_IF_ERROR(StartPython());
  if (!baseline.empty() && !pytorch_)
    return Status::InvalidArgument("baseline '" + baseline + "' needs a PyTorch problem; '" + problem_.name + "' is not one");
  if (baseline.empty()) {
    KF_ASSIGN_OR_RETURN(bool compiled, CompileGate());
    if (!compiled) return Status::Ok();
  }
  if (pytorch_) {
    KF_RETURN_IF_ERROR(PreparePyTorch());
  } else {
    KF_RETURN_IF_ERROR(PrepareTrials());
    KF_RETURN_IF_ERROR(ComputeReference());
  }
  timer_ready_ = true;
  prepared_ = verdict_;
  return Status::Ok();
}

// One timed job, its timed outputs checked (CheckTiming), and the speed-of-light gate.
Result<Verdict> Evaluation::TimeOnce() {
  if (!timer_ready_) return verdict_;
  verdict_ = prepared_;
  if (!timer_baseline_.empty()) {
    KF_ASSIGN_OR_RETURN(TimingStats t, TimePyTorchBaseline(timer_baseline_));
    verdict_.timing = t;
    Finish(VerdictStatus::kCorrect, "timed (" + timer_baseline_ + " baseline)");
    return verdict_;
  }
  KF_ASSIGN_OR_RETURN(bool passed, python_candidate_ ? RunPythonCandidate() : RunCandidate());
  if (!passed) return verdict_;
  Finish(VerdictStatus::kCorrect, "timed without check trials (confirmation)");
  KF_RETURN_IF_ERROR(SpeedOfLight());
  return verdict_;
}

// One PyTorch baseline's timing job (PyTorchBaselines times both for a judgement).
Result<TimingStats> Evaluation::TimePyTorchBaseline(const std::string& name) {
  json job = PythonJob("baseline");
  job["baseline"] = name == "torch_eager" ? "eager" : "compile";
  job["timing"] = PythonTimingPlan(trials_.size());
  job["lock_file"] = PythonLockFile();
  job.erase("interpret");
  PythonJobFiles files;
  files.copies["problem.py"] = problem_.path;
  KF_ASSIGN_OR_RETURN(WorkerRun run, RunPythonWorker(runner_, job, files, PythonLimits()));
  AddPythonStages("python_" + name, run, &verdict_.stages);
  Status failed = Status::Ok();
  if (!run.finished() || run.report.error || !run.report.timing)
    failed = Status::Internal(name + " baseline failed: " + ErrorMessage(run, run.process.Describe()).substr(0, 400));
  TimingStats t;
  if (failed.ok()) {
    // As a judgement's baselines are taken (PyTorchBaselines): each run as judged, by set.
    Result<PythonTiming> pt = ParsePythonTiming(*run.report.timing);
    if (pt.ok()) t = TimingFromWorker(*run.report.timing);
    else failed = pt.status();
  }
  Cleanup(run);
  if (!failed.ok()) return failed;
  return t;
}

class EvaluationTimer final : public KernelTimer {
 public:
  EvaluationTimer(const Problem& p, const ConfirmSubject& s, const EvalOptions& o, ProcessRunner& r)
      : problem_(p), options_(o), evaluation_(problem_, s.source, options_, r) {}
  Status Prepare(const std::string& baseline) {
    try {
      return evaluation_.PrepareTimer(baseline);
    } catch (const nlohmann::json::exception& e) {  // Evaluate says what can still throw
      return Status::Internal(std::string("a JSON record the judge read is malformed: ") + e.what());
    }
  }
  Result<Verdict> Time() override {
    try {
      return evaluation_.TimeOnce();
    } catch (const nlohmann::json::exception& e) {  // Evaluate says what can still throw
      return evaluation_.Malformed(e.what());
    }
  }

 private:
  const Problem problem_;     // evaluation_ holds references to these two
  const EvalOptions options_;
  Evaluation evaluation_;
};

// The stages of a judgement. Each may end it: a verdict (the static check, a compile error, a
// failed check or timing gate), or an error Status where kforge itself failed.
Result<Verdict> Evaluation::Run() {
  KF_ASSIGN_OR_RETURN(bool loaded, Load());
  if (!loaded) return verdict_;
  KF_RETURN_IF_ERROR(StartPython());
  KF_ASSIGN_OR_RETURN(bool compiled, CompileGate());
  if (!compiled) return verdict_;
  KF_RETURN_IF_ERROR(Reference());
  KF_ASSIGN_OR_RETURN(bool passed, JudgeCandidate());  // checks and timing, in one job
  Advisory();
  KF_RETURN_IF_ERROR(Conclude(passed));
  return verdict_;
}

// The candidate read, the run's precision policy chosen, the static check: false when that
// check decided the verdict.
Result<bool> Evaluation::Load() {
  backend_ = FindBackend(options_.backend);
  if (!backend_) return Status::InvalidArgument("unknown backend '" + options_.backend + "'; known: " + BackendNames());
  KF_ASSIGN_OR_RETURN(source_, ReadFile(candidate_));
  verdict_.problem = problem_.name;
  verdict_.backend = backend_->name;
  verdict_.candidate = candidate_.string();
  verdict_.candidate_hash = HashHex(source_);
  auto t_setup = std::chrono::steady_clock::now();
  KF_RETURN_IF_ERROR(ChoosePrecision());
  verdict_.fingerprint["compiler"] = ToolchainVersion(runner_, *backend_);
  verdict_.fingerprint["kforge"] = "0.1.0";
  python_candidate_ = backend_->python_hosted || candidate_.extension() == ".py";
  if (!StaticGate()) return false;
  Stage("setup", t_setup);
  return true;
}

// The check trials and their references: a PyTorch module's reference job, or the problem's
// inputs and C++ reference; then the tolerances the outputs are held to.
Status Evaluation::Reference() {
  if (pytorch_) {
    KF_RETURN_IF_ERROR(PreparePyTorch());
  } else {
    auto t_inputs = std::chrono::steady_clock::now();
    KF_RETURN_IF_ERROR(PrepareTrials());
    Stage("inputs", t_inputs);
    KF_RETURN_IF_ERROR(ComputeReference());
  }
  RecordTolerances(trials_[0].bound.outputs);
  return Status::Ok();
}

// What a judged candidate's verdict adds: correct, the speed-of-light gate and the kernel
// accounting; for a correct timed one, the baselines and their speedups.
Status Evaluation::Conclude(bool passed) {
  if (passed) {
    Finish(VerdictStatus::kCorrect, options_.timing ? "" : "correct (not timed)");
    auto t_sol = std::chrono::steady_clock::now();
    if (options_.timing) KF_RETURN_IF_ERROR(SpeedOfLight());
    Stage("speed_of_light", t_sol);
  }
  KernelAccountingGate();  // on every verdict with a record; it labels only correct ones
  if (!passed || !options_.timing || verdict_.status != VerdictStatus::kCorrect) return Status::Ok();
  if (options_.baselines) KF_RETURN_IF_ERROR(pytorch_ ? PyTorchBaselines() : Baselines());
  verdict_.message = "passed " + std::to_string(trials_.size()) + " trials";
  return Status::Ok();
}

}  // namespace

Result<Verdict> MeasureBaselines(const Problem& problem, const EvalOptions& options, ProcessRunner& runner) {
  Evaluation e(problem, "", options, runner);
  try {
    return e.RunBaselinesOnly();
  } catch (const nlohmann::json::exception& ex) {  // Evaluate says what can still throw
    return Status::Internal(std::string("a JSON record the judge read is malformed: ") + ex.what());
  }
}

// Workers' reports are typed when read (WorkerRun::report) and throw nothing; a report of the
// wrong shape is a runtime_error. The catch is a backstop for the JSON still read as such on the
// way: the workers' probes (ProbeWorker, ProbePython), the cache's files (peaks/, kept baselines'
// timings) and the theoretical peaks in the verdict's fingerprint.
Result<Verdict> Evaluate(const Problem& problem, const fs::path& candidate, const EvalOptions& options,
                         ProcessRunner& runner) {
  Evaluation e(problem, candidate, options, runner);
  try {
    return e.Run();
  } catch (const nlohmann::json::exception& ex) {
    return e.Malformed(ex.what());
  }
}

// Two timed input sets and nothing beyond the timing: no hidden sizes, baselines or reports.
Result<std::unique_ptr<KernelTimer>> NewKernelTimer(const Problem& problem, const ConfirmSubject& subject,
                                                    const EvalOptions& options, ProcessRunner& runner) {
  EvalOptions o = options;
  o.seeds = 2;
  o.hidden_sizes = false;
  o.baselines = false;
  o.timing = true;
  o.profile = o.sanitize = o.racecheck = false;
  // Confirmation is where a speedup's precision is decided: each round spends its budget rather
  // than stopping at the judgement's median precision (a round's window shorter than a burst of
  // load on the machine moved a confirmed 2-pass/1-pass ratio from about 1.4 to 1.09).
  o.precision_target = 0;
  auto timer = std::make_unique<EvaluationTimer>(problem, subject, o, runner);
  KF_RETURN_IF_ERROR(timer->Prepare(subject.baseline));
  return std::unique_ptr<KernelTimer>(std::move(timer));
}

}  // namespace kforge
