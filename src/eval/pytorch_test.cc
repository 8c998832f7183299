// PyTorch problems (KernelBench format) and Python candidates, end to end through the Python
// worker on the CPU: loading, the float64 reference, ModelNew candidates (right, wrong and
// cheating), a native cpp candidate that receives the model's parameters as inputs, Triton
// candidates in Triton's interpreter, and the eager baseline.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "base/files.h"
#include "base/scoped_env.h"
#include "base/subprocess.h"
#include "eval/fault_runner.h"
#include "eval/python_worker.h"
#include "eval/trusted_state.h"
#include "eval/worker_report.h"
#include "kforge/eval.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;
const fs::path kKb = kData / "kernelbench";
const fs::path kGemm = kKb / "12_Gemm_Multiply_LeakyReLU.py";

class PyTorchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeScratchDir("pytest-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
    // The CPU, unless set: KFORGE_TORCH_DEVICE=cuda:0 judges the suite's candidates on a GPU
    // (scripts/gpu-check stage pytest, for the Triton attacks).
    setenv("KFORGE_TORCH_DEVICE", "cpu", 0);
  }
  void SetUp() override {
    Result<nlohmann::json> probe = ProbePython(*runner_);
    if (!probe.ok() || probe->contains("error"))
      GTEST_SKIP() << "no Python with PyTorch (" << (probe.ok() ? probe->value("error", "") : probe.status().message())
                   << "); scripts/setup installs it";
    probe_ = *probe;
  }
  EvalOptions Options(const std::string& backend) {
    EvalOptions o;
    o.backend = backend;
    o.quick = true;
    o.budget_ms = 30;
    o.min_runs = 3;
    o.max_runs = 10;
    o.timeout_seconds = 120;
    o.baselines = false;
    return o;
  }
  Verdict Eval(const fs::path& problem, const fs::path& candidate, const std::string& backend, bool baselines = false) {
    Result<Problem> p = LoadProblem(problem);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return {};
    EvalOptions o = Options(backend);
    o.baselines = baselines;
    Result<Verdict> v = Evaluate(*p, candidate, o, *runner_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }
  bool HaveTriton() const { return probe_.contains("triton"); }
  // The attack candidates (issue 10) with the static check off, so that only the runtime gates
  // can stop them; `min_runs` > 3 for the tests that compare times.
  Verdict EvalAttack(const fs::path& candidate, int min_runs = 3) {
    return EvalAttackOn(kGemm, "pytorch", candidate, min_runs);
  }
  // A Triton attack candidate (testdata/exploits_triton) on the kforge problem `scale`, static
  // check off; its timed runs get fresh inputs drawn by python/kforge_inputs.py.
  Verdict EvalTritonAttack(const fs::path& candidate, int min_runs = 3) {
    return EvalAttackOn(kData / "scale" / "problem.toml", "triton", candidate, min_runs);
  }
  Verdict EvalAttackOn(const fs::path& problem, const std::string& backend, const fs::path& candidate, int min_runs) {
    Result<Problem> p = LoadProblem(problem);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return {};
    EvalOptions o = Options(backend);
    o.static_check = false;
    o.min_runs = min_runs;
    o.max_runs = std::max(10, min_runs);
    o.budget_ms = min_runs > 3 ? 300 : 30;
    Result<Verdict> v = Evaluate(*p, candidate, o, *runner_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }
  // A copy of `file` with a comment no earlier job's source had: its Triton cache starts empty.
  static fs::path NewSource(const fs::path& file) {
    static fs::path dir = MakeScratchDir("new-sources").value();
    static int count = 0;
    const fs::path copy = dir / (std::to_string(++count) + "_" + file.filename().string());
    EXPECT_TRUE(WriteFileAtomic(copy, ReadFile(file).value() + "\n# new source " + std::to_string(getpid()) + " " +
                                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n")
                    .ok());
    return copy;
  }
  // The honest twin of an attack candidate: the same file with CHEAT = False.
  fs::path Twin(const fs::path& cheat) {
    std::string text = ReadFile(cheat).value();
    size_t at = text.find("CHEAT = True");
    EXPECT_NE(at, std::string::npos) << cheat;
    if (at != std::string::npos) text.replace(at, 12, "CHEAT = False");
    static fs::path dir = MakeScratchDir("pytwins").value();
    fs::path twin = dir / cheat.filename();
    EXPECT_TRUE(WriteFileAtomic(twin, text).ok());
    return twin;
  }
  // The supervisor's wall-clock median minus the calibrated round trip.
  static double WallMinusOverhead(const Verdict& v) {
    const nlohmann::json t = v.fingerprint.value("timing", nlohmann::json::object());
    return t.value("wall_median_ms", 0.0) - t.value("overhead_ms", 0.0);
  }
  // What the verdict's median may not undercut, for every worker (worker_report.h), from the
  // verdict's own record of the supervisor's clock.
  static double SupervisorBound(const Verdict& v) {
    const nlohmann::json t = v.fingerprint.value("timing", nlohmann::json::object());
    return kforge::SupervisorBound(t.value("wall_median_ms", 0.0), t.value("overhead_ms", 0.0),
                                   t.value("device_median_ms", 0.0), t.value("overhead_mad_ms", 0.0));
  }

  // The first CUDA device the probe saw ("cuda:0"), or "" without one.
  std::string CudaDevice() const {
    for (const nlohmann::json& d : probe_.value("devices", nlohmann::json::array()))
      if (d.get<std::string>().rfind("cuda", 0) == 0) return "cuda:0";
    return "";
  }
  // One candidate job of the Python worker, straight through RunPythonWorker (no verdict): set
  // 0 of problem 12 at 16x64x32, checked twice, not timed; `device` "cpu" or "cuda:0".
  WorkerRun CheckOnly(const fs::path& candidate, const std::string& device) {
    nlohmann::json set = {{"seed", 7}, {"magnitude", 1.0},
                          {"overrides", {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}}},
                          {"outputs", {{{"name", "out"}, {"dtype", "float32"}, {"dims", {16, 32}}}}}};
    nlohmann::json job = {{"mode", "candidate"}, {"device", device}, {"sets", {set}}, {"checks", {0}},
                          {"check_twice", true}, {"candidate", "candidate.py"}, {"entry", "ModelNew"},
                          {"problem", {{"kind", "kernelbench"}, {"module", "problem.py"}}}};
    if (device == "cpu") job["interpret"] = true;
    PythonJobFiles files;
    files.copies = {{"candidate.py", candidate}, {"problem.py", kGemm}};
    Limits limits;
    limits.address_space_bytes = 0;
    limits.cpu_seconds = 0;
    limits.wall_seconds = 600;
    Result<WorkerRun> run = RunPythonWorker(*runner_, job, files, limits);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    if (!run.ok()) return {};
    EXPECT_TRUE(run->finished()) << run->result.dump(1) << "\n" << run->process.err;
    EXPECT_FALSE(run->result.contains("error")) << run->result.dump(1);
    return *run;
  }
  // The names in a job's kernels record (docs/worker-protocol.md, "kernels").
  static std::vector<std::string> KernelNames(const WorkerRun& run) {
    std::vector<std::string> names;
    for (const nlohmann::json& r : run.result["kernels"].value("records", nlohmann::json::array()))
      names.push_back(r.value("name", ""));
    return names;
  }

  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
  nlohmann::json probe_;
};

TEST(PyTorchProblemTest, GivenAKernelBenchFileItReadsItsConstantsWithoutRunningPython) {
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->format, ProblemFormat::kPyTorch);
  EXPECT_EQ(p->name, "12_Gemm_Multiply_LeakyReLU");
  ASSERT_EQ(p->sizes.size(), 3u);
  EXPECT_EQ(p->sizes[0].name, "batch_size");
  EXPECT_EQ(p->sizes[0].value, 1024);
  ASSERT_EQ(p->attrs.size(), 2u);
  EXPECT_EQ(p->attrs[0].name, "multiplier");
  EXPECT_DOUBLE_EQ(p->attrs[1].value, 0.1);
  std::map<std::string, int64_t> quick = QuickSizes(*p);
  EXPECT_EQ(quick.at("batch_size"), 64);
  EXPECT_EQ(quick.at("in_features"), 512);
  Result<BoundProblem> b = Bind(*p, {{"nope", 3}});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("batch_size, in_features, out_features"), std::string::npos) << b.status().message();
}

TEST(PyTorchProblemTest, GivenAModuleWithoutModelItSaysWhatIsMissing) {
  fs::path f = MakeTempDir("pyprob").value() / "bad.py";
  ASSERT_TRUE(WriteFileAtomic(f, "import torch\ndef get_inputs():\n    return []\n").ok());
  Result<Problem> p = LoadProblem(f);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("class Model(nn.Module), def get_init_inputs()"), std::string::npos)
      << p.status().message();
  fs::remove_all(f.parent_path());
}

TEST_F(PyTorchTest, GivenAPythonBackendKforgeWorkerSaysWhereItRunsInsteadOfCrashing) {
  Result<nlohmann::json> probe = ProbeWorker(*runner_, "triton");
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_NE(probe->value("error", "").find("Python worker"), std::string::npos) << probe->dump();
}

TEST_F(PyTorchTest, GivenAModelNewInPyTorchItIsCorrectAgainstTheFloat64ReferenceAndTheEagerBaseline) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_torch_ops.py", "pytorch", true);
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(v.trials.size(), 7u);  // 5 seeds + 2 at a hidden batch size
  EXPECT_EQ(v.trials[5]["sizes"]["batch_size"], 47);
  EXPECT_EQ(v.precision["reference"], "float64");
  EXPECT_EQ(v.sizes.at("in_features"), 512);
  ASSERT_TRUE(v.baselines.count("torch_eager"));
  EXPECT_GT(v.baselines["torch_eager"].median_ms, 0);
  EXPECT_TRUE(v.speedups.count("torch_best"));
  bool warned = false;
  for (const std::string& w : v.warnings) warned |= w.find("defines no kernel of its own") != std::string::npos;
  EXPECT_TRUE(warned);
}

