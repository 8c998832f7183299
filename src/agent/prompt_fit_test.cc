// Specifications of prompt sizes, the compact profile and fitting into a context window, on the
// shipped prompts and problems (gelu on cpp, softmax on opencl).
#include "agent/prompt_fit.h"

#include <gtest/gtest.h>

#include "agent/prompt_template.h"
#include "kforge/problem.h"

namespace kforge {
namespace {

using llm::PromptProfile;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string UserText(const llm::ChatRequest& r) {
  std::string out;
  for (const llm::Message& m : r.messages)
    for (const llm::ContentPart& p : m.parts) out += p.text;
  return out;
}

Problem Load(const std::string& name) {
  Result<std::filesystem::path> file = FindProblem(name);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  Result<Problem> p = file.ok() ? LoadProblem(*file) : Result<Problem>(file.status());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : Problem{};
}

GenerationContext Context(const Problem& p, const std::string& backend, PromptProfile profile) {
  GenerationContext c;
  c.problem = &p;
  c.backend = backend;
  c.task = "repair";
  c.profile = profile;
  return c;
}

llm::ChatRequest Build(const GenerationContext& c) {
  Result<llm::ChatRequest> r = BuildGenerationRequest(c);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : llm::ChatRequest{};
}

// Three failed approaches of about 300 characters each, oldest first.
std::string ThreeMemoryLines() {
  std::string m;
  for (int k = 1; k <= 3; ++k)
    m += "- attempt " + std::to_string(k) +
         " (functional: compile_error: " + std::string(270, 'a' + k) + ")\n";
  return m;
}

TEST(PromptSizeTest, GivenARequestItCountsEveryTextByteAndEstimatesFromThem) {
  llm::ChatRequest r;
  r.system = std::string(30, 's');
  r.messages.push_back(llm::Message::User(std::string(40, 'u') + "n = 2097152, x = 0.5"));
  r.messages.push_back(llm::Message::Assistant(std::string(9, 'a')));
  PromptSize size = MeasurePrompt(r);
  EXPECT_EQ(size.chars, 99);
  EXPECT_EQ(size.digits, 9);
  // A token per digit, 90 other bytes / 2.8 = 32.1 -> 33, three messages (system included) and
  // the request's own.
  EXPECT_EQ(size.estimated_tokens, 9 + 33 + 3 * kTokensPerMessage + kTokensPerRequest);
}

TEST(PromptProfileTest, GivenEveryShippedBackendItHasAnAbiSummary) {
  for (const char* b : {"cpp", "opencl", "cuda", "vulkan", "triton", "pytorch"}) {
    Result<std::string> summary = BackendPromptSection(b, "abi-summary");
    ASSERT_TRUE(summary.ok()) << b << ": " << summary.status().ToString();
    EXPECT_LT(summary->size(), 1000u) << b << ": a summary is a few lines";
  }
}

// Compact = the ABI summary and the one short example instead of the ABI document.
TEST(PromptProfileTest, GivenTheCompactProfileThePromptCarriesTheAbiSummaryAndIsSmaller) {
  for (auto [name, backend] : {std::pair{"gelu", "cpp"}, std::pair{"softmax", "opencl"}}) {
    SCOPED_TRACE(std::string(name) + "/" + backend);
    Problem p = Load(name);
    llm::ChatRequest full = Build(Context(p, backend, PromptProfile::kFull));
    llm::ChatRequest compact = Build(Context(p, backend, PromptProfile::kCompact));
    std::string summary = BackendPromptSection(backend, "abi-summary").value();
    std::string example = BackendPromptSection(backend, "example").value();
    EXPECT_TRUE(Contains(UserText(compact), summary));
    EXPECT_TRUE(Contains(UserText(compact), example));
    EXPECT_FALSE(Contains(UserText(full), summary));
    EXPECT_TRUE(Contains(UserText(full), "candidate ABI"));  // the document's title
    EXPECT_FALSE(Contains(UserText(compact), "candidate ABI"));
    EXPECT_LT(MeasurePrompt(compact).chars, MeasurePrompt(full).chars);
    // The problem file keeps what a kernel needs and drops what only kforge reads.
    EXPECT_TRUE(Contains(UserText(compact), "[sizes]"));
    EXPECT_TRUE(Contains(UserText(compact), "[[inputs]]"));
    EXPECT_TRUE(Contains(UserText(compact), "[[outputs]]"));
    for (const char* gone : {"[seeds]", "[candidates]", "[reference]", "description = \"\"\""}) {
      EXPECT_TRUE(Contains(UserText(full), gone)) << gone;
      EXPECT_FALSE(Contains(UserText(compact), gone)) << gone;
    }
    EXPECT_TRUE(Contains(UserText(compact), p.description)) << "once, in the problem's own section";
  }
}

TEST(PromptFitTest, GivenNoContextWindowThePromptIsSentAsBuilt) {
  Problem p = Load("gelu");
  GenerationContext c = Context(p, "cpp", PromptProfile::kFull);
  c.memory = ThreeMemoryLines();
  Result<FittedRequest> f = FitGenerationRequest(c, {}, PromptLimits{});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->shrunk, "");
  EXPECT_EQ(UserText(f->request), UserText(Build(c)));
  EXPECT_TRUE(CheckFits(*f, PromptLimits{}, "test").ok());
}

TEST(PromptFitTest, GivenTheLimitsProfileItIsUsed) {
  Problem p = Load("gelu");
  PromptLimits limits;
  limits.profile = PromptProfile::kCompact;
  Result<FittedRequest> f =
      FitGenerationRequest(Context(p, "cpp", PromptProfile::kFull), {}, limits);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(Contains(UserText(f->request), BackendPromptSection("cpp", "abi-summary").value()));
  EXPECT_EQ(f->shrunk, "") << "the model's own profile is no shrinking";
}

// The window leaves room for the answer: the request's cap, else the model's.
TEST(PromptFitTest, GivenAPromptOneMemoryLineTooLongItDropsTheOldestLineOnly) {
  Problem p = Load("gelu");
  GenerationContext c = Context(p, "cpp", PromptProfile::kFull);
  c.memory = ThreeMemoryLines();
  GenerationContext two = c;
  two.memory = c.memory.substr(c.memory.find('\n') + 1);
  llm::ChatOptions options;
  options.max_output_tokens = 1000;
  PromptLimits limits;
  limits.answer_tokens = 4096;  // not used: the request has its own cap
  limits.context_window = MeasurePrompt(Build(two)).estimated_tokens + 1000;
  Result<FittedRequest> f = FitGenerationRequest(c, options, limits);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->shrunk, "dropped 1 oldest memory line");
  EXPECT_FALSE(Contains(UserText(f->request), "- attempt 1 "));
  EXPECT_TRUE(Contains(UserText(f->request), "- attempt 2 "));
  EXPECT_TRUE(Contains(UserText(f->request), "- attempt 3 "));
  EXPECT_EQ(f->request.options.max_output_tokens, 1000);
  EXPECT_TRUE(CheckFits(*f, limits, "test").ok());
}

