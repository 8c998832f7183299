// Trusted state computed once per problem (eval/trusted_state.h, docs/evaluation.md "Trusted
// state, computed once"): the store on its own, then judgements through the sandboxed worker
// that reuse, refuse and recompute what it keeps.
#include "eval/trusted_state.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "base/files.h"
#include "base/subprocess.h"
#include "kforge/eval.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const fs::path kData = KFORGE_EVAL_TESTDATA;

class TrustedStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A private cache per test, traversable by the sandbox user.
    cache_ = MakeTempDir("trusted-test-cache").value();
    chmod(cache_.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", cache_.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(cache_, ec);
  }

  // A finished, confirmed run in a fresh folder: result.json listing one output file.
  WorkerRun FakeRun(const std::string& bytes) {
    WorkerRun run;
    run.dir = MakeScratchDir("trusted-test-run").value();
    EXPECT_TRUE(WriteFile(run.dir / "out.bin", bytes.data(), bytes.size()).ok());
    run.SetResult({{"done", true}, {"files", {{"out.bin", PieceDigestHex(bytes)}}}});
    const std::string text = run.result.dump(1);
    EXPECT_TRUE(WriteFile(run.dir / "result.json", text.data(), text.size()).ok());
    run.confirmed = true;
    return run;
  }

  fs::path cache_;
};

TEST_F(TrustedStateTest, GivenAKeptRunItIsFoundVerifiedAndItsFilesReadBack) {
  TrustedState store(true);
  ASSERT_TRUE(store.enabled());
  WorkerRun run = FakeRun("reference bytes");
  const std::string key = TrustedStateKey({{"what", "test"}});
  EXPECT_FALSE(store.FindRun(key).has_value());
  ASSERT_TRUE(store.KeepRun(key, {{"what", "test"}}, run).ok());
  fs::remove_all(run.dir);  // the store holds its own copy
  std::optional<WorkerRun> kept = store.FindRun(key);
  ASSERT_TRUE(kept.has_value());
  EXPECT_TRUE(kept->finished());
  EXPECT_TRUE(kept->kept);
  Result<std::shared_ptr<const std::string>> bytes = kept->ReadOutput("out.bin", 15);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(**bytes, "reference bytes");
  // Read back against the XXH3-128 the store recorded, not the supervisor's SHA-256; a store
  // kept before it recorded them is read against the SHA-256 still.
  EXPECT_EQ(kept->kept_digests.at("out.bin"), Hash128Hex(std::string("reference bytes")));
  const fs::path kept_json = kept->dir / "kept.json";
  nlohmann::json k = nlohmann::json::parse(ReadFile(kept_json).value());
  k.erase("xxh3");
  ASSERT_TRUE(WriteFileAtomic(kept_json, k.dump()).ok());
  std::optional<WorkerRun> older = store.FindRun(key);
  ASSERT_TRUE(older.has_value());
  EXPECT_TRUE(older->kept_digests.empty());
  EXPECT_EQ(*older->ReadOutput("out.bin", 15).value(), "reference bytes");
  Cleanup(*kept);  // a kept folder stays
  EXPECT_TRUE(store.FindRun(key).has_value());
  EXPECT_NE(store.Describe().find(": 1 reference runs"), std::string::npos) << store.Describe();
  store.Forget(key);
  EXPECT_FALSE(store.FindRun(key).has_value());
  EXPECT_NE(store.Describe().find(": 0 reference runs"), std::string::npos) << store.Describe();
}

TEST_F(TrustedStateTest, GivenAChangedResultOrOutputTheKeptRunIsNotTrusted) {
  TrustedState store(true);
  const std::string key = TrustedStateKey({{"what", "tampered"}});
  WorkerRun run = FakeRun("0123456789");
  ASSERT_TRUE(store.KeepRun(key, {}, run).ok());
  const fs::path dir = cache_ / "trusted" / "runs" / key;
  // An output file changed after it was kept: found, but reading it fails its hash.
  { std::ofstream(dir / "out.bin", std::ios::binary) << "9999999999"; }
  std::optional<WorkerRun> kept = store.FindRun(key);
  ASSERT_TRUE(kept.has_value());
  Result<std::shared_ptr<const std::string>> changed = kept->ReadOutput("out.bin", 10);
  EXPECT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("changed after"), std::string::npos) << changed.status().message();
  // result.json changed after it was kept: not found at all.
  { std::ofstream(dir / "result.json", std::ios::app) << " "; }
  EXPECT_FALSE(store.FindRun(key).has_value());
}