// The float64 references of a PyTorch problem are computed once and kept (docs/evaluation.md,
// "Trusted state"); a kept file whose bytes changed is dropped and computed again, and the
// verdict stands.
TEST_F(PyTorchTest, GivenASecondJudgementTheReferencesAreKeptAndAChangedOneIsComputedAgain) {
  // A cache of its own: the suite's is shared by the tests of one process.
  const fs::path cache = MakeScratchDir("pytest-trusted").value();
  chmod(cache.c_str(), 0755);
  ScopedEnv own_cache("KFORGE_CACHE_DIR", cache.string());
  const fs::path candidate = kKb / "candidates" / "12_torch_ops.py";
  Verdict first = Eval(kGemm, candidate, "pytorch");
  ASSERT_EQ(first.status, VerdictStatus::kCorrect) << first.message;
  EXPECT_EQ(first.fingerprint["trusted_state"].value("references", ""), "computed");
  Verdict second = Eval(kGemm, candidate, "pytorch");
  ASSERT_EQ(second.status, VerdictStatus::kCorrect) << second.message;
  EXPECT_EQ(second.fingerprint["trusted_state"].value("references", ""), "kept");
  EXPECT_EQ(second.trials.size(), first.trials.size());

  const fs::path runs = cache / "trusted" / "runs";
  ASSERT_TRUE(fs::exists(runs));
  fs::path largest;
  for (const auto& run : fs::directory_iterator(runs))
    for (const auto& e : fs::directory_iterator(run.path())) {
      const std::string name = e.path().filename().string();
      if (name == "result.json" || name == "kept.json") continue;
      if (largest.empty() || fs::file_size(e.path()) > fs::file_size(largest)) largest = e.path();
    }
  ASSERT_FALSE(largest.empty());
  std::string bytes = ReadFile(largest).value();
  ASSERT_GT(bytes.size(), 64u);
  bytes[40] = static_cast<char>(bytes[40] ^ 0x5a);
  ASSERT_TRUE(WriteFileAtomic(largest, bytes).ok());

  Verdict third = Eval(kGemm, candidate, "pytorch");
  EXPECT_EQ(third.status, VerdictStatus::kCorrect) << third.message;
  EXPECT_EQ(third.fingerprint["trusted_state"].value("references", ""), "computed");
  bool warned = false;
  for (const std::string& w : third.warnings) warned |= w.find("did not verify") != std::string::npos;
  EXPECT_TRUE(warned) << "a warning that the kept references did not verify";
}

TEST_F(PyTorchTest, GivenAModelNewThatDropsAnOperationItIsWrongOutput) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_forgets_multiplier.py", "pytorch");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
}

TEST_F(PyTorchTest, GivenAModelNewThatAssumesTheBatchSizeTheHiddenSizeCatchesIt) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_fixed_batch.py", "pytorch");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_NE(v.message.find("[47, 512]"), std::string::npos) << v.message;
}

TEST_F(PyTorchTest, GivenAModelNewThatScalesItsInputInPlaceItIsWrongOutput) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_mutates_input.py", "pytorch");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_NE(v.message.find("modified its inputs"), std::string::npos) << v.message;
}

TEST_F(PyTorchTest, GivenAModelNewThatStartsAThreadTheStaticCheckStopsIt) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_side_thread.py", "pytorch");
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
  EXPECT_EQ(v.gate, "static");
}

TEST_F(PyTorchTest, GivenASyntaxErrorItIsACompileErrorWithTheLine) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_syntax_error.py", "pytorch");
  EXPECT_EQ(v.status, VerdictStatus::kCompileError) << v.message;
  EXPECT_NE(v.compiler_output.find("line 3"), std::string::npos) << v.compiler_output;
  // The worker ran it as candidate.py in a temporary folder; the log names the candidate's file.
  EXPECT_NE(v.compiler_output.find("\"12_syntax_error.py\", line 3"), std::string::npos) << v.compiler_output;
  EXPECT_EQ(v.compiler_output.find("candidate.py"), std::string::npos) << v.compiler_output;
}

TEST_F(PyTorchTest, GivenAModelNewWithAnInlineExtensionItIsBuiltInTheSandboxAndJudged) {
  // load_inline, as KernelBench's CUDA generations use it, with a C++ (CPU) source here.
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("pytorch");
  o.quick = false;
  o.sizes = {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}};
  Result<Verdict> v = Evaluate(*p, kKb / "candidates" / "12_load_inline_cpp.py", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message << "\n" << v->compiler_output;
  for (const std::string& w : v->warnings) EXPECT_EQ(w.find("defines no kernel"), std::string::npos) << w;
}

// Counts the probe jobs it runs; with `canned`, answers them itself (a probe's JSON) instead of
// running Python.
class ProbeCountingRunner : public ProcessRunner {
 public:
  explicit ProbeCountingRunner(std::string canned = "") : canned_(std::move(canned)) {}
  ProcessResult Run(const ProcessSpec& spec) override {
    const bool probe = std::find(spec.argv.begin(), spec.argv.end(), "probe") != spec.argv.end();
    probes_ += probe;
    if (!probe || canned_.empty()) return real_->Run(spec);
    ProcessResult r;
    r.end = ProcessResult::End::kExited;
    r.exit_code = 0;
    r.out = canned_;
    return r;
  }
  std::atomic<int> probes_{0};  // a standby reference job runs beside the probe

 private:
  const std::string canned_;
  std::unique_ptr<ProcessRunner> real_ = NewSandboxRunner();
};

TEST_F(PyTorchTest, GivenAProbeAnswerKeptOnDiskTheNextProbeReadsItWithoutRunningPython) {
  // A cache of its own: the suite's set-up probe has kept an answer in the suite's.
  ScopedEnv own_cache("KFORGE_CACHE_DIR", MakeScratchDir("probe-cache").value().string());
  ProbeCountingRunner runner;
  bool kept = true;
  Result<nlohmann::json> first = ProbePythonOnce(runner, "", &kept);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(kept);
  EXPECT_EQ(runner.probes_.load(), 1);
  EXPECT_FALSE(first->contains("_rests_on")) << first->dump();
  Result<nlohmann::json> second = ProbePythonOnce(runner, "", &kept);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(kept);
  EXPECT_EQ(runner.probes_.load(), 1) << "a kept answer ran Python again";
  EXPECT_EQ(*second, *first);  // the same answer, so the same trusted-state keys
  Result<nlohmann::json> off = [&] {
    ScopedEnv every_time("KFORGE_KEEP_PYTHON_PROBE", "0");
    return ProbePythonOnce(runner, "", &kept);
  }();
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(kept);
  EXPECT_EQ(runner.probes_.load(), 2);
}

TEST_F(PyTorchTest, GivenAFileOrFolderTheProbeRestsOnChangesOrTheDevicesDoTheProbeRunsAgain) {
  const fs::path dir = MakeScratchDir("probe-rests-on").value();
  fs::create_directories(dir / "site-packages");
  ASSERT_TRUE(WriteFileAtomic(dir / "torch_init.py", "# version 1\n").ok());
  const nlohmann::json canned = {{"python", "3.11"}, {"torch", "9.9"}, {"devices", {"cpu"}},
                                 {"_rests_on", {(dir / "torch_init.py").string(), (dir / "site-packages").string()}}};
  ProbeCountingRunner runner(canned.dump());
  const std::string module = "kforge_probe_test_" + std::to_string(getpid());  // a key no other test uses
  auto probe = [&] {
    bool kept = false;
    Result<nlohmann::json> j = ProbePythonOnce(runner, module, &kept);
    EXPECT_TRUE(j.ok());
    if (j.ok()) EXPECT_EQ(j->value("torch", ""), "9.9");
    return kept;
  };
  EXPECT_FALSE(probe());
  EXPECT_TRUE(probe());
  EXPECT_EQ(runner.probes_.load(), 1);
  // A module's file rewritten (an upgrade in place).
  ASSERT_TRUE(WriteFileAtomic(dir / "torch_init.py", "# version 2, longer\n").ok());
  EXPECT_FALSE(probe());
  EXPECT_TRUE(probe());
  // A package installed into a folder on the import path.
  ASSERT_TRUE(WriteFileAtomic(dir / "site-packages" / "triton.py", "").ok());
  EXPECT_FALSE(probe());
  EXPECT_TRUE(probe());
  EXPECT_EQ(runner.probes_.load(), 3);
  // Other devices visible: another key.
  {
    ScopedEnv other_devices("CUDA_VISIBLE_DEVICES", "kforge-probe-test");
    EXPECT_FALSE(probe());
  }
  EXPECT_TRUE(probe());  // the first environment's answer is still kept
  EXPECT_EQ(runner.probes_.load(), 4);
  // An answer that may be a passing state is never kept: PyTorch that did not import.
  nlohmann::json broken = canned;
  broken["error"] = "PyTorch does not import: a test";
  ProbeCountingRunner failing(broken.dump());
  ASSERT_TRUE(ProbePythonOnce(failing, module + "_error", nullptr).ok());
  bool kept_error = true;
  ASSERT_TRUE(ProbePythonOnce(failing, module + "_error", &kept_error).ok());
  EXPECT_FALSE(kept_error);
  EXPECT_EQ(failing.probes_.load(), 2);
  // An answer that rests on nothing (a worker without the list) is never kept.
  ProbeCountingRunner bare(nlohmann::json{{"python", "3.11"}, {"torch", "9.9"}}.dump());
  bool kept = true;
  ASSERT_TRUE(ProbePythonOnce(bare, module + "_bare", &kept).ok());
  ASSERT_TRUE(ProbePythonOnce(bare, module + "_bare", &kept).ok());
  EXPECT_FALSE(kept);
  EXPECT_EQ(bare.probes_.load(), 2);
}

