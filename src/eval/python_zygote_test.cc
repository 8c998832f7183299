// Warm Python workers (eval/python_zygote.h) through RunPythonWorker on the real sandbox: jobs
// share a zygote, and nothing one job leaves (files in the private tmpfs's, a folder beside its
// own, a process that left its session) reaches the next; a job past its wall-clock limit is
// ended and a candidate that kills the zygote fails alone. Each test is its own process (CTest),
// so each starts with an empty pool.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/files.h"
#include "base/subprocess.h"
#include "eval/python_worker.h"
#include "eval/python_zygote.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;
const fs::path kZygote = kData / "zygote";
const fs::path kGemm = kData / "kernelbench" / "12_Gemm_Multiply_LeakyReLU.py";
// The honest ModelNew the traces' candidates end with (they exec it as model.py).
const fs::path kHonest = kData / "kernelbench" / "candidates" / "12_torch_ops.py";

class PythonZygoteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeScratchDir("pyzygote-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    unsetenv("KFORGE_WARM_PYTHON");
    unsetenv("KFORGE_KEEP_TEMP");
  }
  void SetUp() override {
    Result<nlohmann::json> probe = ProbePython(*runner_);
    if (!probe.ok() || probe->contains("error"))
      GTEST_SKIP() << "no Python with PyTorch; scripts/setup installs it";
    for (const std::string& line : DescribeIsolation())
      if (line.rfind("processes:", 0) == 0 && line.find("own PID") == std::string::npos)
        GTEST_SKIP() << "no PID namespace here (" << line << "): jobs run cold";
  }
  // One candidate job (set 0 of problem 12 at 16x64x32, checked once, not timed) on the CPU;
  // "model.py" is the honest candidate.
  static nlohmann::json JobJson() {
    nlohmann::json set = {{"seed", 7}, {"magnitude", 1.0},
                          {"overrides", {{"batch_size", 16}, {"in_features", 64}, {"out_features", 32}}},
                          {"outputs", {{{"name", "out"}, {"dtype", "float32"}, {"dims", {16, 32}}}}}};
    return {{"mode", "candidate"}, {"device", "cpu"}, {"sets", {set}}, {"checks", {0}},
            {"candidate", "candidate.py"}, {"entry", "ModelNew"},
            {"problem", {{"kind", "kernelbench"}, {"module", "problem.py"}}}};
  }
  static Limits JobLimits(double wall_seconds = 300) {
    Limits limits;
    limits.address_space_bytes = 0;
    limits.cpu_seconds = 0;
    limits.wall_seconds = wall_seconds;
    return limits;
  }
  WorkerRun Job(const std::string& candidate, double wall_seconds = 300) {
    PythonJobFiles files;
    files.copies = {{"candidate.py", candidate == "model.py" ? kHonest : kZygote / candidate}, {"model.py", kHonest},
                    {"problem.py", kGemm}};
    Result<WorkerRun> run = RunPythonWorker(*runner_, JobJson(), files, JobLimits(wall_seconds));
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    return run.ok() ? *run : WorkerRun{};
  }
  static std::string Why(const WorkerRun& run) { return run.result.dump(1) + "\n" + run.process.Describe() + "\n" + run.process.err; }

  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
};

TEST_F(PythonZygoteTest, GivenSeveralJobsOneWarmWorkerServesThemAll) {
  for (int i = 0; i < 3; ++i) {
    WorkerRun run = Job("model.py");
    EXPECT_TRUE(run.finished()) << Why(run);
    EXPECT_FALSE(run.result.contains("error")) << Why(run);
  }
  EXPECT_EQ(WarmPythonWorkersStarted(), 1);
}

