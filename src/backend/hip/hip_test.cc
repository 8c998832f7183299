// Specifications of the hip backend that hold without an AMD GPU: the hipcc compile path for
// every bundled kernel and supported target, its cache key, the resource report of real hipcc
// output, the deny rules, the runtime loader's constants, and the clear "no runtime / no GPU"
// answers. (On a machine with an AMD GPU the no-GPU cases skip, saying so.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#ifdef KFORGE_HAVE_HIP_H
#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>
#endif

#include "backend/hip/hip_device.h"
#include "backend/hip/hip_resource_report.h"
#include "backend/hip/hip_runtime.h"
#include "backend/hip/hip_toolchain.h"
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
const fs::path kData = KFORGE_HIP_TESTDATA;
const fs::path kEvalData =
    fs::path(KFORGE_PROBLEMS_DIR).parent_path() / "src" / "eval" / "testdata";

class HipTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeScratchDir("hiptest-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }
  const BackendSpec& Hip() { return *FindBackend("hip"); }
  bool HaveHipcc() { return !FindHipcc().empty(); }
  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
};

TEST(HipResourceReportTest, GivenRealHipccRemarksItListsEachKernelsResources) {
  // Captured from Debian 12's hipcc 5.2.3 (testdata/hipcc/README.md).
  nlohmann::json r =
      ParseHipResourceReport(ReadFile(kData / "hipcc" / "two_kernels_gfx90a.log").value());
  ASSERT_EQ(r["kernels"].size(), 2u) << r.dump(1);
  const nlohmann::json& spill = r["kernels"][0];
  EXPECT_EQ(spill["name"], "spill_kernel(float*, int const*)");
  EXPECT_EQ(spill["mangled"], "_Z12spill_kernelPfPKi");
  EXPECT_EQ(spill["sgprs"], 32);
  EXPECT_EQ(spill["vgprs"], 40);
  EXPECT_EQ(spill["agprs"], 0);
  EXPECT_EQ(spill["scratch_bytes_per_lane"], 1216);
  EXPECT_EQ(spill["occupancy_waves_per_simd"], 8);
  EXPECT_EQ(spill["vgpr_spills"], 0);
  const nlohmann::json& scale = r["kernels"][1];
  EXPECT_EQ(scale["name"], "scale_kernel(float const*, float*, float, long)");
  EXPECT_EQ(scale["vgprs"], 6);
  EXPECT_EQ(scale["lds_bytes"], 1024);
  EXPECT_TRUE(r["scratch"].get<bool>());
  EXPECT_FALSE(r["spills"].get<bool>());
}

TEST(HipResourceReportTest, GivenNoReportItIsEmpty) {
  nlohmann::json r =
      ParseHipResourceReport("candidate.hip:3:47: error: use of undeclared identifier 'x'\n");
  EXPECT_TRUE(r["kernels"].empty());
  EXPECT_FALSE(r["spills"].get<bool>());
}

TEST(HipDenyRulesTest, GivenEachForbiddenCallTheStaticCheckNamesIt) {
  const std::vector<DenyRule>& rules = FindBackend("hip")->deny;
  for (const char* bad : {"hipStreamCreate(&s);",
                          "hipStreamCreateWithFlags(&s, 1);",
                          "hipDeviceSynchronize();",
                          "hipDeviceSetLimit(hipLimitMallocHeapSize, 0);",
                          "hipMalloc(&p, 16);",
                          "hipFree(p);",
                          "rocblas_sgemm(h);",
                          "hipblasSgemm(h);",
                          "miopenCreate(&h);",
                          "std::thread t(f);",
                          "long long t = clock64();",
                          "long long t = wall_clock64();",
                          "t = __builtin_amdgcn_s_memtime();",
                          "hipEventElapsedTime(&ms, a, b);",
                          "y = __expf(x);",
                          "k<<<1, 1, 0, hipStreamPerThread>>>();",
                          "hipModuleLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, p, 0);",
                          "hipMemcpy(d, s, n, hipMemcpyDefault);",
                          "hipGraphLaunch(g, s);",
                          "hipSetDevice(1);"}) {
    EXPECT_FALSE(StaticCheck(bad, rules).empty()) << bad;
  }
  std::string good =
      "__global__ void k(float* y) { y[threadIdx.x] = expf(1.0f); }\n"
      "k<<<g, b, 0, a->stream>>>(y); hipLaunchKernelGGL(k, dim3(g), dim3(b), 0, a->stream, y);\n"
      "hipMemcpyAsync(d, s, n, hipMemcpyDeviceToDevice, a->stream); float v = __shfl_xor(s, 1, "
      "32);";
  EXPECT_TRUE(StaticCheck(good, rules).empty()) << StaticCheck(good, rules)[0];
}