// Judges on the CPU while it lives, also when the suite runs on a GPU (KFORGE_TORCH_DEVICE=cuda:0),
// where PyTorch ops alone are no_custom_kernel: for tests about something other than the device.
class OnTheCpu : public ScopedEnv {
 public:
  OnTheCpu() : ScopedEnv("KFORGE_TORCH_DEVICE", "cpu") {}
};

// load_inline's CUDA builds go through kforge-nvcc (backend/cuda/nvcc_lanes.h): a candidate job
// finds it as PYTORCH_NVCC, and it compiles there, in the sandbox, with its two lanes.
TEST_F(PyTorchTest, GivenACandidateJobItsPytorchNvccIsKforgeNvccAndCompilesInTheSandbox) {
  if (!std::filesystem::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no nvcc at /usr/local/cuda/bin";
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("pytorch");
  o.static_check = false;  // the candidate runs kforge-nvcc through subprocess
  o.sizes = {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}};
  OnTheCpu cpu;  // the model is plain PyTorch; the build is what is tested
  Result<Verdict> v = Evaluate(*p, kKb / "candidates" / "12_nvcc_in_sandbox.py", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message << "\n" << v->compiler_output;
}

// A candidate's torch extension folder is its own (python_worker.cc, CandidateExtensions): what
// one plants there no candidate of other source sees, nor can it add to the store; a later job of
// the same source sees what the earlier one left, and finds its extension built (ninja no-op).
TEST_F(PyTorchTest, GivenACandidatePlantingInItsTorchExtensionFolderNoOtherCandidateSeesItAndItsOwnNextJobDoes) {
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("pytorch");
  o.static_check = false;  // the planter opens files
  o.sizes = {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}};
  auto judge = [&](const fs::path& candidate) {
    Result<Verdict> v = Evaluate(*p, candidate, o, *runner_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  };
  Result<fs::path> cache = CacheDir();
  ASSERT_TRUE(cache.ok());
  const fs::path store = *cache / "python" / "candidate-extensions";
  auto entry = [&](const fs::path& candidate) { return store / Sha256Hex(ReadFile(candidate).value()); };
  const fs::path planter = kKb / "candidates" / "12_plant_extension.py";
  const fs::path victim = kKb / "candidates" / "12_load_inline_checked.py";
  const fs::path count = entry(planter) / "kforge_test_gemm_mul_leaky_checked" / "kforge-planted";

  Verdict a = judge(planter);
  ASSERT_EQ(a.status, VerdictStatus::kCorrect) << a.message;
  Result<std::string> first = ReadFile(count);
  ASSERT_TRUE(first.ok()) << "the job's torch extension folder was not its source's entry: " << count;
  EXPECT_FALSE(fs::exists(store / "kforge-planted-store")) << "a candidate added a folder to the store";

  Verdict b = judge(victim);
  ASSERT_EQ(b.status, VerdictStatus::kCorrect) << b.message << "\n" << b.compiler_output;
  const fs::path built = entry(victim) / "kforge_test_gemm_mul_leaky_checked" / "kforge_test_gemm_mul_leaky_checked.so";
  struct stat before = {}, after = {};
  ASSERT_EQ(lstat(built.c_str(), &before), 0) << "the extension was not built in its source's entry: " << built;
  if (geteuid() == 0) {
    // Between jobs an entry is root's alone.
    struct stat st = {};
    ASSERT_EQ(lstat(entry(victim).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    EXPECT_EQ(before.st_uid, 0u);
  }

  // PyTorch before 2 rewrites main.cpp at every load_inline, and ninja then rebuilds; later
  // versions write it only when it changed.
  const fs::path main_cpp = built.parent_path() / "main.cpp";
  struct stat source_before = {}, source_after = {};
  ASSERT_EQ(lstat(main_cpp.c_str(), &source_before), 0);
  Verdict again = judge(victim);
  ASSERT_EQ(again.status, VerdictStatus::kCorrect) << again.message;
  ASSERT_EQ(lstat(built.c_str(), &after), 0);
  ASSERT_EQ(lstat(main_cpp.c_str(), &source_after), 0);
  if (source_after.st_mtim.tv_sec == source_before.st_mtim.tv_sec && source_after.st_mtim.tv_nsec == source_before.st_mtim.tv_nsec) {
    EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec) << "the second job rebuilt the extension";
    EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec) << "the second job rebuilt the extension";
  }

  Verdict c = judge(planter);
  ASSERT_EQ(c.status, VerdictStatus::kCorrect) << c.message;
  Result<std::string> second = ReadFile(count);
  ASSERT_TRUE(second.ok());
  EXPECT_GT(std::stoi(*second), std::stoi(*first)) << "the planter's second job did not start from its first job's folder";
}

// One job of a source at a time holds its entry: a second job of the same source prepared while
// the first is out builds in its own folder; once the first is given back, the entry is lent again.
TEST_F(PyTorchTest, GivenTwoJobsOfOneSourceAtOnceTheSecondBuildsItsExtensionsInItsOwnFolder) {
  PythonJobFiles files;
  files.copies["candidate.py"] = NewSource(kKb / "candidates" / "12_load_inline_checked.py");
  const nlohmann::json job = {{"mode", "candidate"}};
  Limits limits;
  limits.sandbox_uid = 54321;
  fs::path first_dir, second_dir, third_dir;
  Result<ProcessSpec> first = PreparePythonJob(job, files, limits, &first_dir);
  Result<ProcessSpec> second = PreparePythonJob(job, files, limits, &second_dir);
  ASSERT_TRUE(first.ok() && second.ok());
  const fs::path entry = first->env.at("TORCH_EXTENSIONS_DIR");
  EXPECT_EQ(entry.parent_path().filename(), "candidate-extensions") << entry;
  EXPECT_EQ(second->env.at("TORCH_EXTENSIONS_DIR"), (second_dir / "torch_extensions").string());
  if (geteuid() == 0) {
    struct stat st = {};
    ASSERT_EQ(lstat(entry.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 54321u) << "the entry is not the job's user's while lent";
    EXPECT_EQ(st.st_mode & 07777, 0700u);
  }
  AbandonPythonJob(first_dir);
  AbandonPythonJob(second_dir);
  if (geteuid() == 0) {
    struct stat st = {};
    ASSERT_EQ(lstat(entry.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << "the entry is not root's again once given back";
  }
  Result<ProcessSpec> third = PreparePythonJob(job, files, limits, &third_dir);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->env.at("TORCH_EXTENSIONS_DIR"), entry.string());
  AbandonPythonJob(third_dir);
  std::error_code ec;
  for (const fs::path& d : {first_dir, second_dir, third_dir}) fs::remove_all(d, ec);
}

// What a job may leave in its entry that the hand-over back to root does not keep: links,
// second names of files, special files, torch's stale build lock; an entry deeper than a build
// goes whole, as does one whose job's processes may have outlived it. Jobs of user nobody and
// sources that build no extension are lent none.
TEST_F(PyTorchTest, GivenAnEntryWithLinksAndAStaleLockTheHandOverKeepsOnlyItsOwnFiles) {
  if (geteuid() != 0) GTEST_SKIP() << "the hand-over changes owners: it needs root";
  PythonJobFiles files;
  files.copies["candidate.py"] = NewSource(kKb / "candidates" / "12_load_inline_checked.py");
  const nlohmann::json job = {{"mode", "candidate"}};
  Limits limits;
  limits.sandbox_uid = 54322;
  fs::path dir;
  std::vector<fs::path> dirs;
  struct Remove {
    std::vector<fs::path>& dirs;
    ~Remove() {
      std::error_code ec;
      for (const fs::path& d : dirs) fs::remove_all(d, ec);
    }
  } remove{dirs};
  Result<ProcessSpec> spec = PreparePythonJob(job, files, limits, &dir);
  ASSERT_TRUE(spec.ok());
  const fs::path entry = spec->env.at("TORCH_EXTENSIONS_DIR");
  const fs::path build = entry / "ext";
  fs::create_directories(build);
  ASSERT_TRUE(WriteFileAtomic(build / "ext.so", "built").ok());
  chmod((build / "ext.so").c_str(), 06777);
  ASSERT_TRUE(WriteFileAtomic(build / "lock", "").ok());
  fs::create_symlink("/etc/passwd", build / "passwd");
  const fs::path outside = entry.parent_path() / ("outside-" + std::to_string(getpid()));  // same file system
  ASSERT_TRUE(WriteFileAtomic(outside, "another entry's file").ok());
  fs::create_hard_link(outside, build / "second_name");
  ASSERT_EQ(mkfifo((build / "fifo").c_str(), 0666), 0);
  AbandonPythonJob(dir);
  dirs.push_back(dir);
  struct stat st = {};
  ASSERT_EQ(lstat((build / "ext.so").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  for (const char* gone : {"lock", "passwd", "second_name", "fifo"})
    EXPECT_FALSE(fs::exists(fs::symlink_status(build / gone))) << gone;
  EXPECT_TRUE(fs::exists(outside));
  fs::remove(outside);
  EXPECT_EQ(ReadFile("/etc/passwd").ok(), true);

  // Deeper than any build: the entry goes.
  Result<ProcessSpec> deep = PreparePythonJob(job, files, limits, &dir);
  ASSERT_TRUE(deep.ok());
  ASSERT_EQ(deep->env.at("TORCH_EXTENSIONS_DIR"), entry.string());
  fs::path chain = entry;
  for (int i = 0; i < 12; ++i) chain /= "d";
  fs::create_directories(chain);
  AbandonPythonJob(dir);
  dirs.push_back(dir);
  EXPECT_FALSE(fs::exists(build / "ext.so")) << "an entry past the depth limit was kept";

  // A job whose processes may still run: its entry goes.
  Result<ProcessSpec> live = PreparePythonJob(job, files, limits, &dir);
  ASSERT_TRUE(live.ok());
  ASSERT_TRUE(WriteFileAtomic(fs::path(live->env.at("TORCH_EXTENSIONS_DIR")) / "kept", "x").ok());
  ProcessResult outlived;
  outlived.pid_namespace = false;
  Cleanup(FinishPythonJob(outlived, dir));
  dirs.push_back(dir);
  EXPECT_FALSE(fs::exists(entry / "kept")) << "the entry of a job that may have left processes running was kept";

  limits.sandbox_uid = 65534;
  Result<ProcessSpec> shared = PreparePythonJob(job, files, limits, &dir);
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->env.at("TORCH_EXTENSIONS_DIR"), (dir / "torch_extensions").string()) << "nobody was lent an entry";
  AbandonPythonJob(dir);
  dirs.push_back(dir);
  limits.sandbox_uid = 54322;
  files.copies["candidate.py"] = NewSource(kKb / "candidates" / "12_torch_ops.py");
  Result<ProcessSpec> plain = PreparePythonJob(job, files, limits, &dir);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->env.at("TORCH_EXTENSIONS_DIR"), (dir / "torch_extensions").string()) << "a source that builds no extension was lent an entry";
  AbandonPythonJob(dir);
  dirs.push_back(dir);
}

// The store keeps the 256 entries lent last: the oldest entry not lent now goes when a new one
// is made.
TEST_F(PyTorchTest, GivenMoreSourcesThanTheExtensionStoreKeepsTheLeastRecentlyLentEntryGoes) {
  const nlohmann::json job = {{"mode", "candidate"}};
  Limits limits;
  limits.sandbox_uid = 54323;
  std::vector<fs::path> entries;
  for (int i = 0; i < 258; ++i) {
    PythonJobFiles files;
    files.copies["candidate.py"] = NewSource(kKb / "candidates" / "12_load_inline_checked.py");
    fs::path dir;
    Result<ProcessSpec> spec = PreparePythonJob(job, files, limits, &dir);
    ASSERT_TRUE(spec.ok());
    entries.push_back(spec->env.at("TORCH_EXTENSIONS_DIR"));
    ASSERT_EQ(entries.back().parent_path().filename(), "candidate-extensions");
    AbandonPythonJob(dir);
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (i == 0) {
      // Lent longest ago: an hour back.
      const fs::path lock = entries[0].string() + ".lock";
      fs::last_write_time(lock, fs::last_write_time(lock) - std::chrono::hours(1));
    }
  }
  EXPECT_FALSE(fs::exists(entries[0])) << "the entry lent longest ago was kept";
  for (size_t i = entries.size() - 256; i < entries.size(); ++i) EXPECT_TRUE(fs::exists(entries[i])) << i;
}

TEST_F(PyTorchTest, GivenANativeCppCandidateItReceivesTheParametersAsNamedInputs) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_native.cc", "cpp");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message << "\n" << v.compiler_output;
  EXPECT_EQ(v.trials.size(), 7u);
}

// Rewrites a Python candidate job's report as if its calls had been queued behind a 0.2 ms head
// start and their host time were 1.25 times the device time plus `excess_ms` (the launches
// inside the head start): what the queued host-time gate reads, without a GPU. Runs cold (no
// warm worker sees it).
class QueuedHostRunner : public ProcessRunner {
 public:
  // null_excess_ms >= 0: the null runs (calibration) show that much too, else none is reported.
  explicit QueuedHostRunner(double excess_ms, double null_excess_ms = -1) : excess_ms_(excess_ms), null_excess_ms_(null_excess_ms) {}
  ProcessResult Run(const ProcessSpec& spec) override {
    ProcessResult r = real_->Run(spec);
    auto run = std::find(spec.argv.begin(), spec.argv.end(), "run");
    if (run == spec.argv.end() || run + 1 == spec.argv.end()) return r;
    const fs::path dir = *(run + 1);
    Result<std::string> job = ReadFile(dir / "job.json");
    Result<std::string> text = ReadFile(dir / "result.json");
    if (!job.ok() || !text.ok() || nlohmann::json::parse(*job).value("mode", "") != "candidate") return r;
    nlohmann::json result = nlohmann::json::parse(*text);
    if (!result.contains("timing")) return r;
    nlohmann::json& timing = result["timing"];
    const size_t n = timing["device_ms"].size();
    timing["enqueue_ms"] = std::vector<double>(n, 0.05);
    // A quarter of the device time on top, which the gate allows by itself: the cases then do
    // not depend on how fast this machine ran the call (a loaded CI VM's took 0.2 ms and more).
    for (size_t i = 0; i < n; ++i) timing["host_ms"][i] = 1.25 * timing["device_ms"][i].get<double>() + excess_ms_;
    nlohmann::json& calibration = timing["calibration"];
    calibration.erase("null_enqueue_ms");
    if (null_excess_ms_ >= 0) {
      const std::vector<double> device(8, 0.004);
      std::vector<double> host;
      for (double d : device) host.push_back(d + null_excess_ms_);
      calibration["null_device_ms"] = device;
      calibration["null_host_ms"] = host;
      calibration["null_enqueue_ms"] = std::vector<double>(device.size(), 0.03);
    }
    result["fingerprint"]["queue_ms"] = 0.2;
    const std::string rewritten = result.dump();
    EXPECT_TRUE(WriteFileAtomic(dir / "result.json", rewritten).ok());
    r.out += "\nkforge-result " + Sha256Hex(rewritten) + "\n";
    ++rewritten_;
    return r;
  }
  int rewritten_ = 0;

 private:
  const double excess_ms_, null_excess_ms_;
  std::unique_ptr<ProcessRunner> real_ = NewSandboxRunner();
};

// 1 ms past the device time (the launches inside the head start) is suspicious; the
// synchronize's wake-up (0.02 ms) is not. On a slower or busier host every queued call shows more
// than the 0.075 ms the gate allows by itself: the null runs, timed the same way before the
// candidate was loaded, set the baseline then. The same 0.12 ms excess is honest where the null
// runs showed 0.09 ms and suspicious where they showed nothing; 0.1 ms hidden on top of that
// host's 0.09 ms is still caught.
TEST_F(PyTorchTest, GivenQueuedCallsWhoseHostTimeOutrunsTheirDeviceTimeTheVerdictIsSuspiciousHostTime) {
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("pytorch");
  o.sizes = {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}};
  const fs::path candidate = kKb / "candidates" / "12_torch_ops.py";
  OnTheCpu cpu;  // the queue is the runner's rewrite; PyTorch ops on a GPU are no_custom_kernel
  struct Case {
    double excess, null_excess;  // ms over the device time; the null runs' (-1: none reported)
    VerdictStatus want;
  };
  for (const Case& c : {Case{1.0, -1, VerdictStatus::kSuspicious}, Case{0.02, -1, VerdictStatus::kCorrect},
                        Case{0.12, 0.09, VerdictStatus::kCorrect}, Case{0.12, -1, VerdictStatus::kSuspicious},
                        Case{0.19, 0.09, VerdictStatus::kSuspicious}}) {
    QueuedHostRunner runner(c.excess, c.null_excess);
    Result<Verdict> v = Evaluate(*p, candidate, o, runner);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_GE(runner.rewritten_, 1);
    EXPECT_EQ(v->status, c.want) << c.excess << " ms over, null runs " << c.null_excess << ": " << v->message;
    if (c.want != VerdictStatus::kSuspicious) continue;
    EXPECT_EQ(v->gate, "host_time") << v->message;
    EXPECT_NE(v->message.find("beyond what their launches took past the 0.200 ms head start"), std::string::npos) << v->message;
  }
}

// Runs everything in the real sandbox and keeps, per job, the input files each set names: the
// Python reference's (result.json) and kforge-worker's (job.json).
class InputFilesRunner : public ProcessRunner {
 public:
  ProcessResult Run(const ProcessSpec& spec) override {
    ProcessResult r = real_->Run(spec);
    auto run = std::find(spec.argv.begin(), spec.argv.end(), "run");
    if (run == spec.argv.end() || run + 1 == spec.argv.end()) return r;
    const fs::path dir = *(run + 1);
    const bool native = fs::path(spec.argv[0]).filename() == "kforge-worker";
    Result<std::string> text = ReadFile(dir / (native ? "job.json" : "result.json"));
    if (!text.ok()) return r;
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    std::vector<std::vector<std::string>> sets;
    for (const nlohmann::json& set : j.value("sets", nlohmann::json::array())) {
      sets.emplace_back();
      for (const nlohmann::json& in : set.value("inputs", nlohmann::json::array()))
        if (in.contains("file")) sets.back().push_back(in["file"]);
    }
    std::lock_guard<std::mutex> lock(mu_);  // a standby reference job runs beside the candidate's
    if (!sets.empty() && !sets[0].empty()) (native ? worker_ : reference_) = sets;
    return r;
  }
  std::mutex mu_;
  std::vector<std::vector<std::string>> reference_, worker_;  // per set, per input: its file

 private:
  std::unique_ptr<ProcessRunner> real_ = NewSandboxRunner();
};

size_t DistinctFiles(const std::vector<std::vector<std::string>>& sets) {
  std::set<std::string> all;
  for (const auto& s : sets) all.insert(s.begin(), s.end());
  return all.size();
}

// Problem 12's weight and bias are the same in every set (one model per size, seed 42): each
// is written, read and uploaded once, while every set's x is its own.
TEST_F(PyTorchTest, GivenANativeCandidateTheSetsShareTheFilesOfTheModelsParameters) {
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  InputFilesRunner runner;
  EvalOptions o = Options("cpp");
  o.trusted_state = false;  // the reference job runs here, not read from another test's
  Result<Verdict> v = Evaluate(*p, kKb / "candidates" / "12_native.cc", o, runner);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->status, VerdictStatus::kCorrect) << v->message << "\n" << v->compiler_output;
  for (const auto* sets : {&runner.reference_, &runner.worker_}) {
    ASSERT_EQ(sets->size(), v->trials.size());
    ASSERT_EQ((*sets)[0].size(), 3u);  // x, gemm weight, gemm bias
    std::set<std::string> xs;
    for (const auto& s : *sets) {
      ASSERT_EQ(s.size(), 3u);
      xs.insert(s[0]);
      EXPECT_EQ(s[1], (*sets)[0][1]);
      EXPECT_EQ(s[2], (*sets)[0][2]);
    }
    EXPECT_EQ(xs.size(), sets->size());
    EXPECT_EQ(DistinctFiles(*sets), sets->size() + 2);
  }
}