// A judgement whose standby reference job holds a worker for the candidate's whole run asks for
// two: both start at once, two jobs at the same time each get one (neither starts a third), and
// asking again, before or after they are up, starts none.
TEST_F(PythonZygoteTest, GivenAPrewarmOfTwoTwoJobsAtOnceAreServedWithoutAThirdWorker) {
  PrewarmPythonWorker(*runner_, JobJson(), JobLimits(), 2);
  PrewarmPythonWorker(*runner_, JobJson(), JobLimits(), 2);  // still starting: counted, none added
  // Both start before any job asks for one.
  for (int i = 0; i < 1200 && WarmPythonWorkersStarted() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(WarmPythonWorkersStarted(), 2);
  auto a = std::async(std::launch::async, [&] { return Job("model.py"); });
  auto b = std::async(std::launch::async, [&] { return Job("model.py"); });
  for (WorkerRun run : {a.get(), b.get()}) {
    EXPECT_TRUE(run.finished()) << Why(run);
    EXPECT_FALSE(run.result.contains("error")) << Why(run);
  }
  EXPECT_EQ(WarmPythonWorkersStarted(), 2);
  PrewarmPythonWorker(*runner_, JobJson(), JobLimits(), 2);
  WorkerRun third = Job("model.py");
  EXPECT_TRUE(third.finished()) << Why(third);
  EXPECT_EQ(WarmPythonWorkersStarted(), 2);
}

TEST_F(PythonZygoteTest, GivenAJobThatLeavesTracesTheNextJobInTheSameWorkerFindsNone) {
  WorkerRun first = Job("leaves_traces.py");
  EXPECT_TRUE(first.finished()) << Why(first);
  EXPECT_FALSE(first.result.contains("error")) << Why(first);
  // Loads only if no file, folder or process of the first job is left; the same worker serves
  // it (the left-behind process, alive for 30 s unless killed, would have made the worker give
  // up waiting for it and a new one start).
  WorkerRun second = Job("looks_for_traces.py");
  EXPECT_TRUE(second.finished()) << Why(second);
  EXPECT_FALSE(second.result.contains("error")) << Why(second);
  EXPECT_EQ(WarmPythonWorkersStarted(), 1);
}

TEST_F(PythonZygoteTest, GivenAJobPastItsWallClockLimitItTimesOutAndTheNextJobIsServed) {
  Job("model.py");  // the worker is warm
  WorkerRun hung = Job("hangs.py", 8);
  EXPECT_FALSE(hung.finished());
  EXPECT_EQ(hung.process.end, ProcessResult::End::kTimedOut) << Why(hung);
  WorkerRun next = Job("model.py");
  EXPECT_TRUE(next.finished()) << Why(next);
  EXPECT_EQ(WarmPythonWorkersStarted(), 1);  // the cancelled job's worker went on
}

TEST_F(PythonZygoteTest, GivenACandidateThatKillsTheWarmWorkerItsJobFailsAndANewWorkerServesTheNext) {
  WorkerRun killer = Job("kills_everything.py");
  EXPECT_FALSE(killer.finished()) << Why(killer);
  EXPECT_EQ(killer.process.end, ProcessResult::End::kSignaled) << Why(killer);
  WorkerRun next = Job("model.py");
  EXPECT_TRUE(next.finished()) << Why(next);
  EXPECT_EQ(WarmPythonWorkersStarted(), 2);
}

// As root a warm worker of user nobody's jobs runs as an id of its own (python_zygote.h uid()),
// so a job that forks up to its limit takes no process from the jobs of other workers or from
// kforge-worker's jobs, which have ids of their own too.
TEST_F(PythonZygoteTest, GivenRootTheWarmWorkerRunsAsAnIdOfItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: there is no user to switch from";
  WorkerRun run = Job("model.py");
  ASSERT_TRUE(run.finished()) << Why(run);
  std::vector<unsigned long> uids;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::ifstream cmdline(it->path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find("kforge_pyworker.py") == std::string::npos || args.find("zygote") == std::string::npos) continue;
    std::ifstream status(it->path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("Uid:", 0) == 0) uids.push_back(std::strtoul(line.c_str() + 4, nullptr, 10));
  }
  ASSERT_FALSE(uids.empty()) << "no warm worker is running";
  for (unsigned long uid : uids) EXPECT_GE(uid, 1879048192ul);
}

// Counted as a difference: scripts/gpu-check runs every test of this program in one process.
TEST_F(PythonZygoteTest, GivenWarmWorkersOffJobsRunCold) {
  const int before = WarmPythonWorkersStarted();
  setenv("KFORGE_WARM_PYTHON", "0", 1);
  WorkerRun run = Job("model.py");
  unsetenv("KFORGE_WARM_PYTHON");
  EXPECT_TRUE(run.finished()) << Why(run);
  EXPECT_EQ(WarmPythonWorkersStarted(), before) << "no warm worker was started";
}

// A cold job of nobody's (a candidate) runs under an id leased for it alone, as a warm worker's
// jobs do: a fork bomb beside it takes nothing from the jobs of other ids.
TEST_F(PythonZygoteTest, GivenRootAColdCandidateJobRunsAsAnIdOfItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: there is no user to switch from";
  setenv("KFORGE_WARM_PYTHON", "0", 1);
  WorkerRun run = Job("model.py");
  unsetenv("KFORGE_WARM_PYTHON");
  ASSERT_TRUE(run.finished()) << Why(run);
  EXPECT_GE(run.process.uid, 1879048192u) << "the cold job ran as " << run.process.uid;
}

}  // namespace
}  // namespace kforge
