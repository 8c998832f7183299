// Specifications of the evaluation gates (EVALUATION.md), run end to end through the sandboxed
// worker with the fixture problems in testdata/ and the deliberately broken candidates in
// testdata/bad/.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <chrono>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "backend/registry.h"
#include "base/device_lock.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "eval/compiler.h"
#include "eval/inputs.h"
#include "eval/worker_client.h"
#include "kforge/eval.h"
#include "worker/protocol.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;

// A short timing budget: these tests judge what a verdict says, not how fast the kernel is.
EvalOptions QuickOptions() {
  EvalOptions o;
  o.budget_ms = 30;
  o.min_runs = 3;
  o.max_runs = 20;
  return o;
}

class EvalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A private cache, traversable by the sandbox user.
    static std::string dir = MakeScratchDir("evaltest-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }

  Verdict Eval(const std::string& problem, const fs::path& candidate, const std::string& backend = "cpp") {
    Result<Problem> p = LoadProblem(kData / problem / "problem.toml");
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    EvalOptions o = QuickOptions();
    o.backend = backend;
    o.timeout_seconds = 20;
    o.memory_bytes = 2ull << 30;
    o.baselines = baselines_;
    o.precision = precision_;
    o.timing = timing_;
    Result<Verdict> v = Evaluate(*p, candidate, o, *runner_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }
  Verdict Bad(const std::string& name) { return Eval("scale", kData / "bad" / (name + ".cc")); }

  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
  bool baselines_ = false;
  std::optional<PrecisionPolicy> precision_;
  bool timing_ = true;
};

// Whether /proc/cpuinfo's flags name `flag` (the cache flush's choice, checked independently).
bool CpuFlagged(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// kforge-worker locks the device itself (job.lock_file): shared for the job, exclusive from each
// null and timed run's flush to the end of its call. Beside another shared holder (another
// job's checks) it opens, uploads and checks at once and waits only to time.
TEST_F(EvalTest, GivenAnotherSharedHolderTheWorkerChecksAtOnceAndWaitsOnlyForItsTimedRuns) {
  ASSERT_EQ(Eval("scale", kData / "scale" / "good.cc").status, VerdictStatus::kCorrect);  // peaks and build kept
  const std::string name = DeviceLockName(*FindBackend("cpp"), 0);
  DeviceLockFile other(DeviceLockPath(name));
  ASSERT_TRUE(other.usable());
  other.Shared();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    other.Release();
  });
  Verdict v = Eval("scale", kData / "scale" / "good.cc");
  release.join();
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  const nlohmann::json& phases = v.worker_phases;
  EXPECT_GT(phases.value("calibration_lock_wait", 0.0), 1500) << phases.dump();  // the first null run's flush waited
  EXPECT_TRUE(phases.contains("timing_lock_wait")) << phases.dump();
}

TEST_F(EvalTest, GivenACorrectCandidateItIsJudgedCorrectAndTimed) {
  baselines_ = true;
  Verdict v = Eval("scale", kData / "scale" / "good.cc");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  ASSERT_TRUE(v.timing.has_value());
  EXPECT_GE(v.timing->runs, 3);
  EXPECT_GT(v.timing->median_ms, 0);
  EXPECT_GT(v.floor_ms, 0);
  EXPECT_GT(v.sol_percent, 0);
  EXPECT_EQ(v.trials.size(), 7u);  // 5 seeds + 2 at the hidden size
  EXPECT_EQ(v.fingerprint["device"].value("cache_flush", ""),
            CpuFlagged("clflushopt") ? "touched buffers' lines evicted" : "overwrite");
  EXPECT_TRUE(v.baselines.count("reference"));
  EXPECT_TRUE(v.speedups.count("seed"));
  nlohmann::json j = v.ToJson();
  EXPECT_EQ(j["status"], "correct");
  EXPECT_TRUE(j["fingerprint"]["device"].contains("name"));
  EXPECT_TRUE(j["limits"].contains("wall_seconds"));
}

