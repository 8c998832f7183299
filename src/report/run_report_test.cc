#include "report/run_report.h"

#include <gtest/gtest.h>

#include "base/files.h"
#include "report/attempt_html.h"
#include "report/bench_html.h"
#include "report/page_test_util.h"
#include "report/html.h"

namespace kforge {
namespace {

using nlohmann::json;

const char kHostile[] = "</script><script>alert('pwned')</script><img src=x onerror=alert(1)>";

// Stand-ins for the libraries: the tests check the page, not Chart.js.
ReportAssets FakeAssets() { return {"/*chart.js*/", "/*highlight.js*/", "/*github.css*/"}; }

json Verdict(const std::string& status, double ms) {
  json v = {{"status", status},
            {"message", status == "correct" ? "all trials passed" : "trial 2: y wrong"}};
  if (status == "correct") {
    v["timing"] = {{"median_ms", ms}, {"min_ms", ms * 0.9}, {"cv", 0.02}, {"runs", 40}};
    v["roofline"] = {
        {"flops", 2e6},
        {"bytes", 1e5},
        {"sol_percent", 12.5},
        {"theoretical", {{"gflops", 1190.4}, {"bandwidth_gbs", 4761.6}, {"unit", "fp32 simd"}}},
        {"achievable", {{"gflops", 493.7}, {"bandwidth_gbs", 42.1}}}};
  } else {
    v["trials"] = {{{"seed", 2},
                    {"magnitude", 1},
                    {"pass", false},
                    {"sizes", {{"n", 64}}},
                    {"outputs",
                     {{"y",
                       {{"pass", false},
                        {"reason", "3 elements beyond tolerance"},
                        {"bad_count", 3},
                        {"first_mismatches",
                         {{{"index", 7}, {"coords", {0, 7}}, {"got", 1.5}, {"want", 2.5}}}}}}}}}};
  }
  return v;
}

AttemptRow Attempt(int64_t number, const std::string& phase, int64_t parent,
                   const std::string& source, const json& verdict) {
  AttemptRow a;
  a.run_id = 1;
  a.number = number;
  a.phase = phase;
  a.parent = parent;
  a.state = "done";
  a.source = source;
  a.status = verdict["status"];
  a.verdict_json = verdict.dump();
  a.median_ms = verdict.contains("timing") ? verdict["timing"]["median_ms"].get<double>() : 0;
  a.sol_percent = verdict.contains("roofline") ? 12.5 : 0;
  return a;
}

// A three-attempt run: the seed, a wrong kernel whose model answer is hostile, and a correct
// faster one (the best) confirmed against the seed.
RunRecord ThreeAttemptRun() {
  RunRecord r;
  r.run.id = 1;
  r.run.problem = "gelu";
  r.run.backend = "cpp";
  r.run.model = "openai:gpt-test";
  r.run.status = "done";
  r.run.stop_reason = "budget: iterations";
  r.run.config_json = json({{"iterations", 2},
                            {"candidates", 1},
                            {"eval", {{"precision", "strict"}, {"quick", true}}}})
                          .dump();
  r.run.seed_ms = 2.0;
  r.run.best_attempt = 3;
  r.run.best_ms = 0.5;
  r.attempts.push_back(
      Attempt(1, "seed", -1, "void k() {\n  slow();\n}\n", Verdict("correct", 2.0)));
  r.attempts.push_back(Attempt(2, "optimize", 1, "void k() {\n  if (a < b && c > d) wrong();\n}\n",
                               Verdict("wrong_output", 0)));
  json best = Verdict("correct", 0.5);
  best["confirmed"] = {{{"candidate", "attempt 3"},
                        {"against", "seed"},
                        {"ratio", 3.91},
                        {"ci", {3.5, 4.2}},
                        {"confidence", 0.9},
                        {"rounds", 5},
                        {"outcome", "faster"}}};
  r.attempts.push_back(Attempt(3, "optimize", 1, "void k() {\n  fast();\n}\n", best));
  LlmCallRow call;
  call.run_id = 1;
  call.attempt = 2;
  call.agent = "generator";
  call.model = "openai:gpt-test";
  call.prompt_json = json({{"system", "You write kernels."},
                           {"messages",
                            {{{"role", "user"},
                              {"parts", {{{"text", std::string("Make it fast ") + kHostile}}}}}}}})
                         .dump();
  call.response_text = std::string("Here: ") + kHostile;
  call.input_tokens = 1200;
  call.output_tokens = 300;
  call.cost_usd = 0.0123;
  call.latency_ms = 4200;
  r.calls.push_back(call);
  r.recommendations.push_back({1, 1, "rules",
                               json({{"bottleneck", "memory"},
                                     {"evidence", "SOL 12%"},
                                     {"change", "vectorize"},
                                     {"expected_gain", "2x"}})
                                   .dump()});
  r.totals.attempts = 3;
  r.totals.correct = 2;
  r.totals.llm_calls = 1;
  r.totals.input_tokens = 1200;
  r.totals.output_tokens = 300;
  r.totals.cost_usd = 0.0123;
  r.totals.wall_seconds = 42;
  return r;
}

TEST(RunReportTest, GivenAHostileModelAnswerItIsShownAsTextAndOpensNoScript) {
  const std::string html = RenderRunReport(ThreeAttemptRun(), FakeAssets());
  // Chart.js, highlight.js, the data and the page's script: the answer added none.
  EXPECT_EQ(Count(html, "<script"), 4u);
  EXPECT_EQ(Count(html, "</script>"), 4u);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("alert('pwned')</script>"), std::string::npos);
  EXPECT_NE(
      html.find("Here: &lt;/script&gt;&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;&lt;img "
                "src=x onerror=alert(1)&gt;"),
      std::string::npos);
  EXPECT_NE(html.find("Make it fast &lt;/script&gt;"), std::string::npos);       // the prompt too
  EXPECT_NE(html.find("if (a &lt; b &amp;&amp; c &gt; d)"), std::string::npos);  // and sources
}

TEST(RunReportTest, GivenARunTheEmbeddedDataIsWhatTheChartsDraw) {
  const RunRecord r = ThreeAttemptRun();
  const std::string html = RenderRunReport(r, FakeAssets());
  json data = json::parse(EmbeddedData(html));
  EXPECT_EQ(data, RunChartData(r));
  EXPECT_EQ(data["kind"], "run");
  ASSERT_EQ(data["attempts"].size(), 3u);
  EXPECT_DOUBLE_EQ(data["attempts"][0]["speedup"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(data["attempts"][1]["ms"].get<double>(), 0.0);  // wrong: not timed
  EXPECT_DOUBLE_EQ(data["attempts"][2]["speedup"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(data["attempts"][2]["flops"].get<double>(), 2e6);
  EXPECT_EQ(data["best_attempt"], 3);
  EXPECT_DOUBLE_EQ(data["roofs"]["theoretical"]["gflops"].get<double>(), 1190.4);
  EXPECT_DOUBLE_EQ(data["roofs"]["achievable"]["bandwidth_gbs"].get<double>(), 42.1);
}

TEST(RunReportTest, GivenARunItShowsSummaryConfirmedSpeedupTimelineAndEachAttempt) {
  const std::string html = RenderRunReport(ThreeAttemptRun(), FakeAssets());
  for (const char* expected :
       {"gelu",
        "openai:gpt-test",
        "strict",
        "budget: iterations",
        "1200 in (0 cached), 300 out",
        "$0.0123",
        "42.0 s",
        "confirmed <b>3.91x over seed</b>, 90% CI [3.50, 4.20], 5 rounds, faster",
        "id=\"timeline\"",
        "id=\"attempt-1\"",
        "id=\"attempt-2\"",
        "id=\"attempt-3\" open",
        "Failing trial",
        "3 elements beyond tolerance",
        "<td>1.5</td><td>2.5</td>",
        "Diff from attempt 1 (its parent)",
        "<span class=\"add\">+  fast();</span>",
        "<span class=\"del\">-  slow();</span>",
        "<dt>change</dt><dd>vectorize</dd>",
        "generator call to openai:gpt-test: 1200 in / 300 out tokens",
        "<div class=\"role\">system</div>",
        "class=\"language-cpp\"",
        "id=\"chart-speedup\"",
        "id=\"chart-roofline\""})
    EXPECT_NE(html.find(expected), std::string::npos) << expected;
}

TEST(RunReportTest, GivenTheStoresSecondsTheTimelineShowsThemElseTheVerdicts) {
  RunRecord r = ThreeAttemptRun();
  r.attempts[2].seconds_json =
      json({{"queue", 1.25}, {"compile", 0.5}, {"check", 0.75}, {"time", 2.5}, {"evaluate", 4.0}})
          .dump();
  json old = json::parse(r.attempts[0].verdict_json);
  old["stages_seconds"] = {{"compile", 0.3}, {"reference", 0.1}, {"compare", 0.1}};
  old["worker_phases_ms"] = {{"checks", 200}, {"timing", 1500}};
  r.attempts[0].verdict_json = old.dump();  // an attempt recorded before schema 3
  const std::string html = RenderRunReport(r, FakeAssets());
  EXPECT_NE(html.find("<td>1.25</td><td>0.50</td><td>0.75</td><td>2.50</td><td>4.00</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>-</td><td>0.30</td><td>0.40</td><td>1.50</td>"), std::string::npos);
}

TEST(RunReportTest, GivenNoParentTheDiffIsAgainstTheAttemptBefore) {
  AttemptRow tuned;
  tuned.number = 4;
  tuned.parent = -1;
  EXPECT_EQ(DiffBase(tuned), 3);
  tuned.parent = 2;
  EXPECT_EQ(DiffBase(tuned), 2);
  AttemptRow first;
  first.number = 1;
  EXPECT_EQ(DiffBase(first), -1);
}

TEST(RunReportTest, GivenAStoreItLoadsEveryRowOfTheRunAndNotFoundForAMissingOne) {
  Result<std::filesystem::path> dir = MakeScratchDir("report-test");
  ASSERT_TRUE(dir.ok());
  Result<std::unique_ptr<RunStore>> store = RunStore::Open(*dir / "runs.db");
  ASSERT_TRUE(store.ok()) << store.status().message();
  RunRecord want = ThreeAttemptRun();
  Result<int64_t> id = (*store)->CreateRun(want.run);
  ASSERT_TRUE(id.ok());
  for (AttemptRow a : want.attempts) {
    a.run_id = *id;
    ASSERT_TRUE((*store)->AddAttempt(a).ok());
  }
  LlmCallRow call = want.calls[0];
  call.run_id = *id;
  ASSERT_TRUE((*store)->AddLlmCall(call).ok());
  Result<RunRecord> got = LoadRunRecord(**store, *id);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->attempts.size(), 3u);
  EXPECT_EQ(got->calls.size(), 1u);
  EXPECT_EQ(got->totals.input_tokens, 1200);
  EXPECT_EQ(got->calls[0].response_text, want.calls[0].response_text);
  EXPECT_EQ(LoadRunRecord(**store, 99).status().code(), StatusCode::kNotFound);
}

TEST(VerdictHtmlTest, GivenACompileErrorItShowsTheCompilerOutputEscaped) {
  json v = {{"status", "compile_error"},
            {"message", "does not compile"},
            {"compiler_output", "k.cc:3:5: error: expected ';' before '<' token\n  x < y"}};
  const std::string html = VerdictHtml(v);
  EXPECT_NE(html.find("Compiler errors"), std::string::npos);
  EXPECT_NE(html.find("expected &#39;;&#39; before &#39;&lt;&#39; token"), std::string::npos);
}

TEST(VerdictHtmlTest, GivenMalformedVerdictsItShowsWhatThereIsWithoutThrowing) {
  EXPECT_NO_THROW(VerdictHtml(json("not json at all <b>")));
  EXPECT_NE(VerdictHtml(json("not json <b>")).find("not json &lt;b&gt;"), std::string::npos);
  EXPECT_NO_THROW(VerdictHtml(
      json({{"status", 3}, {"trials", "x"}, {"warnings", {{"a", 1}}}, {"confirmed", {1, 2}}})));
  EXPECT_NO_THROW(VerdictHtml(json({{"trials", {{{"pass", false}, {"outputs", {{"y", 7}}}}}}})));
  EXPECT_NE(VerdictHtml(nullptr).find("Not judged"), std::string::npos);
}

// A bench file as BenchToJson writes it: two policies, a hostile problem name.
json TwoPassBench() {
  std::vector<BenchPass> passes;
  for (const char* policy : {"strict", "kernelbench"}) {
    std::vector<BenchRow> rows;
    for (int i = 0; i < 3; ++i) {
      BenchRow r;
      r.problem = i == 0 ? std::string("p") + kHostile : "p" + std::to_string(i);
      r.status = i == 2 ? "no_custom_kernel" : "correct";
      r.precision = policy;
      r.ms = 1.0;
      r.baseline_ms = {{"reference", 2.0 + i}, {"seed", 1.5}};
      r.verdict = {
          {"roofline", {{"sol_percent", 33.0}}},
          {"warnings", i == 1 ? json::array({"degenerate problem: y is zero"}) : json::array()}};
      rows.push_back(r);
    }
    BenchSummary s = Summarize(rows);
    passes.push_back({policy, rows, s});
  }
  return BenchToJson(passes, {{"suite", "bundled"},
                              {"backend", "cpp"},
                              {"precision", {"strict", "kernelbench"}},
                              {"mode", "candidates"}});
}

TEST(BenchHtmlTest, GivenABenchFileItReadsItsPassesBackWithTheSameSummaries) {
  Result<std::vector<BenchPass>> passes = BenchFromJson(TwoPassBench());
  ASSERT_TRUE(passes.ok());
  ASSERT_EQ(passes->size(), 2u);
  EXPECT_EQ((*passes)[1].precision, "kernelbench");
  EXPECT_EQ((*passes)[0].summary.correct, 2);
  EXPECT_DOUBLE_EQ((*passes)[0].summary.geomean.at("reference"), std::sqrt(2.0 * 3.0));
  EXPECT_FALSE(BenchFromJson(json::object()).ok());
}

TEST(BenchHtmlTest, GivenABenchTheCurveRunsFromZeroToThreeAndTheTableHasFlags) {
  Result<std::string> html = RenderBenchReport(TwoPassBench(), FakeAssets());
  ASSERT_TRUE(html.ok()) << html.status().message();
  EXPECT_EQ(Count(*html, "<script"), 3u);  // Chart.js, the data, the page's script: no highlight.js
  EXPECT_EQ(html->find("<img"), std::string::npos);
  json data = json::parse(EmbeddedData(*html));
  ASSERT_EQ(data["passes"].size(), 2u);
  const json& curve = data["passes"][0]["fast_p"]["reference"];
  ASSERT_EQ(curve.size(), 61u);
  EXPECT_DOUBLE_EQ(curve[0][0].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(curve[60][0].get<double>(), 3.0);
  EXPECT_NEAR(curve[0][1].get<double>(), 2.0 / 3, 1e-12);   // fast_0: the share correct
  EXPECT_NEAR(curve[50][1].get<double>(), 1.0 / 3, 1e-12);  // p = 2.5: only the 3x problem
  for (const char* expected :
       {">degenerate</span>", ">no_custom_kernel</span>", "<td>33.0</td>", "x reference", "x seed",
        "Problems [kernelbench]", "id=\"chart-fastp\"", "id=\"chart-geomean\""})
    EXPECT_NE(html->find(expected), std::string::npos) << expected;
}

TEST(BenchHtmlTest, GivenPublishedTimesTheTableShowsThemBesideKforgesWithTheRatios) {
  BenchRow r;
  r.problem = "12_Gemm_Multiply_LeakyReLU";
  r.status = "correct";
  r.ms = 2.0;
  r.baseline_ms = {{"torch_eager", 3.3}, {"torch_compile", 2.4}, {"torch_best", 2.4}};
  r.published_ms = {{"published_eager", 3.0}, {"published_compile", 2.0}};
  json bench = BenchToJson({{"strict", {r}, Summarize({r})}},
                           {{"suite", "kernelbench-l2-gemm"}, {"precision", {"strict"}}});
  Result<std::string> html = RenderBenchReport(bench, FakeAssets());
  ASSERT_TRUE(html.ok());
  for (const char* expected :
       {"published eager ms", "compile / published",
        "<td>3.0000</td><td>2.0000</td><td>1.10</td><td>1.20</td>", "x torch_eager",
        "x torch_compile", "x torch_best", "<td>1.65x</td>"})
    EXPECT_NE(html->find(expected), std::string::npos) << expected;
}

}  // namespace
}  // namespace kforge
