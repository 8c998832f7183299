#include "report/bench_report.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace kforge {
namespace {

BenchRow Row(const std::string& status, double ms, double eager, double compile) {
  BenchRow r;
  r.problem = "p";
  r.status = status;
  r.ms = ms;
  if (eager > 0) r.baseline_ms["torch_eager"] = eager;
  if (compile > 0) r.baseline_ms["torch_compile"] = compile;
  if (eager > 0 || compile > 0)
    r.baseline_ms["torch_best"] = compile > 0 && (eager <= 0 || compile < eager) ? compile : eager;
  return r;
}

TEST(BenchSummaryTest, FastPCountsCorrectProblemsFasterThanPOverAllProblems) {
  std::vector<BenchRow> rows = {
      Row("correct", 1.0, 3.0, 2.5),      // 3x eager, 2.5x best
      Row("correct", 2.0, 3.0, 1.0),      // 1.5x eager, 0.5x best (compile faster)
      Row("wrong_output", 0.1, 3.0, 3.0), // fast but wrong: never counts
      Row("missing", 0, 1.0, 1.0),
  };
  BenchSummary s = Summarize(rows);
  EXPECT_EQ(s.problems, 4);
  EXPECT_EQ(s.correct, 2);
  EXPECT_DOUBLE_EQ(s.share_correct, 0.5);
  EXPECT_DOUBLE_EQ(s.fast_p["torch_eager"][0], 0.5);
  EXPECT_DOUBLE_EQ(s.fast_p["torch_eager"][1], 0.5);
  EXPECT_DOUBLE_EQ(s.fast_p["torch_eager"][1.5], 0.25);  // 1.5x is not more than 1.5
  EXPECT_DOUBLE_EQ(s.fast_p["torch_eager"][2], 0.25);
  EXPECT_DOUBLE_EQ(s.fast_p["torch_best"][1], 0.25);
  EXPECT_NEAR(s.geomean["torch_eager"], std::sqrt(3.0 * 1.5), 1e-12);
  EXPECT_NEAR(s.geomean["torch_best"], std::sqrt(2.5 * 0.5), 1e-12);
  EXPECT_EQ(s.geomean_count["torch_compile"], 2);
}

TEST(BenchSummaryTest, GivenConfirmationsTheTableShowsEachRatioWithItsIntervalBesideTheSingleRun) {
  std::vector<BenchRow> rows = {Row("correct", 1.0, 3.0, 2.5), Row("correct", 2.0, 3.0, 1.0), Row("wrong_output", 0.1, 3.0, 3.0)};
  rows[0].confirmed = {{"against", "torch_best (torch_compile)"}, {"ratio", 2.31}, {"ci", {2.1, 2.52}}, {"rounds", 5}};
  rows[1].confirmed = {{"against", "torch_best (torch_compile)"}, {"ratio", 0.52}, {"ci", {0.45, 1.02}}, {"rounds", 5}};
  rows[2].confirmed = {{"against", "seed"}, {"ratio", 9.0}, {"ci", {8.0, 10.0}}, {"rounds", 5}};  // not correct: left out
  BenchSummary s = Summarize(rows);
  EXPECT_EQ(s.confirmed, 2);
  EXPECT_EQ(s.confirmed_faster, 1);
  EXPECT_NEAR(s.confirmed_geomean, std::sqrt(2.31 * 0.52), 1e-12);
  std::string table = BenchTable(rows, s);
  EXPECT_NE(table.find("2.31x [2.10, 2.52] torch_best (torch_compile)"), std::string::npos) << table;
  EXPECT_NE(table.find("2.50x"), std::string::npos) << "the single-run speedup stays beside it\n" << table;
  EXPECT_NE(table.find("confirmed: 2 problems"), std::string::npos) << table;
  nlohmann::json j = BenchToJson(rows, s, nlohmann::json::object());
  EXPECT_EQ(j["rows"][0]["confirmed"]["ratio"], 2.31);
  EXPECT_EQ(j["summary"]["confirmed"]["faster"], 1);
}

TEST(BenchSummaryTest, AnEmptySuiteHasZerosNotNaNs) {
  BenchSummary s = Summarize({});
  EXPECT_EQ(s.problems, 0);
  EXPECT_EQ(s.geomean["torch_eager"], 0);
  EXPECT_EQ(s.fast_p["torch_best"][0], 0);
}

TEST(BenchReportTest, TheJsonAndTheTableCarryTheSummary) {
  std::vector<BenchRow> rows = {Row("correct", 1.0, 2.0, 4.0)};
  rows[0].published_ms["published_eager"] = 1.0;
  BenchSummary s = Summarize(rows);
  nlohmann::json j = BenchToJson(rows, s, {{"suite", "x"}});
  EXPECT_DOUBLE_EQ(j["summary"]["fast_p"]["torch_eager"]["1.5"], 1.0);
  EXPECT_DOUBLE_EQ(j["rows"][0]["speedups"]["torch_best"], 2.0);
  EXPECT_EQ(j["meta"]["suite"], "x");
  std::string t = BenchTable(rows, s);
  EXPECT_NE(t.find("1 problems, 1 correct (100.0%)"), std::string::npos) << t;
  EXPECT_NE(t.find("pub_eager"), std::string::npos) << t;
  EXPECT_NE(t.find("2.00"), std::string::npos) << t;  // kforge eager / published eager
}

TEST(BenchReportTest, ABaselinesOnlyRunSaysSoAndShowsDegenerateProblems) {
  BenchRow r = Row("baselines", 0, 2.0, 3.0);
  r.verdict = {{"warnings", {"degenerate problem: reference output RMS 0.000000 is within 10x atol"}}};
  std::string t = BenchTable({r}, Summarize({r}));
  EXPECT_NE(t.find("baselines only, no candidate judged"), std::string::npos) << t;
  EXPECT_EQ(t.find("fast_0"), std::string::npos) << t;
  EXPECT_NE(t.find("    degenerate problem: reference output RMS"), std::string::npos) << t;
}

TEST(BenchReportTest, PublishedTimesAreLookedUpByLevelAndFile) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "kforge-published-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "baseline_time_torch.json") << R"({"level2": {"12_G.py": {"mean": 1.5, "std": 0.1}}})";
  std::map<std::string, double> t = PublishedTimes(dir.string(), "level2", "12_G.py");
  EXPECT_DOUBLE_EQ(t.at("published_eager"), 1.5);
  EXPECT_FALSE(t.count("published_compile"));
  EXPECT_TRUE(PublishedTimes(dir.string(), "level1", "12_G.py").empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kforge