// The references of sampled timed runs are computed by a job that draws each run's inputs from
// its seed itself (TensorFile::draw_seed): the same values the orchestrator would have drawn
// and written, widened to float64 the same way, so the same references, byte for byte.
TEST_F(EvalTest, GivenASeedTheReferenceJobDrawsTheInputsTheOrchestratorWouldHaveWritten) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Result<BoundProblem> b = Bind(*p, {}, false);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Result<CompileOutput> ref = Compile(*runner_, *FindBackend("cpp"), p->reference, CompileKind::kReference);
  ASSERT_TRUE(ref.ok() && ref->ok) << (ref.ok() ? ref->log : ref.status().ToString());
  const uint64_t seed = 0x5eed1234abcdull;
  const double magnitude = 4;
  Job job;
  job.backend = "cpp";
  job.entry = "kf_reference_f64";
  job.check_twice = false;
  WorkerFiles files;
  files.library = ref->library;
  for (int which = 0; which < 2; ++which) {
    InputSet set;
    set.magnitude = magnitude;
    for (const SizeParam& sp : p->sizes) set.attrs.push_back({sp.name, b->sizes.at(sp.name), static_cast<double>(b->sizes.at(sp.name))});
    for (const Attribute& a : p->attrs) set.attrs.push_back({a.name, static_cast<int64_t>(a.value), a.value});
    std::vector<HostTensor> written;
    for (size_t k = 0; k < b->inputs.size(); ++k) {
      TensorShape t = b->inputs[k];
      t.dtype = DType::kFloat64;
      TensorFile f{t, "", std::nullopt, std::nullopt};
      if (which == 0) {
        f.gen = InputGenerator{p->inputs[k].dist, InputKey(*b, k), b->inputs[k].dtype};
        f.draw_seed = seed;
      } else {
        written.push_back(AsFloat64(GenerateInputs(*b, seed, magnitude)[k]));
      }
      set.inputs.push_back(f);
    }
    for (TensorShape t : b->outputs) {
      t.dtype = DType::kFloat64;
      set.outputs.push_back({t, "", std::nullopt, std::nullopt});
    }
    job.sets.push_back(set);
    job.checks.push_back(which);
    files.inputs.push_back(written);
  }
  Limits limits;
  limits.wall_seconds = 30;
  Result<WorkerRun> run = RunWorker(*runner_, job, files, limits);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_TRUE(run->finished() && !run->result.contains("error")) << run->result.dump() << run->process.err;
  EXPECT_EQ(run->result["input_hashes"][0], run->result["input_hashes"][1]);
  for (const TensorShape& out : b->outputs) {
    Result<std::shared_ptr<const std::string>> drawn = run->ReadOutput(CheckOutputFile(0, 'a', out.name), static_cast<size_t>(out.numel()) * 8);
    Result<std::shared_ptr<const std::string>> written = run->ReadOutput(CheckOutputFile(1, 'a', out.name), static_cast<size_t>(out.numel()) * 8);
    ASSERT_TRUE(drawn.ok() && written.ok());
    EXPECT_EQ((*drawn)->size(), static_cast<size_t>(out.numel()) * 8);
    EXPECT_TRUE(**drawn == **written) << "the drawn inputs' reference differs from the written inputs'";
  }
  Cleanup(*run);
  // A drawn input that would narrow is refused, not silently converted.
  job.sets[0].inputs[0].gen->dtype = DType::kInt32;
  run = RunWorker(*runner_, job, files, limits);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->result.contains("error")) << run->result.dump();
  Cleanup(*run);
}

// Runs everything in the real sandbox and records, for each kforge-worker job, its entry, the
// files in its folder when it starts and whether every input of every set carries a draw seed.
class JobFolderRunner : public ProcessRunner {
 public:
  struct Seen {
    std::string entry;
    std::vector<std::string> files;
    bool all_drawn = true;
  };
  ProcessResult Run(const ProcessSpec& spec) override {
    if (spec.argv.size() >= 3 && spec.argv[1] == "run") {
      const fs::path dir = spec.argv[2];
      Seen seen;
      for (const auto& e : fs::directory_iterator(dir)) seen.files.push_back(e.path().filename().string());
      Result<std::string> text = ReadFile(dir / "job.json");
      nlohmann::json job = nlohmann::json::parse(text.ok() ? *text : "{}", nullptr, false);
      seen.entry = job.value("entry", "");
      for (const nlohmann::json& set : job.value("sets", nlohmann::json::array()))
        for (const nlohmann::json& in : set.value("inputs", nlohmann::json::array())) seen.all_drawn &= in.contains("draw_seed");
      std::lock_guard<std::mutex> lock(mu_);  // the sampled runs' reference jobs run side by side
      jobs_.push_back(seen);
    }
    return real_->Run(spec);
  }
  std::vector<Seen> jobs_;  // read after Evaluate returns

 private:
  std::mutex mu_;
  std::unique_ptr<ProcessRunner> real_ = NewSandboxRunner();
};