TEST_F(PyTorchTest, GivenOverriddenConstantsTheReferenceRunsAtThoseSizes) {
  Result<Problem> p = LoadProblem(kKb / "76_Gemm_Add_ReLU.py");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EvalOptions o = Options("pytorch");
  o.quick = false;
  o.sizes = {{"batch_size", 6}, {"in_features", 40}, {"out_features", 24}};
  Result<Verdict> v = MeasureBaselines(*p, o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->sizes.at("out_features"), 24);
  EXPECT_EQ(v->fingerprint["problem_constants"]["in_features"], 40);
  EXPECT_TRUE(v->baselines.count("torch_eager"));
  EXPECT_DOUBLE_EQ(v->bytes, 4.0 * (6 * 40 + 24 * 40 + 24 + 6 * 24));  // x, gemm weight, bias, out
}

// --- Issue 10: attacks on the Python worker, each against its honest twin. ----------------------

TEST(PythonWorkerTest, Sha256MatchesTheStandardsTestVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(PythonWorkerTest, GivenAResultChangedAfterTheWorkerWroteItVerificationRefusesIt) {
  auto make = [](const std::string& result, const std::string& printed, const std::string& out_bytes) {
    WorkerRun run;
    run.dir = MakeTempDir("pyverify").value();
    EXPECT_TRUE(WriteFileAtomic(run.dir / "result.json", result).ok());
    EXPECT_TRUE(WriteFileAtomic(run.dir / "out_0_a_out.bin", out_bytes).ok());
    run.process.end = ProcessResult::End::kExited;
    run.process.exit_code = 0;
    run.process.out = "kforge-result " + Sha256Hex(printed) + "\n";
    VerifyPythonResult(&run);
    return run;
  };
  const std::string good = R"({"files": {"out_0_a_out.bin": ")" + PieceDigestHex("1234") + R"("}, "done": true})";
  WorkerRun ok = make(good, good, "1234");
  EXPECT_TRUE(ok.finished()) << ok.result.dump();
  EXPECT_EQ(*ok.ReadOutput("out_0_a_out.bin", 4).value(), "1234");
  WorkerRun rewritten = make(R"({"done": true, "timing": {}})", good, "1234");
  EXPECT_EQ(rewritten.result["error"]["stage"], "integrity") << rewritten.result.dump();
  WorkerRun changed_file = make(good, good, "4321");
  EXPECT_NE(changed_file.result["error"].value("message", "").find("out_0_a_out.bin was changed"), std::string::npos)
      << changed_file.result.dump();
  // An output replaced by a link to an endless device is refused, not read; so is a linked report.
  auto linked = [&](const std::string& name) {
    WorkerRun run;
    run.dir = MakeTempDir("pyverify").value();
    EXPECT_TRUE(WriteFileAtomic(run.dir / "result.json", good).ok());
    EXPECT_TRUE(WriteFileAtomic(run.dir / "out_0_a_out.bin", "1234").ok());
    fs::remove(run.dir / name);
    fs::create_symlink("/dev/zero", run.dir / name);
    run.process.end = ProcessResult::End::kExited;
    run.process.exit_code = 0;
    run.process.out = "kforge-result " + Sha256Hex(good) + "\n";
    VerifyPythonResult(&run);
    return run;
  };
  WorkerRun linked_output = linked("out_0_a_out.bin"), linked_report = linked("result.json");
  EXPECT_NE(linked_output.result["error"].value("message", "").find("not a regular file"), std::string::npos)
      << linked_output.result.dump();
  EXPECT_NE(linked_report.result["error"].value("message", "").find("symbolic link"), std::string::npos)
      << linked_report.result.dump();
  for (const WorkerRun* r : {&ok, &rewritten, &changed_file, &linked_output, &linked_report}) Cleanup(*r);
}

// What was verified is what the judge reads: under $KFORGE_HELD_OUTPUTS_MB the bytes are held in
// memory (a later write to the job's folder changes nothing read), above it copied to a folder
// of the orchestrator's own; the trusted store keeps held bytes as files.
TEST(PythonWorkerTest, VerifiedOutputsAreHeldInMemoryOrCopiedAboveTheLimit) {
  auto make = [](const char* limit_mb) {
    ScopedEnv limit("KFORGE_HELD_OUTPUTS_MB", limit_mb);
    WorkerRun run;
    run.dir = MakeTempDir("pyverify").value();
    const std::string result = R"({"files": {"out_0_a_out.bin": ")" + PieceDigestHex("1234") + R"("}, "done": true})";
    EXPECT_TRUE(WriteFileAtomic(run.dir / "result.json", result).ok());
    EXPECT_TRUE(WriteFileAtomic(run.dir / "out_0_a_out.bin", "1234").ok());
    run.process.end = ProcessResult::End::kExited;
    run.process.exit_code = 0;
    run.process.out = "kforge-result " + Sha256Hex(result) + "\n";
    VerifyPythonResult(&run);
    return run;
  };
  WorkerRun held = make("16");
  ASSERT_TRUE(held.finished()) << held.result.dump();
  ASSERT_TRUE(held.held && held.held->count("out_0_a_out.bin"));
  EXPECT_FALSE(fs::exists(held.dir / "out_0_a_out.bin"));
  EXPECT_EQ(*held.ReadOutput("out_0_a_out.bin", 4).value(), "1234");
  // Shared with the run, not copied; read into a buffer of its size alone.
  EXPECT_EQ(held.ReadOutput("out_0_a_out.bin", 4).value().get(), &held.held->at("out_0_a_out.bin"));
  std::string into(4, 'x');
  EXPECT_TRUE(held.ReadOutputInto("out_0_a_out.bin", into.data(), 4).ok());
  EXPECT_EQ(into, "1234");
  EXPECT_FALSE(held.ReadOutputInto("out_0_a_out.bin", into.data(), 3).ok());
  const fs::path store = MakeTempDir("pyverify-store").value();
  TrustedState trusted = [&] {
    ScopedEnv own_cache("KFORGE_CACHE_DIR", store.string());
    return TrustedState(true);
  }();
  ASSERT_TRUE(trusted.KeepRun("k", nlohmann::json::object(), held).ok());
  std::optional<WorkerRun> kept = trusted.FindRun("k");
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(*kept->ReadOutput("out_0_a_out.bin", 4).value(), "1234");
  WorkerRun copied = make("0");
  ASSERT_TRUE(copied.finished()) << copied.result.dump();
  EXPECT_FALSE(copied.held);
  EXPECT_EQ(ReadFile(copied.dir / "out_0_a_out.bin").value(), "1234");
  EXPECT_TRUE(WriteFileAtomic(copied.dir / "out_0_a_out.bin", "4321").ok());
  EXPECT_FALSE(copied.ReadOutput("out_0_a_out.bin", 4).ok());  // a file is checked again when read
  std::string into_copied(4, 'x');
  Status changed = copied.ReadOutputInto("out_0_a_out.bin", into_copied.data(), 4);  // into a buffer too
  EXPECT_NE(changed.message().find("was changed after"), std::string::npos) << changed.message();
  EXPECT_FALSE(copied.ReadOutputInto("out_0_a_out.bin", into_copied.data(), 5).ok());
  for (const WorkerRun* r : {&held, &copied}) Cleanup(*r);
  std::error_code ec;
  fs::remove_all(store, ec);
}

TEST_F(PyTorchTest, GivenAnOutputCacheKeyedOnInputValuesFreshInputsNeverLetItHit) {
  // Timed runs that rotated over two fixed input sets let this cache hit on every run; with a
  // fresh seed per timed run its key never repeats, so it computes (and is timed) honestly.
  const fs::path cheat = kKb / "candidates" / "12_cache_by_values.py";
  Verdict v = EvalAttack(cheat);
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(v.fingerprint["timing"]["fresh_inputs"], true);
  EXPECT_GE(v.timing->median_ms, 0.999 * SupervisorBound(v));
  // Each timed run's whole step (start to start) holds its call, and the scans' wait is recorded.
  const nlohmann::json& t = v.fingerprint["timing"];
  EXPECT_GE(t["step_median_ms"].get<double>(), t["wall_median_ms"].get<double>()) << t.dump();
  EXPECT_GE(t["scan_median_ms"].get<double>(), 0.0) << t.dump();
  EXPECT_EQ(EvalAttack(Twin(cheat)).status, VerdictStatus::kCorrect);
}

TEST_F(PyTorchTest, GivenACacheThatReplaysTheOutputOfOtherInputsTheIdenticalOutputCheckCatchesIt) {
  const fs::path cheat = kKb / "candidates" / "12_cache_coarse.py";
  Verdict v = EvalAttack(cheat);
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_EQ(v.gate, "timed_output");
  EXPECT_NE(v.message.find("timed run "), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("byte-identical"), std::string::npos) << v.message;
  Verdict twin = EvalAttack(Twin(cheat));
  EXPECT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
}

TEST_F(PyTorchTest, GivenACacheThatPerturbsItsReplaysTheSampledReferenceCatchesIt) {
  // No two outputs repeat, so the identical-output check sees nothing; the reservoir sample of
  // timed runs, compared with float64 references for their own seeds, finds the stale output.
  Verdict v = EvalAttack(kKb / "candidates" / "12_cache_coarse_noisy.py");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_NE(v.message.find("(fresh inputs, seed "), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("output 'out'"), std::string::npos) << v.message;
}

// The sampled runs' references from a standby job (started with the candidate's, waiting for
// their seeds): the same catch, and the honest twin correct. On the CPU the standby is off
// unless asked for.
TEST_F(PyTorchTest, GivenAStandbyReferenceJobTheSampledRunsAreJudgedByItAlike) {
  const fs::path cheat = kKb / "candidates" / "12_cache_coarse_noisy.py";
  Verdict v, twin;
  {
    ScopedEnv standby("KFORGE_STANDBY_REFERENCE", "1");
    v = EvalAttack(cheat);
    twin = EvalAttack(Twin(kKb / "candidates" / "12_cache_coarse.py"));
  }
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_NE(v.message.find("(fresh inputs, seed "), std::string::npos) << v.message;
  ASSERT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
  for (const Verdict* x : {&v, &twin}) {
    EXPECT_TRUE(x->stages.contains("python_timed_reference.standby")) << x->stages.dump();
    for (const std::string& w : x->warnings) EXPECT_EQ(w.find("standby reference job failed"), std::string::npos) << w;
  }
}

// Without samples to judge (the candidate fails its checks) the standby job is cancelled: the
// verdict comes back and no job is left waiting.
TEST_F(PyTorchTest, GivenAStandbyReferenceJobAndAWrongCandidateItIsCancelled) {
  setenv("KFORGE_STANDBY_REFERENCE", "1", 1);
  const auto t0 = std::chrono::steady_clock::now();
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_forgets_multiplier.py", "pytorch");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsetenv("KFORGE_STANDBY_REFERENCE");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_FALSE(v.stages.contains("python_timed_reference.standby"));
  EXPECT_LT(seconds, 300) << "the judgement waited for the standby job's wall-clock limit";
}

TEST_F(PyTorchTest, GivenAModelNewThatSkipsEveryOtherTimedCallItIsWrongOutputNamingTheRun) {
  const fs::path cheat = kKb / "candidates" / "12_skip_alternate.py";
  Verdict v = EvalAttack(cheat);
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_NE(v.message.find("timed run "), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("a skipped or cached call"), std::string::npos) << v.message;
  Verdict twin = EvalAttack(Twin(cheat));
  EXPECT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
}

TEST_F(PyTorchTest, GivenPatchedClocksTheVerdictKeepsTheSupervisorsWallClock) {
  // The candidate's process reads its clocks at 0.8x; the verdict's median is the device
  // times' but never below the supervisor's wall-clock bound (TimingFromWorker), so the patch
  // gains at most that bound's tolerance, as on kforge-worker (or the per-run clock gate
  // catches it: supervisor_clock).
  const fs::path cheat = kKb / "candidates" / "12_patch_clocks.py";
  Verdict v = EvalAttack(cheat, 10);
  // On a GPU the candidate, PyTorch ops only, is no_custom_kernel (gate "kernels"); its timing stays.
  ASSERT_TRUE(v.status == VerdictStatus::kCorrect || v.gate == "host_time" || v.gate == "supervisor_clock" ||
              v.gate == "kernels")
      << v.message;
  ASSERT_TRUE(v.timing.has_value());
  EXPECT_LT(v.fingerprint["timing"]["device_median_ms"].get<double>(), 0.9 * WallMinusOverhead(v)) << "the patch did not take";
  EXPECT_GE(v.timing->median_ms, 0.999 * SupervisorBound(v));
  Verdict twin = EvalAttack(Twin(cheat), 10);
  EXPECT_TRUE(twin.status == VerdictStatus::kCorrect || twin.gate == "kernels") << twin.message;
  ASSERT_TRUE(twin.timing.has_value());
  EXPECT_GE(twin.timing->median_ms, 0.999 * SupervisorBound(twin));
}

TEST_F(PyTorchTest, GivenWorkDeferredIntoTheHandOverOfTheOutputsTheUntimedWorkGateCatchesIt) {
  // forward returns an empty tensor subclass that computes the real result when the worker
  // first reads it, in the child's hand-over (collect_ms): suspicious on both jobs, while its twin,
  // doing the same work in forward, is correct. The supervisor's own copy out of the shared
  // region (copy_ms) is recorded apart.
  const fs::path cheat = kKb / "candidates" / "12_deferred_output.py";
  Verdict v = EvalAttack(cheat);
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
  EXPECT_EQ(v.gate, "untimed_work") << v.message;
  // On the CPU the work lands in the collect; on a GPU it is queued there and the next
  // prepare's synchronize may wait for it (seen on an H100): the same gate either way.
  const char* env_device = std::getenv("KFORGE_TORCH_DEVICE");
  const bool gpu = env_device && std::string(env_device).rfind("cuda", 0) == 0;
  EXPECT_TRUE(v.message.find("collecting a timed run's outputs") != std::string::npos ||
              (gpu && v.message.find("preparing a timed run") != std::string::npos))
      << v.message;
  Verdict twin = EvalAttack(Twin(cheat));
  // On a GPU the twin, PyTorch ops only, is no_custom_kernel (gate "kernels"); its timing stays.
  ASSERT_TRUE(twin.status == VerdictStatus::kCorrect || twin.gate == "kernels") << twin.message;
  ASSERT_TRUE(twin.timing.has_value());
  // WORK_MS (60) of busy time on the CPU; on a GPU 60M cycles of torch.cuda._sleep, 30 ms at
  // the H100's 1.98 GHz (at most 3 GHz: 20 ms).
  EXPECT_GE(twin.timing->median_ms, gpu ? 20.0 : 50.0);
  const nlohmann::json t = twin.fingerprint.value("timing", nlohmann::json::object());
  EXPECT_TRUE(t.contains("copy_median_ms")) << t.dump();
  EXPECT_LT(t.value("collect_median_ms", 1e9), 20.0) << t.dump();
}

TEST_F(PyTorchTest, GivenAnExitHandlerThatRewritesResultJsonItNeverRuns) {
  const fs::path cheat = kKb / "candidates" / "12_atexit_rewrite.py";
  Verdict v = EvalAttack(cheat);
  Verdict twin = EvalAttack(Twin(cheat));
  ASSERT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_GT(v.timing->median_ms, 0.2 * twin.timing->median_ms);  // a rewrite divides by 100
  EXPECT_GE(v.timing->median_ms, 0.999 * SupervisorBound(v));
}

TEST_F(PyTorchTest, GivenAProcessLeftBehindThatRewritesResultJsonTheHashCheckRefusesIt) {
  // It may lose the race (then nothing changed), or rewrite result.json, whose SHA-256 then no
  // longer matches the one the worker printed: never a changed number in the verdict.
  Verdict v = EvalAttack(kKb / "candidates" / "12_late_rewrite.py");
  if (v.status == VerdictStatus::kCorrect) {
    EXPECT_GE(v.timing->median_ms, 0.999 * SupervisorBound(v));
    EXPECT_GT(v.timing->median_ms, 0.1);
  } else {
    EXPECT_EQ(v.status, VerdictStatus::kRuntimeError) << v.message;
    EXPECT_NE(v.message.find("integrity"), std::string::npos) << v.message;
  }
}

TEST_F(PyTorchTest, GivenACandidateThatKillsTheWorkerItIsARuntimeError) {
  const fs::path cheat = kKb / "candidates" / "12_kill_worker.py";
  Verdict v = EvalAttack(cheat);
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError) << v.message;
  Verdict twin = EvalAttack(Twin(cheat));
  EXPECT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
}

