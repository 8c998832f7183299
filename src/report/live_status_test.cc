#include "report/live_status.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Workspace {
  fs::path dir;
  std::unique_ptr<RunStore> store;
};

Workspace MakeWorkspace() {
  Workspace w;
  Result<fs::path> dir = MakeScratchDir("live-status-test");
  EXPECT_TRUE(dir.ok());
  w.dir = *dir;
  Result<std::unique_ptr<RunStore>> store = RunStore::Open(w.dir / "runs.db");
  EXPECT_TRUE(store.ok());
  w.store = std::move(*store);
  return w;
}

AttemptRow Attempt(int64_t run, const std::string& phase, const std::string& status, double ms) {
  AttemptRow a;
  a.run_id = run;
  a.phase = phase;
  a.state = status.empty() ? "evaluating" : "done";
  a.status = status;
  a.median_ms = ms;
  a.sol_percent = ms > 0 ? 10 / ms : 0;
  return a;
}

TEST(LiveStatusTest, GivenARunningTunerItShowsItsLatestAttemptAndTheBestSoFar) {
  Workspace w = MakeWorkspace();
  RunRow run;
  run.problem = "matmul";
  run.backend = "cpp";
  run.model = "offline";
  run.status = "running";
  run.seed_ms = 8;
  run.config_json = json({{"iterations", 5}, {"max_evaluations", 12}, {"max_seconds", 100}}).dump();
  Result<int64_t> id = w.store->CreateRun(run);
  ASSERT_TRUE(id.ok());
  w.store->AddAttempt(Attempt(*id, "seed", "correct", 8));
  w.store->AddAttempt(Attempt(*id, "tune", "correct", 2));
  w.store->AddAttempt(Attempt(*id, "tune", "", 0));
  json s = WorkspaceStatus(w.store.get(), {});
  ASSERT_EQ(s["runs"].size(), 1u);
  const json& r = s["runs"][0];
  EXPECT_EQ(r["attempt"], 3);
  EXPECT_EQ(r["state"], "evaluating");
  EXPECT_EQ(r["phase"], "tune");
  EXPECT_EQ(r["iterations"], 12);  // the tuner's evaluations, not the loop's passes
  EXPECT_DOUBLE_EQ(r["best_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["speedup"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(r["seconds_left"].get<double>(), 100.0);
  EXPECT_EQ(r["report"], "/run/" + std::to_string(*id));
  EXPECT_FALSE(r.contains("config"));  // named fields only
  // Unchanged, the same version; one more attempt, another.
  EXPECT_EQ(WorkspaceStatus(w.store.get(), {})["version"], s["version"]);
  w.store->AddAttempt(Attempt(*id, "tune", "", 0));
  EXPECT_NE(WorkspaceStatus(w.store.get(), {})["version"], s["version"]);
}

TEST(LiveStatusTest, GivenAFolderItListsBenchFilesOnlyAndServesNoOtherName) {
  Workspace w = MakeWorkspace();
  std::ofstream(w.dir / "bench.json")
      << R"({"meta": {"suite": "bundled", "backend": "cpp"}, "rows": [{"status": "correct", "median_ms": 1}]})";
  std::ofstream(w.dir / "other.json") << R"({"not": "a bench"})";
  json s = WorkspaceStatus(nullptr, {w.dir});
  EXPECT_TRUE(s["runs"].empty());
  ASSERT_EQ(s["benches"].size(), 1u);
  EXPECT_EQ(s["benches"][0]["file"], "bench.json");
  EXPECT_EQ(s["benches"][0]["correct"], 1);
  EXPECT_EQ(FindBenchFile({w.dir}, "bench.json"), w.dir / "bench.json");
  EXPECT_TRUE(FindBenchFile({w.dir}, "other.json").empty());
  EXPECT_TRUE(FindBenchFile({w.dir}, "../bench.json").empty());
  EXPECT_TRUE(FindBenchFile({w.dir}, "runs.db").empty());
}

TEST(LiveStatusTest, GivenThePageItTalksOnlyToItsOwnServer) {
  const std::string page = LivePage();
  EXPECT_NE(page.find("connect-src &#39;self&#39;"), std::string::npos);
  EXPECT_NE(page.find("/api/status"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);
}

}  // namespace
}  // namespace kforge
