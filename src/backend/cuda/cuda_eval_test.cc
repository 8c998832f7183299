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
#include "eval/worker_client.h"
#include "kforge/eval.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;

class CudaEvalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeScratchDir("cudaeval-cache").value().string();
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
  // The first check of a `scale` candidate from testdata/kernels_cuda/ through the sandboxed
  // kforge-worker, and result.json's "kernels" record of it. Skips where no libcupti is found.
  nlohmann::json KernelRecordOf(const std::string& name) {
    const BackendSpec& cuda = *FindBackend("cuda");
    Result<std::string> arch = DeviceArch(*runner_, cuda, 0);
    Result<CompileOutput> built = Compile(*runner_, cuda, kData / "kernels_cuda" / (name + ".cu"), CompileKind::kCandidate, *arch);
    EXPECT_TRUE(built.ok() && built->ok) << (built.ok() ? built->log : built.status().ToString());
    if (!built.ok() || !built->ok) return nullptr;
    const int64_t n = 4096;
    TensorShape x{"x", DType::kFloat32, {n}}, y{"y", DType::kFloat32, {n}};
    Job job;
    job.backend = "cuda";
    job.entry = cuda.entry;
    job.check_twice = false;
    job.checks = {0};
    job.sets.push_back({1.0, {{"n", n, double(n)}, {"scale", 2, 2.0}, {"shift", 0, 0.5}}, {{x, "", std::nullopt}}, {{y, "", std::nullopt}}});
    WorkerFiles files;
    files.library = built->library;
    files.inputs = {{HostTensor(x, std::string(x.bytes(), '\0'))}};
    Limits limits;
    limits.wall_seconds = 120;
    limits.address_space_bytes = 0;  // CUDA reserves more address space than any sane limit
    Result<WorkerRun> run = RunWorker(*runner_, job, files, limits);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    if (!run.ok()) return nullptr;
    Cleanup(*run);
    EXPECT_TRUE(run->finished()) << run->process.Describe() << " at " << run->last_stage << ": " << run->result.dump(1);
    nlohmann::json k = run->result.value("kernels", nlohmann::json());
    std::cout << name << ": " << k.dump() << "\n";
    return k;
  }
  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
  bool sanitize_ = false;
};

// Skips, saying why, when the worker found no libcupti; any other reason fails the test.
#define KF_NEED_CUPTI(k)                                                                        \
  do {                                                                                          \
    ASSERT_TRUE((k).is_object()) << (k).dump();                                                 \
    if (!(k).value("available", false)) {                                                       \
      std::string why = (k).value("reason", "");                                                \
      if (why.find("libcupti not found") != std::string::npos) GTEST_SKIP() << why;             \
      FAIL() << "CUPTI is there but did not record: " << why;                                   \
    }                                                                                           \
  } while (0)

bool HasKernel(const nlohmann::json& k, const std::string& part) {
  for (const nlohmann::json& r : k["records"])
    if (r["name"].get<std::string>().find(part) != std::string::npos) return true;
  return false;
}

TEST_F(CudaEvalTest, GivenACandidatesKernelRunsTheRecordNamesIt) {
  nlohmann::json k = KernelRecordOf("own_kernel");
  KF_NEED_CUPTI(k);
  EXPECT_EQ(k["source"], "cupti");
  EXPECT_EQ(k["call"], "check set 0");
  ASSERT_EQ(k["records"].size(), 1u) << k.dump(1);
  const nlohmann::json& r = k["records"][0];
  EXPECT_NE(r["name"].get<std::string>().find("kf_record_scale"), std::string::npos) << r.dump();
  EXPECT_EQ(r["calls"], 1);
  EXPECT_GT(r["device_ms"].get<double>(), 0);
  EXPECT_FALSE(r["graph"].get<bool>());
  if (k.contains("harness_stream")) {
    EXPECT_EQ(r["streams"], nlohmann::json::array({k["harness_stream"]})) << k.dump();
  }
  EXPECT_GT(k["window_ms"].get<double>(), 0);
  // kforge's uploads and read-backs are outside the recorded call (the runtime's own start-up
  // in the candidate's first call may copy a little).
  EXPECT_LT(k["memcpy"]["bytes"].get<int64_t>(), 4096 * 4) << k.dump(1);
  EXPECT_EQ(k["memset"]["count"], 0) << "kforge's poison fill is outside the recorded call";
}

TEST_F(CudaEvalTest, GivenADecoyKernelNeverLaunchedTheRecordHoldsOnlyTheCopies) {
  nlohmann::json k = KernelRecordOf("host_decoy");
  KF_NEED_CUPTI(k);
  EXPECT_TRUE(k["records"].empty()) << k.dump(1);
  EXPECT_GE(k["memcpy"]["count"].get<int>(), 2) << k.dump(1);
  EXPECT_GE(k["memcpy"]["bytes"].get<int64_t>(), 2 * 4096 * 4) << k.dump(1);
}