// The job folder of a Python candidate (a warm worker's root, or a cold job's own folder) is
// bounded as kforge-worker's is: files written into it past the bound end the job.
TEST_F(PyTorchTest, GivenACandidateFillingItsJobFolderTheJobIsEndedAtItsBound) {
  const fs::path cheat = kKb / "candidates" / "12_fill_job_folder.py";
  const auto start = std::chrono::steady_clock::now();
  Verdict v = EvalAttack(cheat);
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError) << v.message;
  EXPECT_NE(v.message.find("filled its job folder"), std::string::npos) << v.message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60.0);
  ASSERT_TRUE(v.limits.contains("folder_bytes")) << v.limits.dump();
  EXPECT_LT(v.limits["folder_bytes"].get<uint64_t>(), 1024ull << 20);
  Verdict twin = EvalAttack(Twin(cheat));
  EXPECT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
}

TEST_F(PyTorchTest, GivenATritonKfRunCandidateOnAKforgeProblemTheInterpreterJudgesIt) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  Verdict v = Eval(kData / "scale" / "problem.toml", kData / "scale" / "good_triton.py", "triton");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  Verdict bad = Eval(kData / "scale" / "problem.toml", kData / "scale" / "overrun_triton.py", "triton");
  EXPECT_EQ(bad.status, VerdictStatus::kWrongOutput) << bad.message;
}