// A kforge problem's inputs are drawn by kforge-worker from each trial's seed in every job: the
// reference's, the candidate's and the baselines'. The orchestrator writes no input file, and
// the candidate, judged against references of inputs drawn the same way, is correct; a wrong
// one is still caught.
TEST_F(EvalTest, GivenAKforgeProblemEveryWorkerJobDrawsItsInputsAndNoInputFileIsWritten) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  ASSERT_TRUE(p.ok());
  EvalOptions o = QuickOptions();
  o.trusted_state = false;  // every reference job runs here
  for (const fs::path& candidate : {kData / "scale" / "good.cc", kData / "bad" / "off_by_one.cc"}) {
    JobFolderRunner runner;
    Result<Verdict> v = Evaluate(*p, candidate, o, runner);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->status, candidate.filename() == "good.cc" ? VerdictStatus::kCorrect : VerdictStatus::kWrongOutput)
        << candidate << ": " << v->message;
    std::set<std::string> entries;
    for (const JobFolderRunner::Seen& job : runner.jobs_) {
      entries.insert(job.entry);
      EXPECT_TRUE(job.all_drawn) << job.entry << ": an input without a draw seed";
      for (const std::string& f : job.files) EXPECT_EQ(f.rfind("in_", 0), std::string::npos) << job.entry << " was given input file " << f;
    }
    EXPECT_TRUE(entries.contains("kf_reference_f64") || entries.contains("kf_reference_native"));
    EXPECT_TRUE(entries.contains("kf_run"));
  }
}

TEST_F(EvalTest, GivenAnOffByOneTheUnwrittenElementFails) {
  Verdict v = Bad("off_by_one");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput);
  EXPECT_NE(v.message.find("poison"), std::string::npos) << v.message;
  const auto& first = v.trials.back()["outputs"]["y"]["first_mismatches"];
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0]["index"], 4095);
}