TEST_F(TrustedStateTest, GivenAnUnfinishedRunOrADisabledStoreNothingIsKept) {
  TrustedState store(true);
  WorkerRun run = FakeRun("x");
  run.confirmed = false;  // result.json did not match what the supervisor announced
  const std::string key = TrustedStateKey({{"what", "unconfirmed"}});
  EXPECT_FALSE(store.KeepRun(key, {}, run).ok());
  EXPECT_FALSE(store.FindRun(key).has_value());
  TrustedState off(false);
  run.confirmed = true;
  ASSERT_TRUE(off.KeepRun(key, {}, run).ok());
  EXPECT_FALSE(off.FindRun(key).has_value());
  EXPECT_FALSE(store.FindRun(key).has_value());
}

// Over its limit the store drops the least recently used runs: B here, since A was just read.
TEST_F(TrustedStateTest, GivenMoreThanItsLimitTheLeastRecentlyUsedRunsGo) {
  setenv("KFORGE_TRUSTED_CACHE_MB", "1", 1);  // 1 MB; a run may take a quarter of it
  TrustedState store(true);
  const std::string payload(200 << 10, 'x');
  auto key = [](char c) { return TrustedStateKey({{"run", std::string(1, c)}}); };
  for (char c : std::string("ABCDE")) {
    WorkerRun run = FakeRun(payload);
    ASSERT_TRUE(store.KeepRun(key(c), {}, run).ok());
  }
  ASSERT_TRUE(store.FindRun(key('A')).has_value());
  WorkerRun run = FakeRun(payload);
  ASSERT_TRUE(store.KeepRun(key('F'), {}, run).ok());
  EXPECT_TRUE(store.FindRun(key('A')).has_value());
  EXPECT_FALSE(store.FindRun(key('B')).has_value());
  EXPECT_TRUE(store.FindRun(key('F')).has_value());
  WorkerRun large = FakeRun(std::string(300 << 10, 'y'));  // over a quarter of the limit
  Status big = store.KeepRun(key('G'), {}, large);
  EXPECT_FALSE(big.ok());
  EXPECT_NE(big.message().find("quarter"), std::string::npos) << big.message();
  unsetenv("KFORGE_TRUSTED_CACHE_MB");
}

TEST_F(TrustedStateTest, GivenBaselinesTheyAreFoundUntilTooOld) {
  TrustedState store(true);
  TimingStats t;
  t.runs = 12;
  t.median_ms = 3.25;
  t.wall_median_ms = 3.5;
  const std::string key = TrustedStateKey({{"what", "baselines"}});
  ASSERT_TRUE(store.KeepBaselines(key, {}, {{"reference", t}}).ok());
  std::optional<TrustedState::Baselines> b = store.FindBaselines(key, 3600);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->timings.at("reference").runs, 12);
  EXPECT_DOUBLE_EQ(b->timings.at("reference").median_ms, 3.25);
  EXPECT_FALSE(b->measured_at.empty());
  EXPECT_FALSE(store.FindBaselines(key, -1).has_value());  // older than allowed
  EXPECT_FALSE(store.FindBaselines(TrustedStateKey({{"what", "other"}}), 3600).has_value());
}

TEST_F(TrustedStateTest, GivenKeysOfDifferentFieldsTheyDiffer) {
  EXPECT_EQ(TrustedStateKey({{"a", 1}, {"b", "x"}}), TrustedStateKey({{"b", "x"}, {"a", 1}}));  // canonical
  EXPECT_NE(TrustedStateKey({{"a", 1}}), TrustedStateKey({{"a", 2}}));
  EXPECT_EQ(TrustedStateKey({}).size(), 64u);
}

// --- Judgements: the second reuses what the first computed. ---------------------------------