// The Triton seed of a bundled problem (the small candidate kforge_judge_bench times on a GPU):
// exact erf GELU, so it must pass gelu's strict precision policy.
TEST_F(PyTorchTest, GivenTheGeluTritonSeedTheInterpreterJudgesItCorrect) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  const fs::path gelu = kData / ".." / ".." / ".." / "problems" / "gelu";
  Verdict v = Eval(gelu / "problem.toml", gelu / "seeds" / "naive_triton.py", "triton");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(v.precision["policy"], "strict") << v.precision.dump();
}

// The compile pass's plumbing on the CPU (KFORGE_COMPILE_PASS=always): a second process of
// the candidate starts beside the judged one and ends before the judged one loads the
// candidate; the verdict is the same.
TEST_F(PyTorchTest, GivenACompilePassTheVerdictIsTheSameAndThePassEndsBeforeTheLoad) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  const fs::path gelu = kData / ".." / ".." / ".." / "problems" / "gelu";
  const fs::path candidate = NewSource(gelu / "seeds" / "naive_triton.py");
  setenv("KFORGE_COMPILE_PASS", "always", 1);
  Verdict v = Eval(gelu / "problem.toml", candidate, "triton");
  unsetenv("KFORGE_COMPILE_PASS");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_TRUE(v.stages.contains("python_candidate.compile pass")) << v.stages.dump();
  // The same source again: its cache is filled (on a GPU) or the pass is off (on the CPU).
  Verdict plain = Eval(gelu / "problem.toml", candidate, "triton");
  ASSERT_EQ(plain.status, VerdictStatus::kCorrect) << plain.message;
  EXPECT_FALSE(plain.stages.contains("python_candidate.compile pass")) << plain.stages.dump();
}

