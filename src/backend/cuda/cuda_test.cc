// Specifications of the cuda backend that hold without a GPU: the nvcc compile path and its
// cache key, the ptxas resource report, the deny rules, and the clear "no driver" answer.
// (On a machine with a GPU the no-driver cases skip, saying so.)
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/ptxas_report.h"
#include "backend/devices.h"
#include "backend/registry.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "eval/compiler.h"
#include "eval/static_check.h"
#include "eval/worker_client.h"
#include "kforge/eval.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;
const fs::path kProblems = KFORGE_PROBLEMS_DIR;

// As printed by nvcc 13.0 -Xptxas -v for two kernels (one with a local array on the stack).
const char kPtxasLog[] = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z3bigILi300EEvPf' for 'sm_90'
ptxas info    : Function properties for _Z3bigILi300EEvPf
    1200 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 1200 bytes cumulative stack size
ptxas info    : Compile time = 117.963 ms
ptxas info    : Compiling entry function '_Z12scale_kernelPKfPfffx' for 'sm_90'
ptxas info    : Function properties for _Z12scale_kernelPKfPfffx
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]
)";

class CudaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeScratchDir("cudatest-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }
  const BackendSpec& Cuda() { return *FindBackend("cuda"); }
  bool HaveNvcc() { return ToolchainVersion(*runner_, Cuda()).rfind("nvcc (not found)", 0) != 0; }
  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
};

TEST(PtxasReportTest, GivenTheReportItListsEachKernelsResources) {
  nlohmann::json r = ParsePtxasReport(kPtxasLog);
  ASSERT_EQ(r["kernels"].size(), 2u);
  const nlohmann::json& big = r["kernels"][0];
  EXPECT_EQ(big["name"], "void big<300>(float*)");
  EXPECT_EQ(big["arch"], "sm_90");
  EXPECT_EQ(big["registers"], 32);
  EXPECT_EQ(big["stack_bytes"], 1200);
  EXPECT_EQ(big["spill_store_bytes"], 8);
  EXPECT_EQ(big["spill_load_bytes"], 12);
  const nlohmann::json& scale = r["kernels"][1];
  EXPECT_EQ(scale["name"], "scale_kernel(float const*, float*, float, float, long long)");
  EXPECT_EQ(scale["registers"], 12);
  EXPECT_EQ(scale["barriers"], 1);
  EXPECT_EQ(scale["smem_bytes"], 1024);
  EXPECT_EQ(scale["cmem_bytes"], 368);
  EXPECT_TRUE(r["spills"].get<bool>());
}

TEST(PtxasReportTest, GivenNoReportItIsEmpty) {
  nlohmann::json r = ParsePtxasReport("candidate.cu(3): error: identifier \"x\" is undefined\n");
  EXPECT_TRUE(r["kernels"].empty());
  EXPECT_FALSE(r["spills"].get<bool>());
  EXPECT_EQ(StripPtxasReport(kPtxasLog), "");
}

TEST(CudaDenyRulesTest, GivenEachForbiddenCallTheStaticCheckNamesIt) {
  const std::vector<DenyRule>& rules = FindBackend("cuda")->deny;
  for (const char* bad : {"cudaStreamCreate(&s);", "cudaStreamCreateWithFlags(&s, 1);", "cudaDeviceSynchronize();",
                          "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);", "cudaCtxResetPersistingL2Cache();",
                          "cudaMalloc(&p, 16);", "cublasSgemm(h);", "cudnnCreate(&h);", "std::thread t(f);",
                          "long long t = clock64();", "asm(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));",
                          "cudaEventElapsedTime(&ms, a, b);", "y = __expf(x);", "k<<<1, 1, 0, cudaStreamPerThread>>>();",
                          "cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);"}) {
    EXPECT_FALSE(StaticCheck(bad, rules).empty()) << bad;
  }
  std::string good = "__global__ void k(float* y) { y[threadIdx.x] = expf(1.0f); }\n"
                     "k<<<g, b, 0, a->stream>>>(y); cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 16);\n"
                     "cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, a->stream);";
  EXPECT_TRUE(StaticCheck(good, rules).empty()) << StaticCheck(good, rules)[0];
}

// kf_digest's formula on the host (kforge_pychild.py's device_digest; the Python worker's tests
// check that one against the same formula in plain integers).
std::string HostDigest(const std::string& bytes) {
  auto mix = [](uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  uint64_t s1 = 0, s2 = 0;
  for (size_t i = 0; 4 * i < bytes.size(); ++i) {
    uint32_t w = 0;
    for (size_t k = 0; k < 4 && 4 * i + k < bytes.size(); ++k) w |= uint32_t(uint8_t(bytes[4 * i + k])) << (8 * k);
    const uint64_t x = (uint64_t(i) << 32) | w;
    s1 += mix(x);
    s2 += mix(x ^ 0x9e3779b97f4a7c15ull);
  }
  char text[64];
  std::snprintf(text, sizeof text, "d%016llx%016llx%llx", (unsigned long long)s1, (unsigned long long)s2,
                (unsigned long long)bytes.size());
  return text;
}

TEST(CudaDigestTest, GivenABufferOnTheGpuItsDigestIsTheFormulasAndAnyChangedByteChangesIt) {
  Result<std::vector<std::string>> here = ListCudaDevices();
  if (!here.ok() || here->empty()) GTEST_SKIP() << "no CUDA device here";
  Result<std::unique_ptr<Device>> dev = FindDeviceFactory("cuda")->open(0);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  for (size_t n : {size_t{0}, size_t{5}, size_t{4096}, size_t{(1 << 20) + 3}, size_t{64} << 20}) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 131 + (i >> 9) * 7) & 255);
    Result<BufferId> b = (*dev)->Alloc(std::max<size_t>(n, 1));
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE((*dev)->Write(*b, bytes.data(), n).ok());
    Result<std::string> d = (*dev)->Digest(*b, n);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(*d, HostDigest(bytes)) << n;
    if (n == 0) continue;
    bytes[n - 1] ^= 1;
    ASSERT_TRUE((*dev)->Write(*b, bytes.data(), n).ok());
    Result<std::string> changed = (*dev)->Digest(*b, n);
    ASSERT_TRUE(changed.ok());
    EXPECT_NE(*changed, *d) << n;
    EXPECT_EQ(*changed, HostDigest(bytes)) << n;
  }
}

