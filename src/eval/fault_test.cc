// What the judge concludes when a process fails the way processes fail in production (issue 11
// item 5): a worker or compiler that times out, crashes, is killed by the out-of-memory killer,
// cannot start or floods its output. Each comes from FaultInjectingRunner, before the process
// runs or after it ran to its end with a complete report; the judge must answer with a verdict
// that names what happened (never `correct`, never an exception), or, for the problem's own
// reference, an error that names the reference.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/subprocess.h"
#include "eval/fault_runner.h"
#include "kforge/eval.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kData = KFORGE_EVAL_TESTDATA;

struct Expected {
  Fault fault;
  VerdictStatus status;
  const char* words;  // in the verdict's message
};

const Expected kFaults[] = {
    {Fault::kTimeout, VerdictStatus::kTimeout, "timed out after"},
    {Fault::kCrash, VerdictStatus::kRuntimeError, "SIGSEGV"},
    {Fault::kOutOfMemory, VerdictStatus::kRuntimeError, "out-of-memory killer"},
    {Fault::kStartFailure, VerdictStatus::kRuntimeError, "could not start"},
    {Fault::kOutputFlood, VerdictStatus::kRuntimeError, "flooded its output"},
    {Fault::kFolderFlood, VerdictStatus::kRuntimeError, "filled its job folder"},
};

class FaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = MakeScratchDir("faulttest-cache").value().string();
    chmod(dir.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }
  EvalOptions Options() const {
    EvalOptions o;
    o.budget_ms = 30;
    o.min_runs = 3;
    o.max_runs = 10;
    o.timeout_seconds = 20;
    o.baselines = false;
    o.trusted_state = trusted_state_;
    return o;
  }
  Result<Verdict> Judge(ProcessRunner& runner, const fs::path& candidate = kData / "scale" / "good.cc") {
    Result<Problem> p = LoadProblem(kData / "scale" / "problem.toml");
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return p.status();
    return Evaluate(*p, candidate, Options(), runner);
  }
  std::unique_ptr<ProcessRunner> real_ = NewSandboxRunner();
  bool trusted_state_ = true;
};

TEST_F(FaultTest, TheFaultRunnerTellsCompilesReferencesAndCandidatesApart) {
  FaultInjectingRunner counting(*real_, Fault::kCrash, "candidate", /*nth=*/1000);
  Result<Verdict> v = Judge(counting);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
  EXPECT_EQ(counting.seen(), 1);  // one candidate job (checks and timing in one process)
  EXPECT_EQ(counting.injected(), 0);
}

TEST_F(FaultTest, GivenACandidateJobThatFailsBeforeItRunsTheVerdictNamesTheFault) {
  for (const Expected& e : kFaults) {
    FaultInjectingRunner runner(*real_, e.fault, "candidate");
    Result<Verdict> v = Judge(runner);
    ASSERT_TRUE(v.ok()) << FaultName(e.fault) << ": " << v.status().ToString();
    EXPECT_EQ(runner.injected(), 1) << FaultName(e.fault);
    EXPECT_EQ(v->status, e.status) << FaultName(e.fault) << ": " << v->message;
    EXPECT_NE(v->message.find(e.words), std::string::npos) << FaultName(e.fault) << ": " << v->message;
  }
}

TEST_F(FaultTest, GivenACandidateJobWithACompleteReportThatDidNotEndCleanlyTheReportIsNotTrusted) {
  // The worker wrote every check and every timed run, then was killed: the report may be
  // anything a half-finished process left, so the verdict is the fault, not `correct`.
  for (const Expected& e : kFaults) {
    if (e.fault == Fault::kStartFailure) continue;  // a process that never started wrote nothing
    FaultInjectingRunner runner(*real_, e.fault, "candidate", 1, FaultWhen::kAfterRun);
    Result<Verdict> v = Judge(runner);
    ASSERT_TRUE(v.ok()) << FaultName(e.fault) << ": " << v.status().ToString();
    EXPECT_EQ(runner.injected(), 1) << FaultName(e.fault);
    EXPECT_EQ(v->status, e.status) << FaultName(e.fault) << ": " << v->message;
    EXPECT_NE(v->message.find(e.words), std::string::npos) << FaultName(e.fault) << ": " << v->message;
  }
}