// On a GPU a new Triton candidate compiles in the compile pass, which holds no device lock,
// not in its first check, under the shared lock that other jobs' timed runs wait behind: the
// recorded first check then costs a fraction of the pass (kforge_pychild.py cmd_compile_pass).
TEST_F(PyTorchTest, GivenANewTritonCandidateOnAGpuItCompilesInTheCompilePassNotInTheFirstCheck) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  const std::string device = std::getenv("KFORGE_TORCH_DEVICE") ? std::getenv("KFORGE_TORCH_DEVICE") : "cpu";
  if (device.rfind("cuda", 0) != 0) GTEST_SKIP() << "the compile pass captures CUDA work; the device is " << device;
  const fs::path gelu = kData / ".." / ".." / ".." / "problems" / "gelu";
  const fs::path candidate = NewSource(gelu / "seeds" / "naive_triton.py");
  Verdict v = Eval(gelu / "problem.toml", candidate, "triton");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  const double pass = v.stages.value("python_candidate.child.compile pass", -1.0);
  const double first = v.stages.value("python_candidate.child.recorded call", -1.0);
  ASSERT_GT(pass, 0) << v.stages.dump();
  ASSERT_GE(first, 0) << v.stages.dump();
  EXPECT_LT(first, 0.5 * pass) << "the first check still compiled: " << v.stages.dump();
}

// On a GPU every timed call is queued behind the device's head start (kforge_pychild.py
// Device.set_queue): the job says how long it was, and how long the call's launches took the host.
TEST_F(PyTorchTest, GivenATritonCandidateOnAGpuItsTimedCallsAreQueuedBehindAHeadStart) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  const std::string device = std::getenv("KFORGE_TORCH_DEVICE") ? std::getenv("KFORGE_TORCH_DEVICE") : "cpu";
  if (device.rfind("cuda", 0) != 0) GTEST_SKIP() << "the head start is a spin on a CUDA device; the device is " << device;
  const fs::path gelu = kData / ".." / ".." / ".." / "problems" / "gelu";
  Verdict v = Eval(gelu / "problem.toml", gelu / "seeds" / "naive_triton.py", "triton");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_GT(v.fingerprint["device"].value("queue_ms", 0.0), 0.0) << v.fingerprint["device"].dump();
  const nlohmann::json& t = v.fingerprint["timing"];
  ASSERT_TRUE(t.contains("enqueue_median_ms")) << t.dump();
  EXPECT_GT(t["enqueue_median_ms"].get<double>(), 0.0);
  // The host's time leaves out the spin's: with it, every call's host time stood a whole head
  // start plus the launch path above its device time (the host_time gate's comparison).
  EXPECT_LT(v.timing->host_median_ms, v.fingerprint["device"]["queue_ms"].get<double>() + v.timing->device_median_ms)
      << t.dump();
  // The wall clock still sees the whole call: the median is never below its bound.
  EXPECT_GE(v.timing->median_ms, 0.999 * SupervisorBound(v));
}

// The head start is queued before the start event: a kernel on a stream of the candidate's own
// must not run beside it, unseen by the events and by the supervisor's clock. The spin takes
// every thread slot of every SM (DeviceSpin), so that work waits behind it.
TEST_F(PyTorchTest, GivenATritonKfRunWorkingOnASideStreamInTheHeadStartsShadowItIsStillTimed) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  const std::string device = std::getenv("KFORGE_TORCH_DEVICE") ? std::getenv("KFORGE_TORCH_DEVICE") : "cpu";
  if (device.rfind("cuda", 0) != 0) GTEST_SKIP() << "the head start is a spin on a CUDA device; the device is " << device;
  const fs::path cheat = kData / "exploits_triton" / "side_stream_shadow.py";
  Verdict twin = EvalTritonAttack(Twin(cheat), 6);
  ASSERT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
  EXPECT_GT(twin.fingerprint["device"].value("queue_ms", 0.0), 0.0) << twin.fingerprint["device"].dump();
  Verdict v = EvalTritonAttack(cheat, 6);
  ASSERT_TRUE(v.timing && twin.timing) << v.message;
  // How far the cheat lands from its gate, for the GPU log (scripts/gpu-check stage pytest): the
  // margin any change to the queued host-time allowance must keep.
  std::printf("side-stream cheat: %s, gate '%s', median %.4f ms (honest twin %.4f ms): %s\n", VerdictStatusName(v.status),
              v.gate.c_str(), v.timing->median_ms, twin.timing->median_ms, v.message.substr(0, 400).c_str());
  if (v.status == VerdictStatus::kCorrect) {
    EXPECT_GT(v.timing->median_ms, 0.5 * twin.timing->median_ms) << "honest twin " << twin.timing->median_ms << " ms";
  } else {
    EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
    EXPECT_TRUE(v.gate == "supervisor_clock" || v.gate == "host_time" || v.gate == "untimed_work") << v.gate << ": " << v.message;
  }
}

// A candidate's Triton cache is its own (python_worker.cc, CandidateCompileCache): what one
// plants there no candidate of other source sees; a later job of the same source does.
TEST_F(PyTorchTest, GivenACandidatePlantingInItsTritonCacheNoOtherCandidateSeesItAndItsOwnNextJobDoes) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  const fs::path planter = kData / "exploits_triton" / "plant_cache.py";
  Verdict a = EvalTritonAttack(planter);
  ASSERT_EQ(a.status, VerdictStatus::kCorrect) << a.message;
  Verdict b = EvalTritonAttack(kData / "exploits_triton" / "sees_planted.py");
  EXPECT_EQ(b.status, VerdictStatus::kCorrect) << b.message;
  Result<fs::path> cache = CacheDir();
  ASSERT_TRUE(cache.ok());
  Result<std::string> source = ReadFile(planter);
  ASSERT_TRUE(source.ok());
  const fs::path count = *cache / "python" / "candidate-triton" / Sha256Hex(*source) / "kforge-planted" / "count";
  Result<std::string> first = ReadFile(count);
  ASSERT_TRUE(first.ok()) << "the job's Triton cache was not kept under its source's digest: " << count;
  Verdict again = EvalTritonAttack(planter);
  ASSERT_EQ(again.status, VerdictStatus::kCorrect) << again.message;
  Result<std::string> second = ReadFile(count);
  ASSERT_TRUE(second.ok());
  EXPECT_GT(std::stoi(*second), std::stoi(*first)) << "the second job did not start from the first job's cache";
}

// --- Issue 10 item 1 for kforge problems judged with Python candidates: fresh timed inputs. ----

TEST_F(PyTorchTest, GivenATritonResultCacheOnAKforgeProblemFreshInputsMeanItNeverHits) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  // Timed runs that reused the check inputs let this cache answer every timed run with a copy;
  // fresh inputs per timed run (kforge_inputs.py, GenerateTensor's generator) never repeat.
  const fs::path cheat = kData / "exploits_triton" / "result_cache.py";
  Verdict v = EvalTritonAttack(cheat, 6);
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(v.fingerprint["timing"]["fresh_inputs"], true);
  EXPECT_EQ(v.fingerprint["timed_runs_checked"].size(), 3u) << v.fingerprint.dump();
  Verdict twin = EvalTritonAttack(Twin(cheat), 6);
  ASSERT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
  ASSERT_TRUE(v.timing && twin.timing);
  // A hit is a 16 KB copy instead of eight interpreted launches: far below half the twin's time.
  EXPECT_GT(v.timing->median_ms, 0.5 * twin.timing->median_ms) << "honest twin " << twin.timing->median_ms << " ms";
}

TEST_F(PyTorchTest, GivenATritonKfRunThatSkipsEveryOtherTimedCallItIsWrongOutputNamingTheRun) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  const fs::path cheat = kData / "exploits_triton" / "skip_stale.py";
  Verdict v = EvalTritonAttack(cheat);
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_EQ(v.gate, "timed_output");
  EXPECT_NE(v.message.find("timed run "), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("(fresh inputs, seed "), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("a skipped or cached call"), std::string::npos) << v.message;
  Verdict twin = EvalTritonAttack(Twin(cheat));
  EXPECT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
  EXPECT_EQ(twin.fingerprint["timing"]["fresh_inputs"], true);
}

