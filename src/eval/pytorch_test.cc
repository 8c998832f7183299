// PyTorch problems (KernelBench format) and Python candidates, end to end through the Python
// worker on the CPU: loading, the float64 reference, ModelNew candidates (right, wrong and
// cheating), a native cpp candidate that receives the model's parameters as inputs, Triton
// candidates in Triton's interpreter, and the eager baseline.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "base/files.h"
#include "base/subprocess.h"
#include "eval/python_worker.h"
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
    static std::string dir = MakeTempDir("pytest-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
    setenv("KFORGE_TORCH_DEVICE", "cpu", 1);
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

TEST_F(PyTorchTest, GivenANativeCppCandidateItReceivesTheParametersAsNamedInputs) {
  Verdict v = Eval(kGemm, kKb / "candidates" / "12_native.cc", "cpp");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message << "\n" << v.compiler_output;
  EXPECT_EQ(v.trials.size(), 7u);
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

TEST_F(PyTorchTest, GivenATritonKfRunCandidateOnAKforgeProblemTheInterpreterJudgesIt) {
  if (!HaveTriton()) GTEST_SKIP() << "Triton is not importable here (" << probe_.value("triton_error", "") << ")";
  Verdict v = Eval(kData / "scale" / "problem.toml", kData / "scale" / "good_triton.py", "triton");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  Verdict bad = Eval(kData / "scale" / "problem.toml", kData / "scale" / "overrun_triton.py", "triton");
  EXPECT_EQ(bad.status, VerdictStatus::kWrongOutput) << bad.message;
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

}  // namespace
}  // namespace kforge