TEST(PromptFitTest, GivenAFullPromptTooLongWithoutMemoryItSwitchesToCompact) {
  Problem p = Load("softmax");
  GenerationContext c = Context(p, "opencl", PromptProfile::kFull);
  c.memory = ThreeMemoryLines();
  GenerationContext compact = Context(p, "opencl", PromptProfile::kCompact);
  PromptLimits limits;
  limits.answer_tokens = 512;
  limits.context_window = MeasurePrompt(Build(compact)).estimated_tokens + 512;
  Result<FittedRequest> f = FitGenerationRequest(c, {}, limits);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->shrunk, "dropped 3 oldest memory lines; compact profile");
  EXPECT_TRUE(
      Contains(UserText(f->request), BackendPromptSection("opencl", "abi-summary").value()));
  EXPECT_TRUE(CheckFits(*f, limits, "test").ok());
}

TEST(PromptFitTest, GivenAPromptThatCannotFitItIsRefusedAsContextTooLongSayingWhatToDo) {
  Problem p = Load("gelu");
  PromptLimits limits;
  limits.context_window = 1024;
  limits.answer_tokens = 768;
  Result<FittedRequest> f =
      FitGenerationRequest(Context(p, "cpp", PromptProfile::kFull), {}, limits);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->shrunk, "compact profile");
  Status s = CheckFits(*f, limits, "local:qwen2.5-coder-1.5b");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(llm::LlmErrorKindOf(s), llm::LlmErrorKind::kContextTooLong) << s.message();
  for (const char* part :
       {"local:qwen2.5-coder-1.5b", "not sent", "768 tokens are kept for the answer",
        "context window of 1024 tokens", "already shrunk: compact profile", "context_window",
        "KFORGE_LLM_CTX", "--generator-max-output-tokens"})
    EXPECT_TRUE(Contains(s.message(), part)) << part << " in " << s.message();
}