TEST_F(PyTorchTest, GivenATritonKfRunReplayingNudgedOutputsTheRegeneratedReferenceOfSampledRunsCatchesIt) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  // No two outputs repeat, so only the sampled timed runs' reference check can see the stale
  // output: the orchestrator regenerates their inputs from their seeds (GenerateInputs) and runs
  // the problem's C++ reference on them. Every timed run is sampled here.
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EvalOptions o = Options("triton");
  o.static_check = false;
  o.timed_checks = 1000;
  Result<Verdict> v = Evaluate(*p, kData / "exploits_triton" / "skip_perturbed.py", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kWrongOutput) << v->message;
  EXPECT_EQ(v->gate, "timed_output");
  EXPECT_NE(v->message.find("(fresh inputs, seed "), std::string::npos) << v->message;
  EXPECT_NE(v->message.find("output 'y': "), std::string::npos) << v->message;  // the reference check's words
  EXPECT_EQ(v->message.find("byte-identical"), std::string::npos) << v->message;
  ASSERT_FALSE(v->trials.empty());
  EXPECT_TRUE(v->trials.back().contains("timed_run")) << v->trials.back().dump();
}

TEST_F(PyTorchTest, GivenTimedChecksTheTritonWorkerSendsBackThatManyTimedRunsForTheReferenceCheck) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  // --timed-checks reaches the Python worker: the reservoir kept 3 whatever was asked, so an
  // exploit that skipped every other timed call passed when all 3 samples fell on honest calls.
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const fs::path honest = Twin(kData / "exploits_triton" / "skip_stale.py");
  EvalOptions o = Options("triton");
  o.static_check = false;
  o.min_runs = o.max_runs = 8;
  o.budget_ms = 1000;
  for (int asked : {1000, 2, 0}) {
    o.timed_checks = asked;
    Result<Verdict> v = Evaluate(*p, honest, o, *runner_);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
    ASSERT_TRUE(v->timing);
    ASSERT_EQ(v->timing->runs, 8);
    const size_t want = static_cast<size_t>(std::min(asked, 8));
    EXPECT_EQ(v->fingerprint.value("timed_runs_checked", nlohmann::json::array()).size(), want) << "asked " << asked << ": " << v->fingerprint.dump();
  }
}

TEST_F(PyTorchTest, GivenAPythonCandidateJobThatDidNotEndCleanlyItsCompleteReportIsNotTrusted) {
  // The Python worker's report, like kforge-worker's (fault_test.cc), counts only from a process
  // that exited cleanly: faults injected after the job ran to its end (eval/fault_runner.h).
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("pytorch");
  struct Case { Fault fault; VerdictStatus status; const char* words; };
  for (const Case& c : {Case{Fault::kTimeout, VerdictStatus::kTimeout, "timed out after"},
                        Case{Fault::kCrash, VerdictStatus::kRuntimeError, "SIGSEGV"},
                        Case{Fault::kOutOfMemory, VerdictStatus::kRuntimeError, "out-of-memory killer"}}) {
    FaultInjectingRunner runner(*runner_, c.fault, "candidate", 1, FaultWhen::kAfterRun);
    Result<Verdict> v = Evaluate(*p, kKb / "candidates" / "12_torch_ops.py", o, runner);
    ASSERT_TRUE(v.ok()) << FaultName(c.fault) << ": " << v.status().ToString();
    EXPECT_EQ(runner.injected(), 1) << FaultName(c.fault);
    EXPECT_EQ(v->status, c.status) << FaultName(c.fault) << ": " << v->message;
    EXPECT_NE(v->message.find(c.words), std::string::npos) << FaultName(c.fault) << ": " << v->message;
  }
}

TEST_F(PyTorchTest, GivenATritonModelNewOnAKernelBenchProblemTheInterpreterJudgesIt) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("triton");
  o.quick = false;
  o.sizes = {{"batch_size", 40}, {"in_features", 96}, {"out_features", 72}};
  o.timing = false;
  Result<Verdict> v = Evaluate(*p, kKb / "candidates" / "12_triton.py", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
}

// --- Issue 10 item 6: the kernels one checking call ran (python/kforge_kernels.py). -------------

TEST_F(PyTorchTest, GivenACpuDeviceTheKernelsRecordSaysUnavailableWithAReasonAndTheChecksStillRun) {
  WorkerRun run = CheckOnly(kKb / "candidates" / "12_torch_ops.py", "cpu");
  ASSERT_TRUE(run.result.contains("kernels")) << run.result.dump(1);
  const nlohmann::json& k = run.result["kernels"];
  EXPECT_EQ(k["source"], "torch.profiler");
  EXPECT_EQ(k["available"], false);
  EXPECT_NE(k.value("reason", "").find("the device is the CPU"), std::string::npos) << k.dump();
  ASSERT_EQ(run.result.value("checks", nlohmann::json::array()).size(), 1u) << run.result.dump(1);
  EXPECT_TRUE(run.result["checks"][0].contains("ms_b"));
  Cleanup(run);
  // And a judgement over the same worker is still correct.
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("pytorch");
  o.quick = false;
  o.sizes = {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}};
  Result<Verdict> v = [&] {
    OnTheCpu cpu;
    return Evaluate(*p, kKb / "candidates" / "12_torch_ops.py", o, *runner_);
  }();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
}

// GPU cases: they skip without a CUDA device (and nvcc for load_inline, Triton for Triton).
TEST_F(PyTorchTest, GivenAnInlineCudaKernelThatDoesTheWorkItsNameIsInTheKernelsRecord) {
  const std::string device = CudaDevice();
  if (device.empty()) GTEST_SKIP() << "PyTorch sees no CUDA device here";
  WorkerRun run = CheckOnly(kKb / "candidates" / "12_load_inline_cuda.py", device);
  const nlohmann::json& k = run.result["kernels"];
  ASSERT_EQ(k.value("available", false), true) << k.dump(1);
  EXPECT_EQ(k["call"], "check set 0");
  std::vector<std::string> names = KernelNames(run);
  bool own = false;
  for (const std::string& n : names) own |= n.rfind("gemm_mul_leaky_kernel(", 0) == 0;
  EXPECT_TRUE(own) << k.dump(1);
  for (const nlohmann::json& r : k["records"]) {
    EXPECT_GE(r.value("calls", 0), 1) << r.dump();
    EXPECT_GT(r.value("device_ms", 0.0), 0.0) << r.dump();
    EXPECT_FALSE(r.value("streams", nlohmann::json::array()).empty()) << r.dump();
  }
  Cleanup(run);
}

TEST_F(PyTorchTest, GivenADecoyExtensionThatComputesWithTorchOnlyLibraryKernelsAreInTheRecord) {
  const std::string device = CudaDevice();
  if (device.empty()) GTEST_SKIP() << "PyTorch sees no CUDA device here";
  WorkerRun run = CheckOnly(kKb / "candidates" / "12_load_inline_decoy.py", device);
  const nlohmann::json& k = run.result["kernels"];
  ASSERT_EQ(k.value("available", false), true) << k.dump(1);
  std::vector<std::string> names = KernelNames(run);
  EXPECT_FALSE(names.empty()) << k.dump(1);
  for (const std::string& n : names) {
    EXPECT_EQ(n.find("decoy_scale_kernel"), std::string::npos) << n;
    // cuBLAS/cuBLASLt GEMMs (sm90_xmma_..., nvjet_..., cutlass) and ATen's own kernels.
    bool library = n.find("at::native") != std::string::npos || n.find("gemm") != std::string::npos ||
                   n.find("cublas") != std::string::npos || n.find("cutlass") != std::string::npos ||
                   n.rfind("nvjet", 0) == 0 || n.find("xmma") != std::string::npos;
    EXPECT_TRUE(library) << n;
  }
  Cleanup(run);
}

// The verdicts on the GPU: a decoy extension is no_custom_kernel, the honest one correct.
TEST_F(PyTorchTest, GivenADecoyExtensionOnTheGpuTheVerdictIsNoCustomKernelAndTheInlineKernelIsCorrect) {
  if (CudaDevice().empty()) GTEST_SKIP() << "PyTorch sees no CUDA device here";
  ScopedEnv on_the_gpu("KFORGE_TORCH_DEVICE", "cuda:0");  // the suite pins the CPU; these run on the GPU
  Result<Problem> p = LoadProblem(kGemm);
  ASSERT_TRUE(p.ok());
  EvalOptions o = Options("pytorch");
  o.quick = false;
  o.sizes = {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}};
  Result<Verdict> decoy = Evaluate(*p, kKb / "candidates" / "12_load_inline_decoy.py", o, *runner_);
  ASSERT_TRUE(decoy.ok()) << decoy.status().ToString();
  ASSERT_TRUE(decoy->kernels.value("available", false)) << decoy->kernels.dump(1);
  EXPECT_EQ(decoy->status, VerdictStatus::kNoCustomKernel) << decoy->message;
  EXPECT_NE(decoy->message.find("decoy_scale_kernel"), std::string::npos) << decoy->message;
  Result<Verdict> own = Evaluate(*p, kKb / "candidates" / "12_load_inline_cuda.py", o, *runner_);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->status, VerdictStatus::kCorrect) << own->message;
  EXPECT_GE(own->kernels.value("own_calls", 0), 1) << own->kernels.dump(1);
}

TEST_F(PyTorchTest, GivenATritonModelNewOnTheGpuItsJitFunctionIsInTheKernelsRecord) {
  const std::string device = CudaDevice();
  if (device.empty()) GTEST_SKIP() << "PyTorch sees no CUDA device here";
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  WorkerRun run = CheckOnly(kKb / "candidates" / "12_triton.py", device);
  const nlohmann::json& k = run.result["kernels"];
  ASSERT_EQ(k.value("available", false), true) << k.dump(1);
  std::vector<std::string> names = KernelNames(run);
  EXPECT_NE(std::find(names.begin(), names.end(), "gemm_epilogue"), names.end()) << k.dump(1);
  Cleanup(run);
}

}  // namespace
}  // namespace kforge