TEST_F(CudaEvalTest, GivenAKernelLeftRunningOnItsOwnStreamTheRecordSeesItEndAfterTheReturn) {
  nlohmann::json k = KernelRecordOf("own_stream");
  KF_NEED_CUPTI(k);
  ASSERT_TRUE(HasKernel(k, "kf_record_side")) << k.dump(1);
  const nlohmann::json& r = k["records"][0];
  EXPECT_EQ(r["after_return"], 1) << k.dump(1);
  if (k.contains("harness_stream")) {
    for (const nlohmann::json& s : r["streams"]) EXPECT_NE(s, k["harness_stream"]) << k.dump(1);
  }
  EXPECT_GT(k["host"]["synced_ms"].get<double>(), k["host"]["return_ms"].get<double>());
}

TEST_F(CudaEvalTest, GivenAGraphLaunchTheRecordSeesItsKernelAsAGraphNode) {
  nlohmann::json k = KernelRecordOf("graph_launch");
  KF_NEED_CUPTI(k);
  ASSERT_TRUE(HasKernel(k, "kf_record_graph")) << k.dump(1);
  EXPECT_TRUE(k["records"][0]["graph"].get<bool>()) << k.dump(1);
}

// The verdicts kernel accounting gives (docs/evaluation.md, "Kernels accounted for").
TEST_F(CudaEvalTest, GivenADecoyKernelAndTheWorkOnTheHostTheVerdictIsNoCustomKernel) {
  Verdict v = Eval("host_decoy", 60, "kernels_cuda");
  if (!v.kernels.value("available", false)) GTEST_SKIP() << "no kernel record here: " << v.kernels.dump();
  EXPECT_EQ(v.status, VerdictStatus::kNoCustomKernel) << v.message;
  EXPECT_EQ(v.gate, "kernels");
  EXPECT_NE(v.message.find("kf_decoy_scale"), std::string::npos) << v.message;
  EXPECT_EQ(v.kernels["own_calls"], 0) << v.kernels.dump(1);
  EXPECT_TRUE(v.timing.has_value()) << "its outputs were right and it was timed";
}

TEST_F(CudaEvalTest, GivenItsOwnKernelDoingTheWorkTheVerdictIsCorrectWithTheKernelAccounted) {
  Verdict v = Eval("own_kernel", 60, "kernels_cuda");
  ASSERT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  if (!v.kernels.value("available", false)) GTEST_SKIP() << "no kernel record here: " << v.kernels.dump();
  EXPECT_GE(v.kernels["own_calls"].get<int>(), 1) << v.kernels.dump(1);
  EXPECT_DOUBLE_EQ(v.kernels["own_share"].get<double>(), 1.0) << v.kernels.dump(1);
}

// Work left running on a side stream escapes the timing events: the host-time gate calls it
// suspicious, and the kernel accounting in that verdict says where the work ran.
TEST_F(CudaEvalTest, GivenWorkLeftRunningOnItsOwnStreamTheVerdictSaysSo) {
  Verdict v = Eval("own_stream", 60, "kernels_cuda");
  if (!v.kernels.value("available", false)) GTEST_SKIP() << "no kernel record here: " << v.kernels.dump();
  EXPECT_TRUE(v.status == VerdictStatus::kCorrect || (v.status == VerdictStatus::kSuspicious && v.gate == "host_time"))
      << VerdictStatusName(v.status) << ": " << v.message;
  bool said = false;
  for (const std::string& w : v.warnings) said |= w.find("on streams other than the harness's ended after") != std::string::npos;
  EXPECT_TRUE(said || !v.kernels.contains("harness_stream")) << v.ToJson().dump(1);
  EXPECT_GE(v.kernels["side_stream_after_return"].get<int>(), said ? 1 : 0);
}

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

TEST_F(CudaEvalTest, GivenAKernelThatOverwritesOneElementOfItsInputTheDigestAfterTheCheckCatchesIt) {
  Verdict v = Eval("input_writer");
  EXPECT_EQ(v.status, VerdictStatus::kWrongOutput) << v.message;
  EXPECT_NE(v.message.find("modified its inputs"), std::string::npos) << v.message;
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

// The device's head start (CudaDevice::SetQueue) is queued before the start event: work of the
// candidate's on a stream of its own must not run beside it, unseen by the events and by the
// supervisor's clock. The spin takes every thread slot, so that work waits behind it.
TEST_F(CudaEvalTest, GivenWorkOnASideStreamInTheHeadStartsShadowItIsStillTimed) {
  Verdict twin = Eval("shadow_twin", 60, "exploits_cuda");
  ASSERT_EQ(twin.status, VerdictStatus::kCorrect) << twin.message;
  EXPECT_GT(twin.fingerprint["device"].value("queue_ms", 0.0), 0.0) << twin.fingerprint["device"].dump();
  ASSERT_TRUE(twin.fingerprint.contains("timing") && twin.fingerprint["timing"].contains("enqueue_median_ms")) << twin.fingerprint.dump();
  Verdict v = Eval("shadow_side_stream", 60, "exploits_cuda");
  ASSERT_TRUE(v.timing.has_value()) << v.message;
  if (v.status == VerdictStatus::kCorrect) {
    EXPECT_GT(v.timing->median_ms, 0.5 * twin.timing->median_ms) << "twin " << twin.timing->median_ms << " ms";
  } else {
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