TEST_F(CudaTest, GivenNoDriverTheProbeSaysWhatToInstall) {
  Result<std::vector<std::string>> here = ListCudaDevices();
  if (here.ok()) GTEST_SKIP() << "a CUDA device is usable here: " << (*here)[0];
  EXPECT_NE(here.status().message().find("libcuda.so.1"), std::string::npos) << here.status().message();
  // The same reason through kforge-worker, as the orchestrator sees it.
  Result<std::string> arch = DeviceArch(*runner_, Cuda(), 0);
  ASSERT_FALSE(arch.ok());
  EXPECT_NE(arch.status().message().find("no NVIDIA driver"), std::string::npos) << arch.status().message();
}

TEST_F(CudaTest, GivenEveryBundledCudaKernelNvccBuildsItAndReportsResources) {
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc is not installed here";
  int built = 0;
  for (const fs::path& file : ListBundledProblems()) {
    Result<Problem> p = LoadProblem(file);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    std::vector<fs::path> all;
    if (p->seeds.count("cuda")) all.push_back(p->seeds.at("cuda"));
    if (p->candidates.count("cuda")) for (const fs::path& c : p->candidates.at("cuda")) all.push_back(c);
    for (const fs::path& c : all) {
      EXPECT_TRUE(StaticCheck(ReadFile(c).value(), Cuda().deny).empty()) << c;
      Result<CompileOutput> out = Compile(*runner_, Cuda(), c, CompileKind::kCandidate, "sm_90");
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_TRUE(out->ok) << c << "\n" << out->log;
      EXPECT_FALSE(out->resources["kernels"].empty()) << c << "\n" << out->log;
      // Built by kforge-nvcc (cudafe++ and the device compile side by side), which passed ptxas's
      // report on as nvcc does.
      if (!out->command.empty()) EXPECT_EQ(fs::path(out->command[0]).filename(), "kforge-nvcc") << out->command[0];
      ++built;
    }
  }
  EXPECT_GE(built, 8);
}

TEST_F(CudaTest, GivenAnotherArchTheCacheKeyChanges) {
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc is not installed here";
  fs::path good = kData / "bad_cuda" / "control_good.cu";
  Result<CompileOutput> a = Compile(*runner_, Cuda(), good, CompileKind::kCandidate, "sm_90");
  Result<CompileOutput> b = Compile(*runner_, Cuda(), good, CompileKind::kCandidate, "sm_80");
  Result<CompileOutput> again = Compile(*runner_, Cuda(), good, CompileKind::kCandidate, "sm_90");
  ASSERT_TRUE(a.ok() && b.ok() && again.ok());
  EXPECT_TRUE(a->ok && b->ok) << a->log << b->log;
  EXPECT_NE(a->key, b->key);
  EXPECT_EQ(a->key, again->key);
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->resources, a->resources);  // the report is kept with the cached library
  EXPECT_NE(std::find(a->command.begin(), a->command.end(), "-arch=sm_90"), a->command.end());
}

TEST_F(CudaTest, GivenACompileErrorTheVerdictSaysSoWithoutAGpu) {
  if (!HaveNvcc()) GTEST_SKIP() << "nvcc is not installed here";
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  EvalOptions o;
  o.backend = "cuda";
  o.baselines = false;
  Result<Verdict> v = Evaluate(*p, kData / "bad_cuda" / "compile_error.cu", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCompileError);
  // nvcc is given candidate.cu; the log names the candidate's own file.
  EXPECT_NE(v->compiler_output.find("compile_error.cu(3)"), std::string::npos) << v->compiler_output;
  EXPECT_EQ(v->compiler_output.find("candidate.cu"), std::string::npos) << v->compiler_output;
}

TEST_F(CudaTest, GivenAnOpenSideStreamTheStaticCheckRefusesIt) {
  Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
  EvalOptions o;
  o.backend = "cuda";
  Result<Verdict> v = Evaluate(*p, kData / "bad_cuda" / "side_stream_plain.cu", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kSuspicious);
  EXPECT_EQ(v->gate, "static");
  EXPECT_NE(v->message.find("streams"), std::string::npos) << v->message;
}

TEST_F(CudaTest, GivenNoNvccTheCompileErrorSaysWhatToInstall) {
  const char* old = std::getenv("KFORGE_NVCC");
  std::string saved = old ? old : "";
  setenv("KFORGE_NVCC", "/nonexistent/nvcc", 1);
  // A source no other test compiles, so the cache cannot answer.
  fs::path dir = MakeTempDir("nvcc-missing").value();
  ASSERT_TRUE(WriteFileAtomic(dir / "k.cu", "// unique 7f3a\n#include \"kforge_cuda.h\"\n").ok());
  Result<CompileOutput> out = Compile(*runner_, Cuda(), dir / "k.cu", CompileKind::kCandidate, "sm_90");
  if (old) setenv("KFORGE_NVCC", saved.c_str(), 1); else unsetenv("KFORGE_NVCC");
  std::error_code ec;
  fs::remove_all(dir, ec);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->ok);
  EXPECT_NE(out->log.find("nvcc not found"), std::string::npos) << out->log;
}

}  // namespace
}  // namespace kforge
