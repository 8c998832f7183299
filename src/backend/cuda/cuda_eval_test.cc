// Specifications of the evaluation gates on a real CUDA device, end to end through the
// sandboxed worker, with the broken kernels in src/eval/testdata/bad_cuda/. Every case skips,
// with the probe's reason, where no CUDA device is usable (CI has none).
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <gtest/gtest.h>

#include "backend/registry.h"
#include "backend/theoretical_peaks.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "eval/compiler.h"
#include "kforge/eval.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;

class CudaEvalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeTempDir("cudaeval-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }
  void SetUp() override {
    Result<std::string> arch = DeviceArch(*runner_, *FindBackend("cuda"), 0);
    if (!arch.ok()) GTEST_SKIP() << "no usable CUDA device here: " << arch.status().message();
  }
  Verdict Eval(const std::string& name, double timeout = 60, const std::string& folder = "bad_cuda") {
    Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    EvalOptions o;
    o.backend = "cuda";
    o.budget_ms = 50;
    o.min_runs = 5;
    o.max_runs = 30;
    o.timeout_seconds = timeout;
    o.baselines = false;
    o.sanitize = sanitize_;
    o.static_check = folder == "bad_cuda";  // the exploits must be stopped without it
    Result<Verdict> v = Evaluate(*p, kData / folder / (name + ".cu"), o, *runner_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }
  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
  bool sanitize_ = false;
};

TEST_F(CudaEvalTest, GivenACorrectKernelItIsJudgedCorrectWithResourcesAndFingerprint) {
  Verdict v = Eval("control_good");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message << "\n" << v.compiler_output;
  ASSERT_TRUE(v.timing.has_value());
  EXPECT_GT(v.timing->median_ms, 0);
  EXPECT_GT(v.sol_percent, 0);
  nlohmann::json j = v.ToJson();
  EXPECT_FALSE(j["resources"]["kernels"].empty()) << j.dump(1);
  EXPECT_EQ(j["fingerprint"]["device"]["arch"], j["fingerprint"]["arch"]);
  EXPECT_GT(j["fingerprint"]["device"]["l2_bytes"].get<int64_t>(), 0);
  EXPECT_GT(j["precision"]["persisting_l2_resets"].get<int>() + 1, 0);
}

// The driver's attributes through the per-arch table: above what kforge's peak kernels measure
// (prints both, for docs/evaluation.md).
TEST_F(CudaEvalTest, GivenTheDeviceItsTheoreticalPeaksAreAboveTheMeasuredOnes) {
  Result<DevicePeaks> peaks = GetDevicePeaks("cuda", 0, *runner_);
  ASSERT_TRUE(peaks.ok()) << peaks.status().ToString();
  Result<TheoreticalPeaks> bound = TheoreticalPeaksFromJson(peaks->theoretical);
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  std::cout << "theoretical: " << peaks->theoretical.dump() << "\nmeasured: " << peaks->bandwidth_gbs << " GB/s, "
            << peaks->fp32_gflops << " GFLOP/s fp32\n";
  EXPECT_TRUE(bound->basis.value("table_row", false)) << "add this architecture to LookUpSmRates";
  EXPECT_NE(bound->bandwidth_source.find("dram"), std::string::npos);
  EXPECT_GE(bound->bandwidth_gbs, peaks->bandwidth_gbs);
  ASSERT_FALSE(bound->units.empty());
  EXPECT_GE(bound->units[0].gops, peaks->fp32_gflops);  // the CUDA cores
  EXPECT_GT(FastestUnit(*bound, 14).gflops, bound->units[0].gops);  // tensor cores beat them at fp32 accuracy
}

TEST_F(CudaEvalTest, GivenAWildPointerItIsARuntimeErrorNamingTheDeviceError) {
  Verdict v = Eval("illegal_address");
  EXPECT_EQ(v.status, VerdictStatus::kRuntimeError);
  EXPECT_NE(v.message.find("ILLEGAL_ADDRESS"), std::string::npos) << v.message;
}

TEST_F(CudaEvalTest, GivenAnEndlessKernelItTimesOut) {
  auto t0 = std::chrono::steady_clock::now();
  Verdict v = Eval("endless_loop", 10);
  EXPECT_EQ(v.status, VerdictStatus::kTimeout) << v.message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 90);
}

TEST_F(CudaEvalTest, GivenAWrongResultItIsWrongOutput) {
  EXPECT_EQ(Eval("wrong_result").status, VerdictStatus::kWrongOutput);
}

TEST_F(CudaEvalTest, GivenWorkOnAHiddenSideStreamTheHostTimeGateCatchesIt) {
  Verdict v = Eval("side_stream_hidden");
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
  EXPECT_EQ(v.gate, "host_time") << v.message;
}

TEST_F(CudaEvalTest, GivenAStaleOutputReplayItIsWrongOutput) {
  EXPECT_EQ(Eval("stale_output").status, VerdictStatus::kWrongOutput);
}

// The exploit classes of docs/evaluation.md on the device, static check off.
TEST_F(CudaEvalTest, GivenADeviceMemoryContentCacheFreshInputsMeanItNeverHits) {
  Verdict honest = Eval("honest_slow", 60, "exploits_cuda");
  ASSERT_EQ(honest.status, VerdictStatus::kCorrect) << honest.message;
  Verdict v = Eval("content_cache", 60, "exploits_cuda");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_GT(v.timing->median_ms, 0.5 * honest.timing->median_ms) << "honest " << honest.timing->median_ms << " ms";
}

TEST_F(CudaEvalTest, GivenSkippedWorkReplayingADeviceStashTheTimedOutputCheckCatchesIt) {
  Verdict v = Eval("skip_stale", 60, "exploits_cuda");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_EQ(v.gate, "timed_output") << v.message;
}

TEST_F(CudaEvalTest, GivenAPatchedEventTimerTheSupervisorsClockDecides) {
  Verdict honest = Eval("honest_slow", 60, "exploits_cuda");
  Verdict v = Eval("event_forge", 60, "exploits_cuda");
  ASSERT_TRUE(v.timing.has_value()) << v.message;
  EXPECT_LT(v.timing->device_median_ms, 0.05) << "the patch did not take: the test proves nothing";
  if (v.status == VerdictStatus::kCorrect) {
    EXPECT_GT(v.timing->median_ms, 0.5 * honest.timing->median_ms);
  } else {
    // The child's host clock also sees the gap (host_time); the supervisor's clock
    // (supervisor_clock) holds even when the host clock is patched as well.
    EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
    EXPECT_TRUE(v.gate == "supervisor_clock" || v.gate == "host_time") << v.gate << ": " << v.message;
  }
}

TEST_F(CudaEvalTest, GivenSanitizeTheMemcheckReportIsInTheVerdict) {
  sanitize_ = true;
  Verdict v = Eval("control_good");
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  ASSERT_TRUE(v.sanitizer.contains("runs")) << v.sanitizer.dump(1);
  const nlohmann::json& run = v.sanitizer["runs"][0];
  if (run.contains("error") && run["error"].get<std::string>().find("not found") != std::string::npos)
    GTEST_SKIP() << run["error"];
  EXPECT_EQ(run["errors"], 0) << run.dump(1);
}

}  // namespace
}  // namespace kforge