TEST(HipRuntimeTest, GivenNoRuntimeLibraryTheMessageSaysWhatToInstall) {
  Result<const hip::Api*> api = hip::LoadHipRuntimeFrom({"/nonexistent/libamdhip64.so"});
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable);
  const std::string& m = api.status().message();
  EXPECT_NE(m.find("no HIP runtime"), std::string::npos) << m;
  EXPECT_NE(m.find("apt-get install libamdhip64-5"), std::string::npos) << m;
  EXPECT_NE(m.find("gfx90a"), std::string::npos) << m;
  EXPECT_NE(m.find("gfx942"), std::string::npos) << m;  // which GPUs need a newer ROCm
}

TEST(HipRuntimeTest, GivenALibraryThatIsNotTheHipRuntimeItNamesTheMissingEntryPoint) {
  Result<const hip::Api*> api = hip::LoadHipRuntimeFrom({"libm.so.6"});
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("libm.so.6 lacks hipInit"), std::string::npos)
      << api.status().message();
}

TEST(HipRuntimeTest, GivenThisMachineOpeningADeviceSaysWhyNot) {
  Result<std::vector<std::string>> here = ListHipDevices();
  if (here.ok()) GTEST_SKIP() << "an AMD GPU is usable here: " << (*here)[0];
  const std::string& m = here.status().message();
  // Either no libamdhip64 at all, or (Debian's hipcc installs it) the runtime without a GPU.
  bool no_library = m.find("no HIP runtime") != std::string::npos;
  bool no_gpu =
      m.find("finds no AMD GPU") != std::string::npos && m.find("/dev/kfd") != std::string::npos;
  EXPECT_TRUE(no_library || no_gpu) << m;
  EXPECT_NE(m.find("ROCm"), std::string::npos) << m;
  Result<std::unique_ptr<Device>> dev = NewHipDevice(0);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().message(), m);
}

