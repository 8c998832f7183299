// The compile farm (eval/compile_farm.h): builds start before the judgements, several at once,
// and each judgement takes the build it finds (done or in flight) instead of building again.
#include "eval/compile_farm.h"

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>

#include "base/files.h"
#include "base/subprocess.h"
#include "eval/compiler.h"
#include "kforge/eval.h"
#include "kforge/problem.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;

// The real sandbox, counting the compiler runs that build something (not `g++ --version`).
class CountingRunner : public ProcessRunner {
 public:
  ProcessResult Run(const ProcessSpec& spec) override {
    if (IsBuild(spec)) {
      std::lock_guard<std::mutex> lock(mu_);
      ++builds_;
      for (const std::string& a : spec.argv) sources_ += a + " ";
    }
    return real_->Run(spec);
  }
  static bool IsBuild(const ProcessSpec& spec) {
    return !spec.argv.empty() && spec.argv[0] == "g++" && std::find(spec.argv.begin(), spec.argv.end(), "-o") != spec.argv.end();
  }
  int builds() {
    std::lock_guard<std::mutex> lock(mu_);
    return builds_;
  }
  std::string sources() {
    std::lock_guard<std::mutex> lock(mu_);
    return sources_;
  }

 private:
  std::unique_ptr<ProcessRunner> real_ = NewSandboxRunner();
  std::mutex mu_;
  int builds_ = 0;
  std::string sources_;
};

class CompileFarmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeScratchDir("farmtest-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }
  void SetUp() override {
    Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    problem_ = *p;
    Result<fs::path> d = MakeScratchDir("farmtest");
    ASSERT_TRUE(d.ok());
    dir_ = *d;
    chmod(dir_.c_str(), 0755);
    options_.backend = "cpp";
    options_.budget_ms = 20;
    options_.min_runs = 3;
    options_.max_runs = 10;
    options_.baselines = false;
    options_.hidden_sizes = false;
  }
  // good.cc with a marker comment: a distinct source, so a distinct build, per test and call.
  fs::path Variant(const std::string& name, const std::string& extra = "") {
    static std::atomic<int> serial{0};
    std::string text = ReadFile(kData / "scale" / "good.cc").value();
    text += "// variant " + name + " " + std::to_string(getpid()) + " " + std::to_string(++serial) + "\n" + extra;
    fs::path p = dir_ / (name + ".cc");
    EXPECT_TRUE(WriteFileAtomic(p, text).ok());
    chmod(p.c_str(), 0644);
    return p;
  }
  Verdict Judge(const fs::path& candidate) {
    Result<Verdict> v = Evaluate(problem_, candidate, options_, runner_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }

  Problem problem_;
  fs::path dir_;
  EvalOptions options_;
  CountingRunner runner_;
};

TEST_F(CompileFarmTest, GivenCandidatesSubmittedFirstEachIsBuiltOnceAndTheJudgeFindsItBuilt) {
  std::vector<fs::path> candidates = {Variant("a"), Variant("b"), Variant("c")};
  CompileFarm farm(runner_, 2);
  for (const fs::path& c : candidates) farm.Submit(problem_, c, options_);
  farm.Wait();
  const int built = runner_.builds();
  EXPECT_GE(built, 3);  // the three candidates, and the reference unless an earlier test built it
  EXPECT_LE(built, 4);
  for (const fs::path& c : candidates) {
    Verdict v = Judge(c);
    EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  }
  EXPECT_EQ(runner_.builds(), built) << "a judgement built again what the farm had built";
}

TEST_F(CompileFarmTest, GivenABuildInFlightTheJudgeWaitsForItRatherThanBuildingAgain) {
  fs::path c = Variant("inflight");
  const int before = runner_.builds();
  CompileFarm farm(runner_, 1);
  farm.Submit(problem_, c, options_);
  Verdict v = Judge(c);  // at once: the farm's build of the candidate is queued or running
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  farm.Wait();
  EXPECT_LE(runner_.builds() - before, 2);  // the candidate once, and the reference at most once
}

TEST_F(CompileFarmTest, GivenASourceTheCompilerRefusesTheJudgeGetsItsErrorWithoutASecondBuild) {
  fs::path c = Variant("broken", "int broken( { return 0; }\n");
  CompileFarm farm(runner_, 2);
  farm.Submit(problem_, c, options_);
  farm.Wait();
  const int built = runner_.builds();
  Verdict v = Judge(c);
  EXPECT_EQ(v.status, VerdictStatus::kCompileError) << v.message;
  EXPECT_NE(v.compiler_output.find("broken.cc"), std::string::npos) << v.compiler_output;
  EXPECT_EQ(runner_.builds(), built);
}

TEST_F(CompileFarmTest, GivenACandidateTheStaticCheckRefusesTheFarmDoesNotBuildIt) {
  fs::path c = Variant("denied", "int spy() { return getenv(\"HOME\") != nullptr; }\n");
  CompileFarm farm(runner_, 2);
  farm.Submit(problem_, c, options_);
  farm.Wait();
  const int built = runner_.builds();
  Verdict v = Judge(c);
  EXPECT_EQ(v.status, VerdictStatus::kSuspicious) << v.message;
  EXPECT_EQ(runner_.builds(), built);
  EXPECT_EQ(runner_.sources().find("denied.cc"), std::string::npos);
}

// A stand-in compiler that takes 0.4 s and counts how many run at once.
class SlowCompilerRunner : public ProcessRunner {
 public:
  ProcessResult Run(const ProcessSpec& spec) override {
    ProcessResult r;
    r.end = ProcessResult::End::kExited;
    r.exit_code = 0;
    if (!CountingRunner::IsBuild(spec)) {
      r.out = "g++ (stand-in) 1.0\n";
      return r;
    }
    int now = ++running_;
    int seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    (void)WriteFileAtomic(spec.cwd / "candidate.so", "not a library");
    --running_;
    return r;
  }
  std::atomic<int> running_{0}, peak_{0};
};

TEST_F(CompileFarmTest, GivenFourCandidatesAndFourJobsTheyBuildAtOnce) {
  SlowCompilerRunner slow;
  std::vector<fs::path> candidates = {Variant("p1"), Variant("p2"), Variant("p3"), Variant("p4")};
  Problem python_problem = problem_;
  python_problem.reference.clear();  // only the candidates' builds
  auto t0 = std::chrono::steady_clock::now();
  CompileFarm farm(slow, 4);
  EXPECT_EQ(farm.jobs(), 4);
  for (const fs::path& c : candidates) farm.Submit(python_problem, c, options_);
  farm.Wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(farm.builds_started(), 4);
  EXPECT_GE(slow.peak_.load(), 3);
  EXPECT_LT(seconds, 1.2) << "four 0.4 s builds took " << seconds << " s: not in parallel";
}

TEST(CompileFarmPolicyTest, JudgingOverlapsBuildsOnlyWhereTheDeviceIsNotTheHost) {
  EXPECT_FALSE(MayJudgeWhileBuilding("cpp"));
  EXPECT_FALSE(MayJudgeWhileBuilding("opencl"));  // PoCL runs on the host CPU
  EXPECT_TRUE(MayJudgeWhileBuilding("cuda"));
  EXPECT_FALSE(MayJudgeWhileBuilding("no-such-backend"));
}

}  // namespace
}  // namespace kforge
