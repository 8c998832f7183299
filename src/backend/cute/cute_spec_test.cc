// What can be proved of the cute backend without a GPU: its registry row, its ABI's prompt,
// and the doctor's and judge's words when CuTe DSL or a GPU is missing. The seeds' compile
// check is cute_compile_check_test.sh; judging them needs an H200 (scripts/gpu-check, stage cute).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "backend/registry.h"
#include "eval/kernels.h"
#include "eval/python_worker.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Denied(const BackendSpec& b, const std::string& source) {
  for (const DenyRule& r : b.deny)
    if (std::regex_search(source, std::regex(r.pattern))) return true;
  return false;
}

TEST(CuteSpecTest, TheRegistryHasACuteRowHostedByThePythonWorkerOnAGpuOnly) {
  const BackendSpec* b = FindBackend("cute");
  ASSERT_NE(b, nullptr) << BackendNames();
  EXPECT_TRUE(b->python_hosted);
  EXPECT_TRUE(b->gpu_required);
  EXPECT_TRUE(b->wants_gpu);
  EXPECT_STREQ(b->entry, "kf_run");
  EXPECT_STREQ(b->python_module, "cutlass");
  EXPECT_NE(std::string(b->python_module_install).find("nvidia-cutlass-dsl"), std::string::npos);
  EXPECT_EQ(b->extensions, std::vector<std::string>{".py"});
  EXPECT_STREQ(b->abi_header, "");
  // .py is every backend's KernelBench form: no extension picks cute by itself.
  EXPECT_EQ(BackendForExtension(".py"), nullptr);
  EXPECT_NE(BackendNames().find("cute"), std::string::npos);
  // Only cute needs a GPU it cannot do without; Triton has its interpreter.
  EXPECT_FALSE(FindBackend("triton")->gpu_required);
}

TEST(CuteSpecTest, GivenFastMathKeywordsTheStaticCheckDeniesThemAndThePythonRulesStillApply) {
  const BackendSpec& b = *FindBackend("cute");
  EXPECT_TRUE(Denied(b, "y[i] = cute.math.exp(v, fastmath=True)"));
  EXPECT_TRUE(Denied(b, "t = cute.math.tanh(u, approx=True)"));
  EXPECT_TRUE(Denied(b, "import subprocess"));
  EXPECT_FALSE(Denied(b, "y[i] = cute.math.exp(v)\nz = cute.math.tanh(u, approx=False)"));
  for (const char* seed : {"gelu", "row_sum", "softmax", "layernorm", "matmul", "gemm_bias_relu",
                           "gemm_scale_gelu_residual", "conv2d_relu"})
    EXPECT_FALSE(Denied(
        b, Read(fs::path(KFORGE_SOURCE_DIR) / "problems" / seed / "seeds" / "naive_cute.py")))
        << seed;
}

TEST(CuteSpecTest, ThePromptHasTheAnswerFormatTheAbiAndOneWorkedExample) {
  const std::string prompt = Read(fs::path(KFORGE_SOURCE_DIR) / "prompts" / "backends" / "cute.md");
  for (const char* section : {"answer-format", "abi-summary", "example"})
    EXPECT_NE(prompt.find(section), std::string::npos) << section;
  for (const char* word : {"@cute.kernel", "@cute.jit", "kf_run(inputs, outputs, attrs)",
                           "cute.compile", "current_stream"})
    EXPECT_NE(prompt.find(word), std::string::npos) << word;
  const std::string abi = Read(fs::path(KFORGE_SOURCE_DIR) / "docs" / "abi-cute.md");
  EXPECT_NE(abi.find("kf_run(inputs, outputs, attrs)"), std::string::npos);
}

TEST(CuteSpecTest, GivenNoCutlassModuleTheDoctorAndJudgeSayHowToInstallIt) {
  const nlohmann::json probe = {{"python", "3.11.2"},
                                {"executable", "/opt/kforge/venv/bin/python3"},
                                {"torch", "2.11.0"},
                                {"cuda", "13.0"},
                                {"devices", {"cpu", "cuda:0 NVIDIA H200"}},
                                {"cutlass_error", "No module named 'cutlass'"}};
  const std::string why = PythonBackendUnusable(*FindBackend("cute"), probe);
  EXPECT_NE(why.find("'cutlass'"), std::string::npos) << why;
  EXPECT_NE(why.find("No module named 'cutlass'"), std::string::npos) << why;
  EXPECT_NE(why.find("pip install nvidia-cutlass-dsl"), std::string::npos) << why;
  EXPECT_NE(why.find("KFORGE_PYTHON"), std::string::npos) << why;
}

