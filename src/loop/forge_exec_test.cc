// Specifications of the forge loop with a coding-agent CLI as its generator ("exec:", see
// src/llm/exec.h). A small shell script written by each test stands in for the CLI: it reads
// the prompt file and the parent candidate kforge puts in its input folder, and writes its
// candidate into the answer folder. The problem is the bundled gelu on the cpp backend (its
// quick size), judged by the real sandboxed evaluation; the rules analyst advises.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/subprocess.h"
#include "kforge/llm/config.h"
#include "kforge/llm/session.h"
#include "llm/test_util.h"
#include "loop/forge.h"
#include "store/run_store.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kGelu = fs::path(KFORGE_PROBLEMS_DIR) / "gelu";
constexpr char kMarker[] = "// rewritten by the exec agent";
// The script line that writes the parent, marked, as the candidate.
constexpr char kWriteMarkedParent[] =
    "cp \"$2/candidate.cc\" \"$3/candidate.cc\"\n"
    "echo '// rewritten by the exec agent' >> \"$3/candidate.cc\"\n";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ForgeExecTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A private cache (compiled candidates, device peaks), traversable by the sandbox user.
    cache_dir_ = MakeScratchDir("exec-looptest-cache").value();
    chmod(cache_dir_.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", cache_dir_.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(cache_dir_, ec);
  }

  void SetUp() override {
    Result<std::unique_ptr<RunStore>> store = RunStore::Open(dir_ / "runs.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  // The generator: the [exec.agent] command, a /bin/sh script. $SEEN in it is the test's folder.
  std::unique_ptr<llm::LlmClient> Agent(const std::string& body) {
    fs::path script = dir_ / "agent.sh";
    llm::testing::WriteFile(script, "#!/bin/sh\nSEEN='" + dir_.string() + "'\n" + body);
    fs::permissions(script, fs::perms(0755));
    Result<llm::LlmConfig> config = llm::ParseLlmConfig(
        "[exec.agent]\ncommand = [\"" + script.string() +
            "\", \"{prompt}\", \"{input}\", \"{out}\"]\ntimeout_s = 60\nworkdir_root = \"" +
            dir_.string() + "\"\n",
        "test.toml", dir_);
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    llm::LlmDeps deps;
    deps.log = [](std::string_view) {};
    auto session = llm::LlmSession::Create(*config, deps);
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    auto client = (*session)->NewClient("exec:agent");
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(*client);
  }

  ForgeOptions Options() const {
    ForgeOptions o;
    o.problem = kGelu.string();
    o.backend = "cpp";
    o.model = "exec:agent";
    o.iterations = 1;
    o.patience = 1;
    o.eval.quick = true;
    o.eval.budget_ms = 30;
    o.eval.min_runs = 3;
    o.eval.max_runs = 20;
    o.eval.seeds = 2;
    o.eval.timeout_seconds = 60;
    o.eval.memory_bytes = 2ull << 30;
    o.eval.baselines = false;
    o.confirm = false;
    return o;
  }

  Result<ForgeSummary> Run(llm::LlmClient* generator, llm::LlmClient* analyst = nullptr) {
    ForgeDeps deps{store_.get(), runner_.get(), generator, analyst, progress_.get(), dir_ / "runs"};
    return StartRun(Options(), deps);
  }

  std::vector<LlmCallRow> Calls(int64_t run) {
    Result<std::vector<LlmCallRow>> calls = store_->LlmCalls(run);
    EXPECT_TRUE(calls.ok()) << calls.status().ToString();
    return calls.ok() ? *calls : std::vector<LlmCallRow>{};
  }

  static inline fs::path cache_dir_;
  fs::path dir_ = llm::testing::NewTestDir("forge-exec");
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
  std::unique_ptr<ProgressSink> progress_ = NewSilentProgress();
};

TEST_F(ForgeExecTest, GivenAnExecGeneratorItsCandidateComesBackThroughTheLoopAndIsJudged) {
  std::unique_ptr<llm::LlmClient> agent = Agent(
      "cp \"$1\" \"$SEEN/prompt.md\"\n"
      "cp \"$2/candidate.cc\" \"$SEEN/parent.cc\"\n"
      "echo 'Kept the loop; an agent would change it.'\n" +
      std::string(kWriteMarkedParent));
  Result<ForgeSummary> summary = Run(agent.get());

  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  Result<std::vector<AttemptRow>> attempts = store_->Attempts(summary->run_id);
  ASSERT_TRUE(attempts.ok()) << attempts.status().ToString();
  ASSERT_EQ(attempts->size(), 2u) << "the seed, then the agent's candidate";
  const AttemptRow& seed = (*attempts)[0];
  const AttemptRow& candidate = (*attempts)[1];
  EXPECT_EQ(seed.phase, "seed");
  EXPECT_EQ(candidate.phase, "optimize");
  EXPECT_EQ(candidate.status, "correct") << candidate.verdict_json;
  EXPECT_EQ(candidate.source, seed.source + kMarker + "\n");
  EXPECT_GT(candidate.median_ms, 0);

  // The command saw the prompt and the parent candidate as files.
  EXPECT_EQ(llm::testing::ReadFile(dir_ / "parent.cc"), seed.source);
  std::string prompt = llm::testing::ReadFile(dir_ / "prompt.md");
  EXPECT_TRUE(Contains(prompt, "# How to answer")) << prompt;
  EXPECT_TRUE(Contains(prompt, "gelu")) << prompt;

  // The call is recorded like any model call: no tokens, no cost, its latency, the answer.
  std::vector<LlmCallRow> calls = Calls(summary->run_id);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].agent, "generator");
  EXPECT_EQ(calls[0].model, "exec:agent");
  EXPECT_EQ(calls[0].attempt, candidate.number);
  EXPECT_TRUE(calls[0].error.empty()) << calls[0].error;
  EXPECT_TRUE(Contains(calls[0].response_text, "```cpp candidate.cc\n")) << calls[0].response_text;
  EXPECT_EQ(calls[0].finish_reason, "stop");
  EXPECT_EQ(calls[0].input_tokens, 0);
  EXPECT_EQ(calls[0].output_tokens, 0);
  EXPECT_EQ(calls[0].cost_usd, 0);
  EXPECT_GT(calls[0].latency_ms, 0);
  EXPECT_TRUE(Contains(calls[0].prompt_json, "gelu"));
}