class TrustedJudgementTest : public TrustedStateTest {
 protected:
  void SetUp() override {
    TrustedStateTest::SetUp();
    // The fixture problem in a folder of the test's own, so that it can be changed.
    problem_dir_ = MakeScratchDir("trusted-test-problem").value();
    for (const auto& e : fs::directory_iterator(kData / "scale")) fs::copy_file(e.path(), problem_dir_ / e.path().filename());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(problem_dir_, ec);
    TrustedStateTest::TearDown();
  }
  Verdict Judge() {
    Result<Problem> p = LoadProblem(problem_dir_ / "problem.toml");
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return Verdict{};
    Result<Verdict> v = Evaluate(*p, problem_dir_ / "good.cc", options_, *runner_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }
  static json State(const Verdict& v) { return v.fingerprint.value("trusted_state", json::object()); }
  static bool BaselinesKept(const Verdict& v) { return State(v).value("baselines", json::object()).value("kept", false); }
  static size_t KeptRuns(const fs::path& cache) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(cache / "trusted" / "runs")) n += e.is_directory();
    return n;
  }

  EvalOptions options_ = [] {
    EvalOptions o;
    o.budget_ms = 30;
    o.min_runs = 3;
    o.max_runs = 20;
    o.timeout_seconds = 20;
    o.memory_bytes = 2ull << 30;
    return o;
  }();
  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
  fs::path problem_dir_;
};

TEST_F(TrustedJudgementTest, GivenASecondJudgementItReusesTheReferencesAndBaselines) {
  Verdict first = Judge();
  ASSERT_EQ(first.status, VerdictStatus::kCorrect) << first.message;
  EXPECT_EQ(State(first).value("references", ""), "computed");
  EXPECT_FALSE(BaselinesKept(first));
  ASSERT_TRUE(first.baselines.count("reference"));
  EXPECT_EQ(KeptRuns(cache_), 1u);

  Verdict second = Judge();
  ASSERT_EQ(second.status, VerdictStatus::kCorrect) << second.message;
  EXPECT_EQ(State(second).value("references", ""), "kept");
  EXPECT_TRUE(BaselinesKept(second));
  // The kept baseline is the one the first judgement measured, to the bit.
  EXPECT_EQ(second.baselines.at("reference").median_ms, first.baselines.at("reference").median_ms);
  EXPECT_EQ(second.trials.size(), first.trials.size());
  EXPECT_EQ(KeptRuns(cache_), 1u);

  options_.rebaseline = true;
  Verdict third = Judge();
  EXPECT_EQ(third.status, VerdictStatus::kCorrect) << third.message;
  EXPECT_FALSE(BaselinesKept(third));
  EXPECT_TRUE(third.baselines.count("reference"));
  EXPECT_EQ(State(third).value("references", ""), "kept");  // --rebaseline leaves references alone

  options_.rebaseline = false;
  options_.trusted_state = false;
  Verdict off = Judge();
  EXPECT_EQ(off.status, VerdictStatus::kCorrect) << off.message;
  EXPECT_EQ(State(off).value("references", ""), "computed (not kept)");
  EXPECT_FALSE(BaselinesKept(off));
}

// A kept reference whose bytes changed is dropped and computed again: the judgement stands.
TEST_F(TrustedJudgementTest, GivenAKeptReferenceChangedOnDiskItIsComputedAgain) {
  options_.baselines = false;
  ASSERT_EQ(Judge().status, VerdictStatus::kCorrect);
  ASSERT_EQ(KeptRuns(cache_), 1u);
  fs::path run = fs::directory_iterator(cache_ / "trusted" / "runs")->path();
  fs::path output;
  for (const auto& e : fs::directory_iterator(run))
    if (e.path().filename().string().rfind("out_", 0) == 0) output = e.path();
  ASSERT_FALSE(output.empty());
  {
    std::fstream f(output, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);
    f.write("\x7f\x7f\x7f\x7f", 4);  // a different reference value, same size
  }
  Verdict v = Judge();
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(State(v).value("references", ""), "computed");
  bool warned = false;
  for (const std::string& w : v.warnings) warned |= w.find("did not verify") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_EQ(State(Judge()).value("references", ""), "kept");  // kept anew
}

// Anything the references depend on changes the key: the problem file, here its magnitudes.
TEST_F(TrustedJudgementTest, GivenAChangedProblemFileNothingKeptIsUsed) {
  ASSERT_EQ(Judge().status, VerdictStatus::kCorrect);
  {
    std::ofstream f(problem_dir_ / "problem.toml", std::ios::app);
    f << "\n# a comment is a change too: the key holds the file's bytes\n";
  }
  Verdict v = Judge();
  EXPECT_EQ(v.status, VerdictStatus::kCorrect) << v.message;
  EXPECT_EQ(State(v).value("references", ""), "computed");
  EXPECT_FALSE(BaselinesKept(v));
  EXPECT_EQ(KeptRuns(cache_), 2u);
}

}  // namespace
}  // namespace kforge