TEST_F(FaultTest, GivenAReferenceJobThatFailsTheEvaluationFailsNamingTheReferenceNotTheCandidate) {
  // The problem's own reference failing is not the candidate's doing: no verdict is made up.
  // Without kept references the first reference job computes the check trials' references, the
  // second those of the sampled timed runs (regenerated from their seeds).
  trusted_state_ = false;
  for (int nth : {1, 2}) {
    for (const Expected& e : kFaults) {
      FaultInjectingRunner runner(*real_, e.fault, "reference", nth);
      Result<Verdict> v = Judge(runner);
      EXPECT_EQ(runner.injected(), 1) << FaultName(e.fault);
      ASSERT_FALSE(v.ok()) << FaultName(e.fault) << ", reference job " << nth << ": " << VerdictStatusName(v->status) << " " << v->message;
      EXPECT_NE(v.status().message().find("the reference of problem 'scale' failed on " +
                                          std::string(nth == 1 ? "the check trials" : "the sampled timed runs")),
                std::string::npos)
          << v.status().ToString();
    }
  }
}

TEST_F(FaultTest, GivenACompilerThatTimesOutTheVerdictSaysSoAndALaterJudgementCompilesAgain) {
  // A compiler killed by the clock says nothing about the source: it is not remembered as the
  // compiler's refusal (eval/compile_farm.h), and the same source compiles on the next try.
  const std::string marker = "fault-test-" + std::to_string(::getpid());
  Result<std::string> good = ReadFile(kData / "scale" / "good.cc");
  ASSERT_TRUE(good.ok());
  const fs::path candidate = MakeScratchDir("faulttest-src").value() / "unique.cc";
  ASSERT_TRUE(WriteFileAtomic(candidate, *good + "\n// " + marker + "\n").ok());
  FaultInjectingRunner runner(*real_, Fault::kTimeout, "compile");
  runner.set_filter([&](const ProcessSpec& spec) {
    Result<std::string> source = ReadFile(spec.cwd / "candidate.cc");
    return source.ok() && source->find(marker) != std::string::npos;
  });
  Result<Verdict> v = Judge(runner, candidate);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(runner.injected(), 1);
  EXPECT_EQ(v->status, VerdictStatus::kCompileError) << v->message;
  EXPECT_NE(v->compiler_output.find("timed out"), std::string::npos) << v->compiler_output;
  Result<Verdict> again = Judge(*real_, candidate);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, VerdictStatus::kCorrect) << again->message;
}

// A device that reports no theoretical peaks (a Vulkan GPU tells neither its compute units nor
// its clocks): the judgement still ends in a verdict, which says that the speed-of-light gate had
// no floor (it failed the whole evaluation on the H200's Vulkan driver).
class NoTheoreticalPeaksRunner : public ProcessRunner {
 public:
  explicit NoTheoreticalPeaksRunner(ProcessRunner& real) : real_(real) {}
  ProcessResult Run(const ProcessSpec& spec) override {
    ProcessResult r = real_.Run(spec);
    if (FaultInjectingRunner::RoleOf(spec) != "probe") return r;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_object() || !j.contains("theoretical_peaks")) return r;
    j.erase("theoretical_peaks");
    j["theoretical_peaks_error"] = "the device tells neither its compute units nor its clocks";
    r.out = j.dump() + "\n";
    ++rewritten;
    return r;
  }
  int rewritten = 0;

 private:
  ProcessRunner& real_;
};