TEST_F(EvalTest, GivenAnUnwrittenTailTheHiddenSizeCatchesIt) {
  Verdict v = Bad("unwritten_tail");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput);
  EXPECT_NE(v.message.find("hidden size"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenAHardCodedSizeTheOverrunIsCaught) {
  Verdict v = Bad("overfit");
  EXPECT_NE(v.status, VerdictStatus::kCorrect);
  EXPECT_NE(v.message.find("past the end"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenAMutatedInputItFails) {
  Verdict v = Bad("mutates_input");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput);
  EXPECT_NE(v.message.find("modified its inputs"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenAllZerosOnANormalProblemItFails) {
  EXPECT_EQ(Bad("all_zero").status, VerdictStatus::kWrongOutput);
}

TEST_F(EvalTest, GivenAllZerosOnATinyProblemTheRmsCheckCatchesItAndTheProblemIsFlagged) {
  Verdict v = Eval("tiny", kData / "bad" / "all_zero.cc");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput);
  EXPECT_NE(v.message.find("RMS"), std::string::npos) << v.message;
  ASSERT_FALSE(v.warnings.empty());
  EXPECT_NE(v.warnings[0].find("degenerate"), std::string::npos);
}

TEST_F(EvalTest, GivenReadsPastTheEndItFails) {
  EXPECT_NE(Bad("reads_past_end").status, VerdictStatus::kCorrect);
}

TEST_F(EvalTest, GivenANondeterministicResultItFails) {
  Verdict v = Bad("nondeterministic");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput);
  EXPECT_NE(v.message.find("differs between two runs"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenReadsOfUninitialisedScratchTheTwoPoisonsDisagree) {
  Verdict v = Bad("reads_scratch");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput);
}

TEST_F(EvalTest, GivenAResultCacheKeyedByPointerThePoisonedRerunExposesIt) {
  Verdict v = Bad("result_cache");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput);
}

TEST_F(EvalTest, GivenACrashItIsARuntimeErrorWithTheSignal) {
  Verdict v = Bad("crash");
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError);
  EXPECT_NE(v.message.find("SIGSEGV"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("check set 0"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenAHangItTimesOut) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  EvalOptions o;
  o.timeout_seconds = 2;
  o.baselines = false;
  auto t0 = std::chrono::steady_clock::now();
  Result<Verdict> v = Evaluate(*p, kData / "bad" / "hang.cc", o, *runner_);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->status, VerdictStatus::kTimeout);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
}

TEST_F(EvalTest, GivenAnOomItIsARuntimeError) {
  EXPECT_EQ(Bad("oom").status, VerdictStatus::kRuntimeError);
}

TEST_F(EvalTest, GivenAForkBombItIsContained) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  EvalOptions o;
  o.timeout_seconds = 3;
  o.baselines = false;
  auto t0 = std::chrono::steady_clock::now();
  Result<Verdict> v = Evaluate(*p, kData / "bad" / "fork_bomb.cc", o, *runner_);
  ASSERT_TRUE(v.ok());
  EXPECT_NE(v->status, VerdictStatus::kCorrect);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
}

TEST_F(EvalTest, GivenAGigabyteOfStdoutItIsCutOff) {
  Verdict v = Bad("stdout_flood");
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError);
  EXPECT_NE(v.message.find("flood"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenStdThreadTheStaticCheckRefusesIt) {
  Verdict v = Bad("uses_thread");
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious);
  EXPECT_EQ(v.gate, "static");
}

TEST_F(EvalTest, GivenAHiddenBackgroundThreadTheThreadCountCatchesIt) {
  Verdict v = Bad("background_thread");
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
  EXPECT_EQ(v.gate, "threads");
}

TEST_F(EvalTest, GivenNoEntryPointItSaysWhatToExport) {
  Verdict v = Bad("no_entry");
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError);
  EXPECT_NE(v.message.find("kf_run"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenAnErrorReturnTheCandidatesMessageIsKept) {
  Verdict v = Bad("returns_error");
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError);
  EXPECT_NE(v.message.find("unsupported size"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenACompileErrorTheLogNamesTheLine) {
  Verdict v = Bad("compile_error");
  EXPECT_EQ(v.status, VerdictStatus::kCompileError);
  // The compiler is given candidate.cc; the log names the candidate's own file.
  EXPECT_NE(v.compiler_output.find("compile_error.cc:3:"), std::string::npos) << v.compiler_output;
  EXPECT_EQ(v.compiler_output.find("candidate.cc"), std::string::npos) << v.compiler_output;
}

TEST_F(EvalTest, GivenATimeBelowTheTheoreticalFloorItIsSuspicious) {
  // 8 MB of declared traffic per element: even every core's load/store ports could not.
  Verdict v = Eval("impossible", kData / "scale" / "good.cc");
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious);
  EXPECT_EQ(v.gate, "speed_of_light");
  EXPECT_NE(v.message.find("theoretical speed-of-light floor"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("load/store ports"), std::string::npos) << v.message;
  nlohmann::json j = v.ToJson();
  EXPECT_GT(j["roofline"]["floor_ms"].get<double>(), 0);
  EXPECT_GT(j["roofline"]["achievable_floor_ms"].get<double>(), j["roofline"]["floor_ms"].get<double>());
  EXPECT_EQ(j["roofline"]["theoretical"]["bound"], "memory");
}

TEST_F(EvalTest, GivenATimeBelowTheMeasuredPeaksButAboveTheTheoreticalFloorItIsCorrectWithAWarning) {
  // The fixture declares 16x the bytes it moves: faster than the measured bandwidth allows
  // (as when peaks were measured on a busy machine), far slower than the theoretical floor.
  Verdict v = Eval("fast_but_possible", kData / "scale" / "good.cc");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_GT(v.sol_percent, 100);
  EXPECT_LT(v.floor_ms, v.timing->median_ms);
  EXPECT_GT(v.achievable_floor_ms, v.timing->median_ms);
  bool warned = false;
  for (const std::string& w : v.warnings)
    warned = warned || (w.find("faster than the achievable peaks") != std::string::npos &&
                        w.find("the theoretical floor") != std::string::npos);
  EXPECT_TRUE(warned) << nlohmann::json(v.warnings).dump();
  nlohmann::json j = v.ToJson();
  EXPECT_EQ(j["fingerprint"]["peaks"]["kind"], "achievable (measured)");
  EXPECT_TRUE(j["fingerprint"]["theoretical_peaks"].contains("units"));
  EXPECT_EQ(j["roofline"]["achievable"]["bound"], "memory");
}

// A SOL above 100% measures cached peaks again, but not within the hour after the last time:
// the cache records when, and the verdict and its warning say how long ago.
TEST_F(EvalTest, GivenPeaksMeasuredAgainWithinTheHourASolAbove100DoesNotMeasureThemAgain) {
  ASSERT_EQ(Eval("fast_but_possible", kData / "scale" / "good.cc").status, VerdictStatus::kCorrect);  // peaks cached
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(std::getenv("KFORGE_CACHE_DIR")) / "peaks"))
    if (e.path().filename().string().rfind("cpp-0-", 0) == 0) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  auto rewrite = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = nlohmann::json::parse(ReadFile(files[0]).value());
    change(j);
    ASSERT_TRUE(WriteFileAtomic(files[0], j.dump()).ok());
  };
  auto judge = [&] {
    Verdict v = Eval("fast_but_possible", kData / "scale" / "good.cc");
    EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
    EXPECT_GT(v.sol_percent, 100);
    return v;
  };
  rewrite([](nlohmann::json& j) { j.erase("remeasured_unix"); });
  Verdict first = judge();
  EXPECT_TRUE(first.roofline["achievable"]["remeasured"].get<bool>()) << first.roofline.dump();
  EXPECT_TRUE(nlohmann::json::parse(ReadFile(files[0]).value()).contains("remeasured_unix"));

  Verdict second = judge();
  EXPECT_FALSE(second.roofline["achievable"]["remeasured"].get<bool>()) << second.roofline.dump();
  EXPECT_LT(second.roofline["achievable"].value("remeasured_age_s", -1.0), 600) << second.roofline.dump();
  EXPECT_GE(second.roofline["achievable"].value("remeasured_age_s", -1.0), 0);
  bool said = false;
  for (const std::string& w : second.warnings) said |= w.find("measured again 0 min ago") != std::string::npos;
  EXPECT_TRUE(said) << nlohmann::json(second.warnings).dump();

  rewrite([](nlohmann::json& j) { j["remeasured_unix"] = static_cast<double>(std::time(nullptr)) - 7200; });
  Verdict third = judge();
  EXPECT_TRUE(third.roofline["achievable"]["remeasured"].get<bool>()) << third.roofline.dump();
}