TEST(HipRuntimeTest, GivenTheRuntimesArchNameItKeepsTheTarget) {
  EXPECT_EQ(ArchFromGcnArchName("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(ArchFromGcnArchName("gfx1030"), "gfx1030");
  EXPECT_EQ(ArchFromGcnArchName(""), "");
}

#ifdef KFORGE_HAVE_HIP_H
TEST(HipRuntimeTest, GivenTheInstalledHeaderKforgesConstantsMatchIt) {
  EXPECT_EQ(hip::kAttrClockRateKhz, hipDeviceAttributeClockRate);
  EXPECT_EQ(hip::kAttrL2CacheBytes, hipDeviceAttributeL2CacheSize);
  EXPECT_EQ(hip::kAttrMemoryBusWidth, hipDeviceAttributeMemoryBusWidth);
  EXPECT_EQ(hip::kAttrMemoryClockKhz, hipDeviceAttributeMemoryClockRate);
  EXPECT_EQ(hip::kAttrComputeUnits, hipDeviceAttributeMultiprocessorCount);
  EXPECT_EQ(hip::kAttrPciBusId, hipDeviceAttributePciBusId);
  EXPECT_EQ(hip::kAttrWarpSize, hipDeviceAttributeWarpSize);
  EXPECT_EQ(hip::kErrorNoDevice, hipErrorNoDevice);
  EXPECT_EQ(hip::kMemcpyHostToDevice, hipMemcpyHostToDevice);
  EXPECT_EQ(hip::kMemcpyDeviceToHost, hipMemcpyDeviceToHost);
  EXPECT_EQ(hip::kMemcpyDeviceToDevice, hipMemcpyDeviceToDevice);
#if HIP_VERSION_MAJOR < 6
  EXPECT_EQ(hip::kPropNameOffset, offsetof(hipDeviceProp_t, name));
  EXPECT_EQ(hip::kPropTotalGlobalMemOffset, offsetof(hipDeviceProp_t, totalGlobalMem));
  EXPECT_EQ(hip::kPropGcnArchNameOffset, offsetof(hipDeviceProp_t, gcnArchName));
  EXPECT_LE(sizeof(hipDeviceProp_t), hip::kPropBufferBytes);
#endif
}
#endif

TEST_F(HipTest, GivenNoAmdGpuTheWorkerProbeSaysWhy) {
  Result<std::string> arch = DeviceArch(*runner_, Hip(), 0);
  if (arch.ok()) GTEST_SKIP() << "an AMD GPU is usable here: " << *arch;
  const std::string& m = arch.status().message();
  EXPECT_TRUE(m.find("no HIP runtime") != std::string::npos ||
              m.find("finds no AMD GPU") != std::string::npos)
      << m;
  std::string guessed;
  EXPECT_EQ(BuildArch(*runner_, Hip(), 0, &guessed), "gfx90a");
  EXPECT_NE(guessed.find("compiled for gfx90a without a device to ask"), std::string::npos)
      << guessed;
}

TEST_F(HipTest, GivenEveryBundledHipKernelHipccBuildsItForEachTargetAndReportsResources) {
  if (!HaveHipcc()) GTEST_SKIP() << "hipcc is not installed here (scripts/setup installs it)";
  int built = 0;
  for (const std::string& target : SupportedHipTargets()) {
    for (const fs::path& file : ListBundledProblems()) {
      Result<Problem> p = LoadProblem(file);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      std::vector<fs::path> all;
      if (p->seeds.count("hip")) all.push_back(p->seeds.at("hip"));
      if (p->candidates.count("hip")) {
        for (const fs::path& c : p->candidates.at("hip")) all.push_back(c);
      }
      if (p->seeds.count("cuda")) {
        EXPECT_FALSE(all.empty()) << file << " has cuda kernels but no hip ones";
      }
      for (const fs::path& c : all) {
        EXPECT_TRUE(StaticCheck(ReadFile(c).value(), Hip().deny).empty()) << c;
        Result<CompileOutput> out = Compile(*runner_, Hip(), c, CompileKind::kCandidate, target);
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        EXPECT_TRUE(out->ok) << c << " for " << target << "\n" << out->log;
        EXPECT_EQ(out->arch, target);
        EXPECT_NE(std::find(out->command.begin(), out->command.end(), "--offload-arch=" + target),
                  out->command.end());
        EXPECT_FALSE(out->resources["kernels"].empty()) << c << "\n" << out->log;
        for (const nlohmann::json& k : out->resources["kernels"])
          EXPECT_GT(k.value("vgprs", 0), 0) << k.dump();
        ++built;
      }
    }
  }
  EXPECT_GE(built, 16 * static_cast<int>(
                            SupportedHipTargets().size()));  // 8 seeds + 8 candidates per target
}

TEST_F(HipTest, GivenAnotherTargetTheCacheKeyChanges) {
  if (!HaveHipcc()) GTEST_SKIP() << "hipcc is not installed here (scripts/setup installs it)";
  fs::path good = kData / "hip" / "control_good.hip";
  Result<CompileOutput> a = Compile(*runner_, Hip(), good, CompileKind::kCandidate, "gfx90a");
  Result<CompileOutput> b = Compile(*runner_, Hip(), good, CompileKind::kCandidate, "gfx1030");
  Result<CompileOutput> again = Compile(*runner_, Hip(), good, CompileKind::kCandidate, "gfx90a");
  ASSERT_TRUE(a.ok() && b.ok() && again.ok());
  EXPECT_TRUE(a->ok && b->ok) << a->log << b->log;
  EXPECT_NE(a->key, b->key);
  EXPECT_EQ(a->key, again->key);
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->resources, a->resources);  // the report is kept with the cached library
  // gfx90a has AGPRs (matrix cores), gfx1030 does not: the report is the target's own.
  EXPECT_TRUE(a->resources["kernels"][0].contains("agprs")) << a->resources.dump();
  EXPECT_FALSE(b->resources["kernels"][0].contains("agprs")) << b->resources.dump();
}

TEST_F(HipTest, GivenATargetThisHipccDoesNotKnowTheCompileErrorSaysSo) {
  if (!HaveHipcc()) GTEST_SKIP() << "hipcc is not installed here (scripts/setup installs it)";
  Result<CompileOutput> out = Compile(*runner_, Hip(), kData / "hip" / "control_good.hip",
                                      CompileKind::kCandidate, "gfx942");
  ASSERT_TRUE(out.ok());
  if (out->ok)
    GTEST_SKIP() << "this hipcc builds gfx942 (ROCm 6 or newer): "
                 << ToolchainVersion(*runner_, Hip());
  EXPECT_NE(out->log.find("gfx942"), std::string::npos) << out->log;
}

TEST_F(HipTest, GivenACompileErrorTheVerdictSaysSoWithoutAGpu) {
  if (!HaveHipcc()) GTEST_SKIP() << "hipcc is not installed here (scripts/setup installs it)";
  Result<Problem> p = LoadProblem(kEvalData / "scale" / "problem.toml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EvalOptions o;
  o.backend = "hip";
  o.baselines = false;
  Result<Verdict> v = Evaluate(*p, kData / "hip" / "compile_error.hip", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCompileError);
  // hipcc is given candidate.hip; the log names the candidate's own file.
  EXPECT_NE(v->compiler_output.find("compile_error.hip:3"), std::string::npos)
      << v->compiler_output;
  EXPECT_NE(v->compiler_output.find("undefined_name"), std::string::npos) << v->compiler_output;
  EXPECT_EQ(v->compiler_output.find("candidate.hip"), std::string::npos) << v->compiler_output;
}

TEST_F(HipTest, GivenAnOpenSideStreamTheStaticCheckRefusesIt) {
  Result<Problem> p = LoadProblem(kEvalData / "scale" / "problem.toml");
  EvalOptions o;
  o.backend = "hip";
  Result<Verdict> v = Evaluate(*p, kData / "hip" / "side_stream_plain.hip", o, *runner_);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kSuspicious);
  EXPECT_EQ(v->gate, "static");
  EXPECT_NE(v->message.find("streams"), std::string::npos) << v->message;
}

TEST_F(HipTest, GivenNoHipccTheCompileErrorSaysWhatToInstall) {
  const char* old = std::getenv("KFORGE_HIPCC");
  std::string saved = old ? old : "";
  setenv("KFORGE_HIPCC", "/nonexistent/hipcc", 1);
  fs::path dir = MakeTempDir("hipcc-missing").value();
  ASSERT_TRUE(WriteFileAtomic(dir / "k.hip", "// unique 91c2\n#include \"kforge_hip.h\"\n").ok());
  Result<CompileOutput> out =
      Compile(*runner_, Hip(), dir / "k.hip", CompileKind::kCandidate, "gfx90a");
  if (old)
    setenv("KFORGE_HIPCC", saved.c_str(), 1);
  else
    unsetenv("KFORGE_HIPCC");
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->ok);
  EXPECT_NE(out->log.find("hipcc not found"), std::string::npos) << out->log;
  EXPECT_NE(out->log.find("apt-get install hipcc"), std::string::npos) << out->log;
}

}  // namespace
}  // namespace kforge