TEST(CuteSpecTest, GivenCutlassButNoCudaDeviceTheDoctorAndJudgeSayItNeedsAnNvidiaGpu) {
  if (std::getenv("KFORGE_TORCH_DEVICE"))
    GTEST_SKIP() << "KFORGE_TORCH_DEVICE is set: it chooses the device";
  const nlohmann::json cpu_only = {
      {"python", "3.11.2"}, {"executable", "/opt/kforge/cute-venv/bin/python3"},
      {"torch", "1.13.0"},  {"cuda", nullptr},
      {"devices", {"cpu"}}, {"cutlass", "4.8.1"}};
  const std::string why = PythonBackendUnusable(*FindBackend("cute"), cpu_only);
  EXPECT_NE(why.find("only on an NVIDIA GPU"), std::string::npos) << why;
  EXPECT_NE(why.find("no CUDA device"), std::string::npos) << why;
  // Triton judges the same interpreter in its interpreter mode; with a GPU, cute is usable.
  nlohmann::json triton = cpu_only;
  triton["triton"] = "3.2.0";
  EXPECT_EQ(PythonBackendUnusable(*FindBackend("triton"), triton), "");
  nlohmann::json gpu = cpu_only;
  gpu["devices"] = {"cpu", "cuda:0 NVIDIA H200"};
  EXPECT_EQ(PythonBackendUnusable(*FindBackend("cute"), gpu), "");
}

TEST(CuteSpecTest, GivenNoPyTorchItsErrorComesFirst) {
  const nlohmann::json probe = {{"error", "PyTorch does not import: x"}, {"cutlass", "4.8.1"}};
  EXPECT_EQ(PythonBackendUnusable(*FindBackend("cute"), probe), "PyTorch does not import: x");
}

// A kernel record as the Python child writes it (eval/kernels.h), with one checking call.
nlohmann::json Record(std::vector<nlohmann::json> records) {
  return {{"source", "cupti"}, {"available", true}, {"call", "check set 0"}, {"records", records},
          {"memcpy", nlohmann::json::object()}, {"harness_stream", 7}};
}

nlohmann::json Kernel(const std::string& name, double ms) {
  return {{"name", name}, {"calls", 1}, {"device_ms", ms}, {"streams", {7}}, {"graph", false}, {"after_return", 0}};
}

// The spec's kernel_decorators and kernel_name_prefix at work in kernel accounting. CuTe DSL emits a @cute.kernel function `f` as kernel_cutlass_f_<argument
// types>_<n> (the name CuTe DSL 4.8 gave when compiling problems/gelu/seeds/naive_cute.py for
// sm_90a); @cute.jit functions run on the host and are no kernels.
TEST(CuteKernelAccountingTest, GivenACuteDslCandidateItsEmittedKernelsAreItsOwn) {
  const std::string source = R"(import cutlass.cute as cute
@cute.kernel
def gelu_kernel(x: cute.Tensor, y: cute.Tensor):
    pass
@cute.jit
def gelu(x: cute.Tensor, y: cute.Tensor, stream):
    gelu_kernel(x, y).launch(grid=(1, 1, 1), block=(256, 1, 1), stream=stream)
class Gemm:
    @cute.kernel
    def kernel(self, a: cute.Tensor):
        pass
)";
  EXPECT_EQ(OwnKernelNames(source), (std::vector<std::string>{"gelu_kernel", "kernel"}));
  KernelAccounting a = AccountKernels(
      Record({Kernel("kernel_cutlass_gelu_kernel_tensorptrf32gmemo1_tensorptrf32gmemo1__0", 0.5)}), source, 4e6, 4800);
  EXPECT_FALSE(a.no_custom_kernel) << a.message;
  EXPECT_EQ(a.summary["own_calls"], 1);
  const std::vector<std::string> own = OwnKernelNames(source), ns;
  EXPECT_TRUE(IsOwnKernel("kernel_cutlass_kernel_tensorptrf16gmemo1_0", own, ns));  // a class's kernel method
  EXPECT_FALSE(IsOwnKernel("kernel_cutlass_softmax_tensorptrf32gmemo1_0", own, ns));
  EXPECT_FALSE(IsOwnKernel("kernel_cutlass_gelu_tensorptrf32gmemo1_0", own, ns));  // the @cute.jit name
  EXPECT_TRUE(AccountKernels(Record({Kernel("kernel_cutlass_gelu_tensorptrf32gmemo1_0", 0.5)}), source, 4e6, 4800)
                  .no_custom_kernel);
}

TEST(CuteSpecTest, ItsCompileExceptionReachesEveryPythonJob) {
  const BackendSpec* b = FindBackend("cute");
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->first_call_compile_errors, (std::vector<std::string>{"cutlass.base_dsl:DSLUserCodeError"}));
  const std::vector<std::string> all = FirstCallCompileErrors();
  EXPECT_NE(std::find(all.begin(), all.end(), "cutlass.base_dsl:DSLUserCodeError"), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), "triton:CompilationError"), all.end());
}

}  // namespace
}  // namespace kforge