TEST_F(EvalTest, GivenACorrectVerdictASolAbove100IsNeverSilent) {
  Verdict v = Eval("scale", kData / "scale" / "good.cc");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_LT(v.floor_ms, v.achievable_floor_ms);  // the theoretical peaks are above the measured ones
  bool warned = false;
  for (const std::string& w : v.warnings) warned = warned || w.find("faster than the achievable peaks") != std::string::npos;
  EXPECT_EQ(warned, v.sol_percent > 100) << v.sol_percent;
}

TEST_F(EvalTest, GivenAMissingCandidateFileItIsAnError) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  Result<Verdict> v = Evaluate(*p, kData / "bad" / "does_not_exist.cc", EvalOptions{}, *runner_);
  EXPECT_FALSE(v.ok());
}

// --- Precision policies, on testdata/dot (64 dot products of length 4096, normal inputs). ----
// Untimed: the policy changes the comparisons only, and the speed-of-light gate of a 1 MB
// problem on a busy machine is not what these tests are about.

TEST_F(EvalTest, GivenFloat32MathOnALongReductionItIsCorrectUnderTheDefaultStrictPolicy) {
  timing_ = false;
  Verdict v = Eval("dot", kData / "dot" / "fp32.cc");
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(v.precision["policy"], "strict");
  EXPECT_EQ(v.precision["tolerance"]["y"]["rtol"], 1e-4);
  EXPECT_NE(v.Summary().find("precision strict  y: |out - ref| <= 0.0001 + 0.0001*|ref|"),
            std::string::npos)
      << v.Summary();
}

TEST_F(EvalTest, GivenTf32MathOnALongReductionItIsWrongOutputUnderStrictAndCorrectUnderTf32) {
  timing_ = false;
  precision_ = PrecisionPolicy::kStrict;
  Verdict strict = Eval("dot", kData / "dot" / "tf32.cc");
  EXPECT_EQ(strict.status, VerdictStatus::kWrongOutput) << strict.message;
  EXPECT_NE(strict.message.find("outside atol + rtol*|ref|"), std::string::npos) << strict.message;
  EXPECT_EQ(strict.ToJson()["precision"]["policy"], "strict");
  precision_ = PrecisionPolicy::kTf32;
  Verdict tf32 = Eval("dot", kData / "dot" / "tf32.cc");
  EXPECT_EQ(tf32.status, VerdictStatus::kCorrect) << tf32.message;
  nlohmann::json j = tf32.ToJson();
  EXPECT_EQ(j["precision"]["policy"], "tf32");
  EXPECT_DOUBLE_EQ(j["precision"]["tolerance"]["y"]["atol_rms"].get<double>(),
                   8 * std::ldexp(1.0, -11));
  EXPECT_NE(j["precision"]["tolerance"]["y"]["rule"].get<std::string>().find("RMS(ref)"),
            std::string::npos);
  EXPECT_EQ(j["trials"].size(), 7u);  // every trial, hidden sizes and magnitude 4 included
}

TEST_F(EvalTest, GivenBf16MathOnALongReductionItFailsTf32AndPassesBf16) {
  timing_ = false;
  precision_ = PrecisionPolicy::kTf32;
  EXPECT_EQ(Eval("dot", kData / "dot" / "bf16.cc").status, VerdictStatus::kWrongOutput);
  precision_ = PrecisionPolicy::kBf16;
  Verdict v = Eval("dot", kData / "dot" / "bf16.cc");
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(v.precision["policy"], "bf16");
}

TEST_F(EvalTest, GivenAPolicyTheProblemDoesNotAllowTheEvaluationFailsSayingWhichItAllows) {
  Result<Problem> p = LoadProblem(kData / "dot" / "problem.toml");
  ASSERT_TRUE(p.ok());
  p->precision_allowed = {PrecisionPolicy::kStrict};
  EvalOptions o;
  o.precision = PrecisionPolicy::kBf16;
  Result<Verdict> v = Evaluate(*p, kData / "dot" / "bf16.cc", o, *runner_);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("it allows: strict"), std::string::npos)
      << v.status().message();
}

