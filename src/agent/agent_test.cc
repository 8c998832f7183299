// Specifications of the agents' building blocks: templates, code extraction, the tuner and
// the rule-based analyst.
#include <gtest/gtest.h>

#include "agent/analyst.h"
#include "agent/code_extract.h"
#include "agent/generator.h"
#include "agent/prompt_template.h"
#include "agent/tuner.h"

namespace kforge {
namespace {

TEST(TemplateTest, GivenVarsAndSectionsItRendersOnlySetSections) {
  Result<std::string> r = RenderTemplate("A {{x}}\n{{#opt}}has {{opt}}\n{{/opt}}{{#none}}hidden{{/none}}B", {{"x", "1"}, {"opt", "o"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "A 1\nhas o\nB");
}

TEST(TemplateTest, GivenAnUnclosedSectionItNamesIt) {
  Result<std::string> r = RenderTemplate("{{#memory}} never closed", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("memory"), std::string::npos);
}

TEST(TemplateTest, GivenTheShippedPromptsEveryBackendHasAnExample) {
  for (const char* b : {"cpp", "opencl", "cuda", "vulkan", "triton", "pytorch"}) {
    EXPECT_TRUE(BackendPromptSection(b, "example").ok()) << b;
    EXPECT_TRUE(BackendPromptSection(b, "answer-format").ok()) << b;
  }
  EXPECT_FALSE(BackendPromptSection("no_such_backend", "example").ok());
}

TEST(ExtractTest, GivenProseAroundOneBlockItTakesTheBlock) {
  auto c = ExtractCandidate("Here is the kernel:\n```cpp\nint kf_run();\n```\nIt is fast.", "cpp");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->main, "int kf_run();\n");
  EXPECT_FALSE(c->truncated);
}

TEST(ExtractTest, GivenAPythonBackendItTakesThePythonBlock) {
  auto c = ExtractCandidate("Plan:\n```text\nnotes\n```\n```python\nclass ModelNew: pass\n```\n", "pytorch");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->main, "class ModelNew: pass\n");
  auto none = ExtractCandidate("```cpp\nint x;\n```\n", "triton");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("```python"), std::string::npos);
}

TEST(ExtractTest, GivenHostAndKernelBlocksItSplitsThemForOpenCl) {
  auto c = ExtractCandidate("```cpp\nhost\n```\ntext\n```opencl\n__kernel void k() {}\n```\n", "opencl");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->main, "host\n");
  EXPECT_EQ(c->program, "__kernel void k() {}\n");
}

TEST(ExtractTest, GivenHostAndGlslBlocksItSplitsThemForVulkan) {
  auto c = ExtractCandidate("```cpp\nhost\n```\ntext\n```glsl\n#version 450\nvoid main() {}\n```\n", "vulkan");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->main, "host\n");
  EXPECT_EQ(c->program, "#version 450\nvoid main() {}\n");
  auto none = ExtractCandidate("```cpp\nhost\n```\n", "vulkan");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("```glsl"), std::string::npos);
}

TEST(ExtractTest, GivenFileNamesInInfoStringsOrFirstLinesItRecognisesTheKernelFile) {
  auto c = ExtractCandidate("```c\n// file: k.cl\n__kernel void k() {}\n```\n```cpp launcher.cpp\nhost\n```", "opencl");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->main, "host\n");
  EXPECT_NE(c->program.find("__kernel"), std::string::npos);
}

TEST(ExtractTest, GivenAnAnswerCutOffInsideTheBlockItIsTruncated) {
  auto c = ExtractCandidate("```cpp\nint kf_run() {\n  for (;;", "cpp");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->truncated);
}

TEST(ExtractTest, GivenBlanksOrACarriageReturnAfterTheClosingFenceTheBlockIsClosed) {
  for (const char* answer : {"```cpp\nint kf_run();\n```  \nDone.", "```cpp\r\nint kf_run();\r\n```\r\nDone.\r\n"}) {
    auto c = ExtractCandidate(answer, "cpp");
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->truncated) << answer;
    EXPECT_EQ(c->main.substr(0, 13), "int kf_run();");
  }
}

TEST(ExtractTest, GivenNoCodeItSaysHowToAnswer) {
  auto c = ExtractCandidate("I cannot do that.", "cpp");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("```cpp"), std::string::npos);
}

TEST(TunerTest, GivenAnnotationsItFindsAndAppliesThem) {
  std::string src = "#define TILE 32  // kforge:tune [16, 32, 64]\n#define UNROLL 2 // kforge:tune [1,2,4]\nint x;\n";
  auto params = FindTunables({src});
  ASSERT_TRUE(params.ok());
  ASSERT_EQ(params->size(), 2u);
  EXPECT_EQ((*params)[0].values.size(), 3u);
  std::string out = ApplyTuneConfig(src, {{"TILE", "64"}});
  EXPECT_NE(out.find("#define TILE 64"), std::string::npos);
  EXPECT_NE(out.find("#define UNROLL 2"), std::string::npos);
  EXPECT_NE(out.find("int x;"), std::string::npos);
}

TEST(TunerTest, GivenAMalformedAnnotationItNamesTheLine) {
  auto params = FindTunables({"int a;\n#define TILE // kforge:tune 16, 32\n"});
  ASSERT_FALSE(params.ok());
  EXPECT_NE(params.status().message().find("line 2"), std::string::npos);
}