// One command serves both roles (as --llm exec:NAME without --analyst-llm does): the analyst's
// prompt asks for one JSON object, which the script prints on stdout.
TEST_F(ForgeExecTest, GivenExecAsTheAnalystItsJsonRecommendationComesFromStdout) {
  std::unique_ptr<llm::LlmClient> agent = Agent(
      "if grep -q 'performance-analysis agent' \"$1\"; then\n"
      "  cp \"$2/candidate.cc\" \"$SEEN/analysed.cc\"\n"
      "  echo '{\"bottleneck\": \"erf evaluation\", \"evidence\": \"exec says so\", "
      "\"change\": \"a polynomial erf\", \"expected_gain\": \"1.5x\"}'\n"
      "  exit 0\n"
      "fi\n" +
      std::string(kWriteMarkedParent));
  Result<ForgeSummary> summary = Run(agent.get(), agent.get());

  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  Result<std::vector<RecommendationRow>> recs = store_->Recommendations(summary->run_id);
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ(recs->front().source, "llm");
  EXPECT_TRUE(Contains(recs->front().json, "a polynomial erf")) << recs->front().json;
  std::vector<LlmCallRow> calls = Calls(summary->run_id);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].agent, "analyst");
  EXPECT_EQ(calls[1].agent, "generator");
  Result<std::vector<AttemptRow>> attempts = store_->Attempts(summary->run_id);
  ASSERT_TRUE(attempts.ok() && attempts->size() == 2u);
  EXPECT_EQ(llm::testing::ReadFile(dir_ / "analysed.cc"), (*attempts)[0].source)
      << "the analyst's command gets the analysed kernel as a file";
  EXPECT_EQ((*attempts)[1].status, "correct");
}

TEST_F(ForgeExecTest, GivenAnExecGeneratorThatFailsTheRunFailsWithTheCommandsError) {
  std::unique_ptr<llm::LlmClient> agent = Agent("echo 'Please run /login first.' >&2\nexit 2\n");
  Result<ForgeSummary> summary = Run(agent.get());

  ASSERT_FALSE(summary.ok());
  const std::string& message = summary.status().message();
  EXPECT_TRUE(Contains(message, "exec:agent: [command_failed]")) << message;
  EXPECT_TRUE(Contains(message, "exited with code 2")) << message;
  EXPECT_TRUE(Contains(message, "Please run /login first.")) << message;
  Result<std::vector<RunRow>> runs = store_->ListRuns();
  ASSERT_TRUE(runs.ok() && runs->size() == 1u);
  EXPECT_EQ(runs->front().status, "failed");
  std::vector<LlmCallRow> calls = Calls(runs->front().id);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(Contains(calls[0].error, "Please run /login first.")) << calls[0].error;
}

TEST_F(ForgeExecTest, GivenAnExecGeneratorThatWritesNothingTheRunFailsSayingWhereToWrite) {
  std::unique_ptr<llm::LlmClient> agent = Agent("exit 0\n");
  Result<ForgeSummary> summary = Run(agent.get());

  ASSERT_FALSE(summary.ok());
  EXPECT_TRUE(Contains(summary.status().message(), "[bad_response]")) << summary.status().message();
  EXPECT_TRUE(Contains(summary.status().message(), "wrote no file")) << summary.status().message();
}

}  // namespace
}  // namespace kforge