TEST_F(EvalTest, GivenADeclaredPolicyItIsTheDefault) {
  Result<Problem> p = LoadProblem(kData / "dot" / "problem.toml");
  ASSERT_TRUE(p.ok());
  p->precision = PrecisionPolicy::kTf32;
  EvalOptions o;
  o.timing = false;
  Result<Verdict> v = Evaluate(*p, kData / "dot" / "tf32.cc", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
  EXPECT_EQ(v->precision["policy"], "tf32");
}

TEST_F(EvalTest, GivenAnOpenClCandidateItIsJudgedCorrect) {
  Verdict v = Eval("scale", kData / "scale" / "good_opencl.cpp", "opencl");
  if (v.status == VerdictStatus::kRuntimeError && v.message.find("open device") != std::string::npos)
    GTEST_SKIP() << "no OpenCL device here: " << v.message;
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_TRUE(v.precision.contains("build_options"));
  // PoCL's CPU device maps its buffers in place: their lines are evicted, not 2 x the host's
  // LLC filled (a 480 MiB L3 made that 140 ms a run on a VM).
  const nlohmann::json device = v.fingerprint.value("device", nlohmann::json::object());
  if (device.value("kind", "") != "gpu" && CpuFlagged("clflushopt") &&
      device.value("platform", "").find("Portable Computing Language") != std::string::npos) {
    EXPECT_EQ(device.value("cache_flush", ""), "touched buffers' lines evicted (in-place maps)") << device.dump();
  }
  // As root every job ran under an id of its own, with PoCL's kernel cache in a folder of that
  // id that no other id may enter (PoCL makes its files 0700/0600: a shared folder would fail
  // the next id's build).
  if (geteuid() == 0) {
    const fs::path pocl = fs::path(std::getenv("KFORGE_CACHE_DIR")) / "pocl";
    int folders = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(pocl)) {
      struct stat st = {};
      ASSERT_EQ(lstat(e.path().c_str(), &st), 0);
      EXPECT_TRUE(S_ISDIR(st.st_mode)) << e.path();
      EXPECT_EQ(std::to_string(st.st_uid), e.path().filename().string()) << e.path();
      EXPECT_GE(st.st_uid, 1879048192u) << e.path();
      EXPECT_EQ(st.st_mode & 0777, 0700u) << e.path();
      ++folders;
    }
    EXPECT_GE(folders, 1);
  }
}

TEST_F(EvalTest, GivenFastMathOpenClOptionsOnAStrictProblemItIsSuspicious) {
  Verdict v = Eval("scale", kData / "bad" / "fast_math_opencl.cpp", "opencl");
  if (v.status == VerdictStatus::kRuntimeError && v.message.find("open device") != std::string::npos)
    GTEST_SKIP() << "no OpenCL device here: " << v.message;
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
  EXPECT_EQ(v.gate, "precision");
}

TEST_F(EvalTest, GivenFastMathOpenClOptionsUnderAReducedPolicyTheToleranceAloneJudges) {
  precision_ = PrecisionPolicy::kTf32;
  Verdict v = Eval("scale", kData / "bad" / "fast_math_opencl.cpp", "opencl");
  if (v.status == VerdictStatus::kRuntimeError &&
      v.message.find("open device") != std::string::npos)
    GTEST_SKIP() << "no OpenCL device here: " << v.message;
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(v.precision["fast_math_allowed"], true);
  EXPECT_FALSE(v.precision["fast_math_options"].empty());
}