TEST(TunerTest, GivenASeparableCostCoordinateSearchFindsTheOptimumWithFewEvaluations) {
  std::vector<TunableParam> params = {{"A", "1", {"1", "2", "4", "8", "16"}},
                                      {"B", "1", {"1", "2", "4", "8"}},
                                      {"C", "0", {"0", "1", "2", "3", "4", "5"}}};
  CoordinateSearch search(params);
  auto cost = [](const TuneConfig& c) {
    double a = std::stod(c.at("A")), b = std::stod(c.at("B")), cc = std::stod(c.at("C"));
    return (a - 8) * (a - 8) + (b - 2) * (b - 2) + (cc - 3) * (cc - 3) + 1;
  };
  while (auto c = search.Next()) search.Report(*c, cost(*c));
  EXPECT_EQ(search.best().at("A"), "8");
  EXPECT_EQ(search.best().at("B"), "2");
  EXPECT_EQ(search.best().at("C"), "3");
  EXPECT_LT(search.evaluations(), search.space_size() / 4);  // 120 configurations
}

TEST(TunerTest, GivenFailingConfigurationsTheyAreSkipped) {
  CoordinateSearch search({{"T", "2", {"1", "2", "4"}}});
  while (auto c = search.Next()) search.Report(*c, c->at("T") == "4" ? std::nullopt : std::optional<double>(c->at("T") == "1" ? 1.0 : 2.0));
  EXPECT_EQ(search.best().at("T"), "1");
}

// The winner's curse, as issue 10 measured it: near-identical configurations measured 1.96 to
// 3.33 ms once each, and the luckiest single run (1.96 ms, "80.3x") was reported as the best.
// Re-timed interleaved with the seed, the configuration that is really faster wins, and the
// speedup reported is the confirmed one.
TEST(TunerTest, GivenNoisyNearIdenticalConfigurationsThePickIsByConfirmedRatio) {
  InterleavedTimes t;
  t.labels = {"seed", "lucky (1.96 ms once)", "steady (2.10 ms once)", "third (2.20 ms once)"};
  t.rounds = 5;
  t.job_ms = {{157, 160, 158, 161, 156, 159, 162, 158, 160, 157},
              {2.45, 2.60, 2.40, 2.55, 2.50, 2.48, 2.62, 2.41, 2.52, 2.47},
              {2.20, 2.25, 2.18, 2.30, 2.22, 2.19, 2.27, 2.21, 2.24, 2.23},
              {2.60, 2.70, 2.55, 2.65, 2.72, 2.58, 2.61, 2.66, 2.59, 2.63}};
  int pick = PickConfirmed(t, 0, 0);
  ASSERT_EQ(pick, 2) << "the steady configuration, not the lucky one";
  Confirmation c = t.Compare(2, 0);
  EXPECT_EQ(c.rounds, 5);
  EXPECT_NEAR(c.ratio, 71.24, 0.01) << c.Summary();
  EXPECT_LT(c.ratio, 80.3) << "the single-run figure was the winner's curse";
  EXPECT_LE(c.ci_low, c.ratio);
  EXPECT_GE(c.ci_high, c.ratio);
  EXPECT_EQ(t.Compare(2, 1).Outcome(), "faster") << t.Compare(2, 1).Summary();
  // Without a seed the fastest single measurement is the reference: the pick is the same.
  InterleavedTimes no_seed = t;
  no_seed.labels.erase(no_seed.labels.begin());
  no_seed.job_ms.erase(no_seed.job_ms.begin());
  EXPECT_EQ(PickConfirmed(no_seed, 0, -1), 1);
}

TEST(FeedbackTest, GivenAWrongOutputVerdictItListsTheFailingOutputAndItsFirstMismatches) {
  nlohmann::json v = {{"status", "wrong_output"}, {"message", "trial 0: output 'y' differs"},
                      {"trials", {{{"pass", false}, {"seed", 1000}, {"sizes", {{"n", 8}}},
                                   {"outputs", {{"y", {{"pass", false}, {"reason", "8 of 8 elements outside atol"},
                                                       {"max_abs_error", 0.5}, {"rms_rel_error", 0.25},
                                                       {"first_mismatches", {{{"coords", {3}}, {"got", 1.0}, {"want", 1.5}}}}}}}}}}}};
  std::string f = VerdictFeedback(v);
  EXPECT_NE(f.find("Status: wrong_output"), std::string::npos) << f;
  EXPECT_NE(f.find("output y: 8 of 8 elements outside atol"), std::string::npos) << f;
  EXPECT_NE(f.find("first mismatches (index: got vs want): [3]: 1.0 vs 1.5;"), std::string::npos) << f;
}

TEST(AnalystTest, GivenLowSolTheRulesSayParallelism) {
  nlohmann::json p = {{"roofline", {{"sol_percent", 3.0}, {"bound", "compute"}}}};
  Recommendation r = RuleAnalyst(p);
  EXPECT_NE(r.bottleneck.find("parallelism"), std::string::npos);
  EXPECT_EQ(r.source, "rules");
}

TEST(AnalystTest, GivenAMemoryBoundKernelAtModerateSolTheRulesSayMemoryAccess) {
  Recommendation r = RuleAnalyst({{"roofline", {{"sol_percent", 30.0}, {"bound", "memory"}}}});
  EXPECT_NE(r.bottleneck.find("memory"), std::string::npos);
  EXPECT_NE(r.expected_gain.find("3.3x"), std::string::npos);
}

TEST(AnalystTest, GivenAModelAnswerWithProseTheJsonIsParsed) {
  auto r = ParseRecommendation("Sure!\n```json\n{\"bottleneck\": \"bw\", \"evidence\": \"e\", \"change\": \"tile\", \"expected_gain\": \"2x\"}\n```");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->change, "tile");
  EXPECT_FALSE(ParseRecommendation("no json here").ok());
}

}  // namespace
}  // namespace kforge