TEST_F(FaultTest, GivenADeviceWithoutTheoreticalPeaksTheVerdictSaysTheSpeedOfLightGateHadNoFloor) {
  NoTheoreticalPeaksRunner runner(*real_);
  Result<Verdict> v = Judge(runner);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  if (runner.rewritten == 0) GTEST_SKIP() << "the device probe was answered from this process's memo";
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
  EXPECT_EQ(v->floor_ms, 0);
  EXPECT_TRUE(v->roofline["theoretical"].contains("error")) << v->roofline.dump();
  bool said = false;
  for (const std::string& w : v->warnings) said |= w.find("no speed-of-light floor") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_GT(v->sol_percent, 0);  // against the peaks measured here
}

// The supervisor's clock running late on the first `late_jobs` candidate jobs, as on a loaded
// machine where it wakes up late: every timed run's wall time gets `late_ms` more than the device
// time the candidate's process reported. The report is rewritten with its SHA-256 line, as the
// supervisor would have written it (the runner is trusted test code).
class LateSupervisorRunner : public ProcessRunner {
 public:
  LateSupervisorRunner(ProcessRunner& real, int late_jobs, double late_ms)
      : real_(real), late_jobs_(late_jobs), late_ms_(late_ms) {}
  ProcessResult Run(const ProcessSpec& spec) override {
    ProcessResult r = real_.Run(spec);
    if (FaultInjectingRunner::RoleOf(spec) != "candidate") return r;
    ++candidate_jobs;
    if (candidate_jobs > late_jobs_) return r;
    Result<std::string> text = ReadFile(spec.cwd / "result.json");
    if (!text.ok()) return r;
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("timing") || !j["timing"].contains("wall_ms")) return r;
    for (auto& w : j["timing"]["wall_ms"]) w = w.get<double>() + late_ms_;
    const std::string rewritten = j.dump();
    EXPECT_TRUE(WriteFileAtomic(spec.cwd / "result.json", rewritten).ok());
    const std::string tag = "kforge-result ";
    size_t pos = r.out.rfind(tag);
    if (pos != std::string::npos) r.out.replace(pos + tag.size(), 64, Sha256Hex(rewritten));
    ++made_late;
    return r;
  }
  int candidate_jobs = 0, made_late = 0;

 private:
  ProcessRunner& real_;
  const int late_jobs_;
  const double late_ms_;
};

TEST_F(FaultTest, GivenALateSupervisorClockOnTheFirstJobOnlyTheCandidateIsJudgedAgainAndPasses) {
  LateSupervisorRunner runner(*real_, /*late_jobs=*/1, /*late_ms=*/50);
  Result<Verdict> v = Judge(runner);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(runner.made_late, 1);
  EXPECT_EQ(runner.candidate_jobs, 2);
  EXPECT_EQ(v->status, VerdictStatus::kCorrect) << v->message;
  bool said = false;
  for (const std::string& w : v->warnings) said |= w.find("judged twice") != std::string::npos && w.find("supervisor_clock") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_TRUE(v->stages.contains("first_run"));
  // And for programs (kforge_judge_bench): the first job's gate and whole message.
  const nlohmann::json first = v->fingerprint.value("first_job", nlohmann::json::object());
  EXPECT_EQ(first.value("gate", ""), "supervisor_clock") << first.dump();
  EXPECT_NE(first.value("message", "").find("supervisor"), std::string::npos) << first.dump();
  EXPECT_GT(first.value("seconds", 0.0), 0.0) << first.dump();
  // The verdict's timing is the second job's: no wall time 50 ms above its device time.
  ASSERT_TRUE(v->timing.has_value());
  EXPECT_LT(v->timing->wall_median_ms, v->timing->device_median_ms + 25);
}

TEST_F(FaultTest, GivenALateSupervisorClockOnEveryJobTheCandidateIsJudgedTwiceAndStaysSuspicious) {
  // A forged timer shows on every job: the second job is caught by the same gate.
  LateSupervisorRunner runner(*real_, /*late_jobs=*/1000, /*late_ms=*/50);
  Result<Verdict> v = Judge(runner);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(runner.candidate_jobs, 2);
  EXPECT_EQ(v->status, VerdictStatus::kSuspicious) << v->message;
  EXPECT_EQ(v->gate, "supervisor_clock") << v->message;
}

}  // namespace
}  // namespace kforge