// Issue 12, fix 7: a model repeated `global` and `local` as variable names through four
// repairs while the verdict was a runtime_error naming PoCL's temporary file. A kernel that
// does not build is a compile_error whose log names the candidate's line and shows it.
void ExpectKernelBuildLog(const Verdict& v, const std::string& location, const std::string& line) {
  EXPECT_EQ(v.status, VerdictStatus::kCompileError) << v.message;
  const std::string& log = v.compiler_output;
  EXPECT_NE(log.find(location), std::string::npos) << log;
  EXPECT_NE(log.find(" | " + line + "\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("/tmp"), std::string::npos) << log;
  EXPECT_EQ(log.find("kcache"), std::string::npos) << log;
  EXPECT_LE(log.size(), 16u << 10);
}

TEST_F(EvalTest, GivenAnOpenClKernelThatDoesNotBuildItIsACompileErrorAtTheClFilesLine) {
  Verdict v = Eval("scale", kData / "bad" / "global_name_opencl.cpp", "opencl");
  if (v.status == VerdictStatus::kRuntimeError && v.message.find("open device") != std::string::npos)
    GTEST_SKIP() << "no OpenCL device here: " << v.message;
  ExpectKernelBuildLog(v, "global_name_opencl.cl:4:", "  long global = get_global_id(0);");
}

TEST_F(EvalTest, GivenAnOpenClKernelInARawStringThatDoesNotBuildTheLogNamesTheCppFilesLine) {
  Verdict v = Eval("scale", kData / "bad" / "local_name_opencl.cpp", "opencl");
  if (v.status == VerdictStatus::kRuntimeError && v.message.find("open device") != std::string::npos)
    GTEST_SKIP() << "no OpenCL device here: " << v.message;
  ExpectKernelBuildLog(v, "local_name_opencl.cpp:11:", "  float local = v + b;");
}

// --- The vulkan backend (lavapipe in CI): GLSL compiled to SPIR-V by the orchestrator. -------

// The reason to skip when this machine has no Vulkan device (the worker could not open one).
std::string NoVulkanDevice(const Verdict& v) {
  return v.status == VerdictStatus::kRuntimeError && v.message.find("open device") != std::string::npos ? v.message : "";
}

TEST_F(EvalTest, GivenAVulkanCandidateItIsJudgedCorrectAndTimedByTimestamps) {
  baselines_ = true;
  Verdict v = Eval("scale", kData / "scale" / "good_vulkan.cpp", "vulkan");
  if (std::string why = NoVulkanDevice(v); !why.empty()) GTEST_SKIP() << "no Vulkan device here: " << why;
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  ASSERT_TRUE(v.timing.has_value());
  EXPECT_GT(v.timing->median_ms, 0);
  EXPECT_EQ(v.fingerprint["device"]["device_timer"], "timestamp queries") << v.fingerprint.dump();
  // lavapipe's memory is the host's and mapped: the flush evicts the buffers' lines.
  if (v.fingerprint["device"].value("kind", "") == "vulkan-cpu" && CpuFlagged("clflushopt")) {
    EXPECT_EQ(v.fingerprint["device"].value("cache_flush", ""), "touched buffers' lines evicted (mapped memory)");
  }
  EXPECT_EQ(v.precision["fast_math_options"], nlohmann::json::array());
  EXPECT_EQ(v.precision["specialization_constants"], nlohmann::json::parse("[[64]]"));
}

TEST_F(EvalTest, GivenAWrongVulkanShaderItIsWrongOutput) {
  Verdict v = Eval("scale", kData / "bad" / "wrong_vulkan.cpp", "vulkan");
  if (std::string why = NoVulkanDevice(v); !why.empty()) GTEST_SKIP() << "no Vulkan device here: " << why;
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
}

// glslangValidator runs in the orchestrator's sandbox, so this needs no device at all.
TEST_F(EvalTest, GivenAVulkanShaderThatDoesNotCompileItIsACompileErrorAtTheCompFilesLine) {
  Verdict v = Eval("scale", kData / "bad" / "shader_error_vulkan.cpp", "vulkan");
  EXPECT_EQ(v.status, VerdictStatus::kCompileError) << v.message;
  EXPECT_NE(v.compiler_output.find("shader_error_vulkan.comp:9:"), std::string::npos) << v.compiler_output;
  EXPECT_NE(v.compiler_output.find("'shift' : undeclared identifier"), std::string::npos) << v.compiler_output;
  EXPECT_EQ(v.compiler_output.find("candidate.comp"), std::string::npos) << v.compiler_output;
}

TEST_F(EvalTest, GivenAVulkanLauncherWithoutItsShaderTheMessageSaysWhereTheShaderGoes) {
  Verdict v = Eval("scale", kData / "bad" / "no_shader_vulkan.cpp", "vulkan");
  if (std::string why = NoVulkanDevice(v); !why.empty()) GTEST_SKIP() << "no Vulkan device here: " << why;
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError) << v.message;
  EXPECT_NE(v.message.find("the extension .comp"), std::string::npos) << v.message;
}

TEST_F(EvalTest, GivenADirectVulkanCallTheStaticCheckRefusesIt) {
  Verdict v = Eval("scale", kData / "exploits_vulkan" / "direct_submit.cpp", "vulkan");
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
  EXPECT_EQ(v.gate, "static") << v.message;
  EXPECT_NE(v.message.find("calls the Vulkan API itself"), std::string::npos) << v.message;
}

// Every bundled problem's vulkan seed and candidates, judged for correctness at the quick sizes
// and their hidden variants (every check gate; no timing: the timing gates have their own test
// above). Timed at the quick sizes, a naive kernel runs 3-4 ms on lavapipe, and under the full
// suite's load on a 2-core VM the host's share of a launch outgrew 25% of that on every run,
// which the supervisor-clock gate calls suspicious; at the default sizes it passes timed too
// but takes three minutes.
TEST_F(EvalTest, GivenTheBundledProblemsEveryVulkanSeedAndCandidateIsCorrect) {
  int judged = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(DataDir() / "problems")) {
    if (!fs::exists(e.path() / "problem.toml")) continue;
    Result<Problem> p = LoadProblem(e.path() / "problem.toml");
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    std::vector<fs::path> sources;
    if (auto seed = p->seeds.find("vulkan"); seed != p->seeds.end()) sources.push_back(seed->second);
    if (auto c = p->candidates.find("vulkan"); c != p->candidates.end())
      sources.insert(sources.end(), c->second.begin(), c->second.end());
    for (const fs::path& source : sources) {
      SCOPED_TRACE(source.string());
      EvalOptions o;
      o.backend = "vulkan";
      o.quick = true;
      o.timing = false;
      o.baselines = false;
      o.budget_ms = 20;
      o.min_runs = 2;
      o.max_runs = 5;
      o.timeout_seconds = 120;
      Result<Verdict> v = Evaluate(*p, source, o, *runner_);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      if (std::string why = NoVulkanDevice(*v); !why.empty()) GTEST_SKIP() << "no Vulkan device here: " << why;
      EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
      ++judged;
    }
  }
  EXPECT_GE(judged, 16);  // a seed and a candidate for each of the eight bundled problems
}