TEST(PromptFitTest, GivenAFollowUpThatDoesNotFitTheEarlierAnswerIsLeftOut) {
  FittedRequest first;
  first.request.system = "system";
  first.request.messages.push_back(llm::Message::User(std::string(3000, 'p')));
  PromptLimits roomy;
  roomy.context_window = 100000;
  FittedRequest next = FitFollowUp(first, std::string(3000, 'a'), "send it again", roomy);
  ASSERT_EQ(next.request.messages.size(), 3u);
  EXPECT_EQ(next.shrunk, "");
  PromptLimits tight;
  tight.context_window = MeasurePrompt(first.request).estimated_tokens + 100;
  next = FitFollowUp(first, std::string(3000, 'a'), "send it again", tight);
  ASSERT_EQ(next.request.messages.size(), 1u);
  EXPECT_TRUE(Contains(UserText(next.request), std::string(3000, 'p') + "\n\nsend it again"));
  EXPECT_EQ(next.shrunk, "re-asked without the earlier answer");
  EXPECT_TRUE(FitsWindow(next.request, tight));
}

TEST(PromptFitTest, GivenAnAnalystPromptTooLongItsProfileIsPrintedCompactlyThenLeaner) {
  AnalystInput in{"gelu", "cpp", "int kf_run();", nlohmann::json::object()};
  in.profile["timing"]["median_ms"] = 1.5;
  in.profile["baselines"]["reference"]["median_ms"] = 9.0;
  in.profile["counters"] = std::string(2000, 'c');
  Result<FittedRequest> roomy = FitAnalystRequest(in, {}, PromptLimits{});
  ASSERT_TRUE(roomy.ok()) << roomy.status().ToString();
  EXPECT_EQ(roomy->shrunk, "");
  EXPECT_TRUE(Contains(UserText(roomy->request), "\n \"timing\""));
  PromptLimits tight;
  tight.context_window = MeasurePrompt(roomy->request).estimated_tokens - 1;
  Result<FittedRequest> f = FitAnalystRequest(in, {}, tight);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->shrunk, "profile without indentation");
  tight.context_window = 600;
  f = FitAnalystRequest(in, {}, tight);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->shrunk, "profile without indentation; profile without baselines and counters");
  EXPECT_FALSE(Contains(UserText(f->request), "ccccc"));
  EXPECT_TRUE(Contains(UserText(f->request), "\"median_ms\":1.5"));
}

TEST(PromptLimitsTest, GivenTheLocalPresetItsLimitsAreCompactIn16kWithTheDefaultAnswerRoom) {
  PromptLimits local = LimitsFromSettings(llm::ParseModelSpec("local").value());
  EXPECT_EQ(local.profile, PromptProfile::kCompact);
  EXPECT_EQ(local.context_window, 16384);
  EXPECT_EQ(local.answer_tokens, 4096);
  llm::ProviderSettings capped = llm::ParseModelSpec("openai:gpt-5").value();
  capped.max_output_tokens = 2000;
  EXPECT_EQ(LimitsFromSettings(capped).answer_tokens, 2000);
  EXPECT_EQ(LimitsFromSettings(capped).context_window, 0);
  PromptLimits back = PromptLimits::FromJson(local.ToJson());
  EXPECT_EQ(back.profile, local.profile);
  EXPECT_EQ(back.context_window, local.context_window);
  EXPECT_EQ(back.answer_tokens, local.answer_tokens);
  EXPECT_EQ(PromptLimits::FromJson(nlohmann::json::object()).profile, PromptProfile::kFull);
}

}  // namespace
}  // namespace kforge