// --- A worker's report of the wrong shape (a fault-injecting runner). -------------------------

// Runs everything in the real sandbox; after a candidate job (entry kf_run) it replaces a field
// of result.json with one of the wrong type and re-announces the new file's hash, as a worker
// gone wrong would (the hash check cannot catch what the supervisor itself wrote).
class CorruptingRunner : public ProcessRunner {
 public:
  CorruptingRunner(std::string field, nlohmann::json value) : field_(std::move(field)), value_(std::move(value)) {}
  ProcessResult Run(const ProcessSpec& spec) override {
    ProcessResult r = real_->Run(spec);
    if (spec.argv.size() < 3 || spec.argv[1] != "run") return r;
    fs::path dir = spec.argv[2];
    Result<std::string> job = ReadFile(dir / "job.json");
    Result<std::string> text = ReadFile(dir / "result.json");
    if (!job.ok() || !text.ok() || nlohmann::json::parse(*job).value("entry", "") != "kf_run") return r;
    nlohmann::json result = nlohmann::json::parse(*text);
    result[field_] = value_;
    std::string corrupted = result.dump();
    EXPECT_TRUE(WriteFileAtomic(dir / "result.json", corrupted).ok());
    r.out += "\nkforge-result " + Sha256Hex(corrupted) + "\n";
    ++corrupted_;
    return r;
  }
  int corrupted_ = 0;

 private:
  std::string field_;
  nlohmann::json value_;
  std::unique_ptr<ProcessRunner> real_ = NewSandboxRunner();
};

TEST_F(EvalTest, GivenAMalformedWorkerReportTheVerdictIsARuntimeErrorNotAnException) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  ASSERT_TRUE(p.ok());
  EvalOptions o = QuickOptions();
  o.baselines = false;
  int caught = 0;
  for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"checks", "not a list"}, {"timing", {{"device_ms", {"a", "b"}}}}, {"checks", {{{"device_ms", "x"}}}}}) {
    CorruptingRunner runner(field, value);
    Result<Verdict> v = Evaluate(*p, kData / "scale" / "good.cc", o, runner);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_GE(runner.corrupted_, 1);
    EXPECT_NE(v->status, VerdictStatus::kCorrect) << field << " = " << value.dump() << ": " << v->message;
    std::printf("%s = %s: %s [%s] %s\n", field.c_str(), value.dump().c_str(), VerdictStatusName(v->status), v->gate.c_str(),
                v->message.substr(0, 160).c_str());
    if (v->status == VerdictStatus::kRuntimeError && v->gate == "report") {
      EXPECT_NE(v->message.find("the worker's report is malformed"), std::string::npos) << v->message;
      ++caught;
    }
  }
  EXPECT_GE(caught, 1) << "no case reached the type error it was made to cause";
}

// The kernel record is made in the candidate's process: one of the wrong shape is tampering,
// `suspicious` (gate kernels), never a crash of the judge.
TEST_F(EvalTest, GivenAMalformedKernelRecordTheVerdictIsSuspicious) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  ASSERT_TRUE(p.ok());
  EvalOptions o = QuickOptions();
  o.baselines = false;
  CorruptingRunner runner("kernels", {{"source", "cupti"}, {"available", true}, {"records", {{{"name", 5}, {"calls", "many"}}}}});
  Result<Verdict> v = Evaluate(*p, kData / "scale" / "good.cc", o, runner);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kSuspicious) << v->message;
  EXPECT_EQ(v->gate, "kernels");
  EXPECT_NE(v->message.find("kernel record is malformed"), std::string::npos) << v->message;
}

}  // namespace
}  // namespace kforge
