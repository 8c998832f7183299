#include "kforge/llm/config.h"
#include "kforge/source_dir.h"

#include <gtest/gtest.h>

#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;

ProviderSettings Parse(std::string_view spec) {
  Result<ProviderSettings> settings = ParseModelSpec(spec);
  EXPECT_TRUE(settings.ok()) << spec << ": " << settings.status().ToString();
  return settings.ok() ? *settings : ProviderSettings();
}

TEST(ParseModelSpecTest, GivenTheThreeCloudProvidersItUsesTheirDocumentedEndpoints) {
  ProviderSettings openai = Parse("openai:gpt-5");
  EXPECT_EQ(openai.wire, WireFormat::kOpenAi);
  EXPECT_EQ(openai.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(openai.api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(openai.max_tokens_field, "max_completion_tokens");
  EXPECT_TRUE(openai.key_required);
  ProviderSettings anthropic = Parse("anthropic:claude-opus-4-6");
  EXPECT_EQ(anthropic.wire, WireFormat::kAnthropic);
  EXPECT_EQ(anthropic.base_url, "https://api.anthropic.com/v1");
  EXPECT_EQ(anthropic.api_key_env, "ANTHROPIC_API_KEY");
  ProviderSettings gemini = Parse("gemini:gemini-2.5-pro");
  EXPECT_EQ(gemini.wire, WireFormat::kGemini);
  EXPECT_EQ(gemini.base_url, "https://generativelanguage.googleapis.com/v1beta");
  EXPECT_EQ(gemini.api_key_env, "GEMINI_API_KEY");
  EXPECT_EQ(gemini.model, "gemini-2.5-pro");
}

TEST(ParseModelSpecTest, GivenASelfHostedServerItTakesTheUrlAfterTheAt) {
  ProviderSettings vllm = Parse("openai-compat:Qwen/Qwen3-8B@http://gpu-box:8000/v1");
  EXPECT_EQ(vllm.wire, WireFormat::kOpenAi);
  EXPECT_EQ(vllm.model, "Qwen/Qwen3-8B");
  EXPECT_EQ(vllm.base_url, "http://gpu-box:8000/v1");
  EXPECT_FALSE(vllm.key_required);
  EXPECT_FALSE(vllm.vision_default);
  EXPECT_EQ(vllm.max_tokens_field, "max_tokens");
  EXPECT_EQ(vllm.Name(), "openai-compat:Qwen/Qwen3-8B@http://gpu-box:8000/v1");
}

TEST(ParseModelSpecTest, GivenOllamaTagsTheColonsStayInTheModelName) {
  ProviderSettings ollama = Parse("ollama:llama3.2:3b");
  EXPECT_EQ(ollama.model, "llama3.2:3b");
  EXPECT_EQ(ollama.base_url, "http://localhost:11434/v1");
  EXPECT_EQ(ollama.Name(), "ollama:llama3.2:3b");
  ProviderSettings moved = Parse("ollama:gpt-oss:20b@https://box.lan:11434/v1");
  EXPECT_EQ(moved.model, "gpt-oss:20b");
  EXPECT_EQ(moved.base_url, "https://box.lan:11434/v1");
}

TEST(ParseModelSpecTest, GivenAnAtThatIsNotAUrlItIsPartOfTheModel) {
  EXPECT_EQ(Parse("vllm:org/model@v2").model, "org/model@v2");
}

TEST(ParseModelSpecTest, GivenReplayTheRestIsATranscriptPath) {
  ProviderSettings replay = Parse("replay:runs/a@b.jsonl");
  EXPECT_EQ(replay.wire, WireFormat::kReplay);
  EXPECT_EQ(replay.base_url, "runs/a@b.jsonl");
  EXPECT_EQ(replay.Name(), "replay:runs/a@b.jsonl");
}

TEST(ParseModelSpecTest, GivenBadStringsItSaysWhatToWrite) {
  Result<ProviderSettings> unknown = ParseModelSpec("openia:gpt-5");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(LlmErrorKindOf(unknown.status()), LlmErrorKind::kConfig);
  EXPECT_NE(unknown.status().message().find("known providers: openai, anthropic, gemini"),
            std::string::npos);
  EXPECT_NE(ParseModelSpec("gpt-5").status().message().find("<provider>:<model>"),
            std::string::npos);
  EXPECT_FALSE(ParseModelSpec("openai:").ok());
  Result<ProviderSettings> no_url = ParseModelSpec("openai-compat:my-model");
  ASSERT_FALSE(no_url.ok());
  EXPECT_NE(no_url.status().message().find("@http://host:port/v1"), std::string::npos);
}

TEST(ProviderPresetNamesTest, ListsEveryPresetOnce) {
  std::vector<std::string> names = ProviderPresetNames();
  for (const char* name : {"openai", "anthropic", "gemini", "openai-compat", "vllm", "sglang",
                           "ollama", "llamacpp", "openrouter", "deepseek", "together", "local",
                           "replay"}) {
    EXPECT_EQ(std::count(names.begin(), names.end(), name), 1) << name;
  }
}

Result<LlmConfig> ParseText(const std::string& text) {
  return ParseLlmConfig(text, "test.toml", "/base");
}

TEST(LlmConfigTest, GivenTheDocumentedExampleEveryKeyIsRead) {
  Result<LlmConfig> config =
      LoadLlmConfig(std::filesystem::path(KFORGE_SOURCE_DIR) / "src/llm/llm.example.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->default_model, "anthropic:claude-opus-4-6");
  EXPECT_EQ(
      config->transcript,
      (std::filesystem::path(KFORGE_SOURCE_DIR) / "src/llm/runs/llm-transcript.jsonl").string());
  EXPECT_EQ(config->budget_usd, 25.0);
  EXPECT_EQ(config->retry.max_attempts, 4);
  EXPECT_EQ(config->retry.max_retry_after, milliseconds(120000));
  EXPECT_EQ(config->providers.at("openai").max_concurrency, 8);
  EXPECT_EQ(config->providers.at("anthropic").api_key_file, "~/.config/kforge/anthropic.key");

  Result<ProviderSettings> qwen = ResolveModel("local-qwen", *config);
  ASSERT_TRUE(qwen.ok()) << qwen.status().ToString();
  EXPECT_EQ(qwen->provider, "vllm");
  EXPECT_EQ(qwen->model, "Qwen/Qwen3-32B");
  EXPECT_EQ(qwen->base_url, "http://gpu-box:8000/v1");
  EXPECT_EQ(qwen->timeout, milliseconds(900000));
  EXPECT_EQ(qwen->temperature, 0.2);
  EXPECT_EQ(qwen->seed, 7);
  EXPECT_EQ(qwen->vision, false);
  EXPECT_EQ(qwen->context_window, 32768);
  EXPECT_EQ(qwen->prompt_profile, PromptProfile::kCompact);

  Result<ProviderSettings> thinker = ResolveModel("deep-thinker", *config);
  ASSERT_TRUE(thinker.ok());
  EXPECT_EQ(thinker->reasoning_effort, ReasoningEffort::kHigh);
  EXPECT_EQ(thinker->max_output_tokens, 32768);

  Result<ProviderSettings> fallback = ResolveModel("", *config);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->api_key_file, "~/.config/kforge/anthropic.key");
  EXPECT_EQ(fallback->default_max_output_tokens, 8192);
  EXPECT_EQ(ResolveModel("openai:gpt-5", *config)->system_role, "developer");

  EXPECT_EQ(config->roles.at("generator").max_output_tokens, 8192);
  EXPECT_FALSE(config->roles.at("generator").temperature);
  EXPECT_EQ(config->roles.at("analyst").temperature, 0.0);
  EXPECT_EQ(config->roles.at("analyst").max_output_tokens, 1024);
}

TEST(ParseModelSpecTest, GivenLocalAloneItIsTheModelScriptsLocalLlmServes) {
  ProviderSettings local = Parse("local");
  EXPECT_EQ(local.provider, "local");
  EXPECT_EQ(local.wire, WireFormat::kOpenAi);
  EXPECT_EQ(local.model, "qwen2.5-coder-1.5b");
  EXPECT_EQ(local.base_url, "http://127.0.0.1:8089/v1");
  EXPECT_FALSE(local.key_required);
  EXPECT_FALSE(local.vision_default);
  EXPECT_EQ(local.max_tokens_field, "max_tokens");
  EXPECT_EQ(local.Name(), "local:qwen2.5-coder-1.5b");
}

// Small models get small prompts: the local preset is compact inside scripts/local-llm's
// 16384-token context; every other preset is full with no window (nothing is checked).
TEST(ParseModelSpecTest, GivenTheLocalPresetItsPromptsAreCompactInsideA16kWindow) {
  ProviderSettings local = Parse("local");
  EXPECT_EQ(local.prompt_profile, PromptProfile::kCompact);
  EXPECT_EQ(local.context_window, 16384);
  for (const char* spec : {"openai:gpt-5", "vllm:m", "ollama:llama3.2:3b"}) {
    ProviderSettings other = Parse(spec);
    EXPECT_EQ(other.prompt_profile, PromptProfile::kFull) << spec;
    EXPECT_FALSE(other.context_window) << spec;
  }
}

TEST(LlmConfigTest, GivenAPromptProfileAndWindowPerModelOrProviderTheyAreApplied) {
  Result<LlmConfig> config = ParseText(
      "[providers.ollama]\nprompt_profile = \"compact\"\ncontext_window = 8192\n"
      "[models.big-local]\nprovider = \"local\"\nmodel = \"qwen2.5-coder-7b\"\nprompt_profile = \"full\"\n"
      "context_window = 32768\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Result<ProviderSettings> ollama = ResolveModel("ollama:qwen2.5-coder:7b", *config);
  ASSERT_TRUE(ollama.ok()) << ollama.status().ToString();
  EXPECT_EQ(ollama->prompt_profile, PromptProfile::kCompact);
  EXPECT_EQ(ollama->context_window, 8192);
  Result<ProviderSettings> big = ResolveModel("big-local", *config);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->prompt_profile, PromptProfile::kFull);
  EXPECT_EQ(big->context_window, 32768);
  EXPECT_EQ(ResolveModel("openai:gpt-5", *config)->prompt_profile, PromptProfile::kFull);
}

TEST(ParseModelSpecTest, GivenLocalWithAModelAndUrlTheyWin) {
  ProviderSettings moved = Parse("local:qwen2.5-coder-1.5b@http://127.0.0.1:9000/v1");
  EXPECT_EQ(moved.model, "qwen2.5-coder-1.5b");
  EXPECT_EQ(moved.base_url, "http://127.0.0.1:9000/v1");
  EXPECT_EQ(moved.Name(), "local:qwen2.5-coder-1.5b@http://127.0.0.1:9000/v1");
  EXPECT_EQ(Parse("local:other-alias").base_url, "http://127.0.0.1:8089/v1");
  // Only the bare word is special: "locally" is no model string.
  EXPECT_FALSE(ParseModelSpec("locally").ok());
  EXPECT_FALSE(ParseModelSpec("local:").ok());
}

TEST(LlmConfigTest, GivenANamedModelCalledLocalTheConfigWins) {
  Result<LlmConfig> config =
      ParseText("[models.local]\nprovider = \"ollama\"\nmodel = \"qwen2.5-coder:7b\"\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Result<ProviderSettings> local = ResolveModel("local", *config);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(local->provider, "ollama");
  EXPECT_EQ(local->model, "qwen2.5-coder:7b");
  // Without such an entry, "local" is the preset.
  EXPECT_EQ(ResolveModel("local", LlmConfig())->base_url, "http://127.0.0.1:8089/v1");
}

TEST(LlmConfigTest, GivenRolesTheirSamplingIsReadAndChecked) {
  Result<LlmConfig> config = ParseText(
      "[roles.generator]\ntemperature = 0\nmax_output_tokens = 600\nseed = 42\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->roles.at("generator").temperature, 0.0);
  EXPECT_EQ(config->roles.at("generator").max_output_tokens, 600);
  EXPECT_EQ(config->roles.at("generator").seed, 42);
  EXPECT_EQ(config->roles.count("analyst"), 0u);
}

TEST(LlmConfigTest, GivenAModelStringItsUrlWinsOverTheProviderDefault) {
  Result<LlmConfig> config = ParseText("[providers.vllm]\nbase_url = \"http://a:1/v1\"\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(ResolveModel("vllm:m", *config)->base_url, "http://a:1/v1");
  EXPECT_EQ(ResolveModel("vllm:m@http://b:2/v1", *config)->base_url, "http://b:2/v1");
}

TEST(LlmConfigTest, GivenRelativePathsTheyAreRelativeToTheConfigFile) {
  Result<LlmConfig> config = ParseText(
      "prices = \"p.toml\"\ncache_dir = \"c\"\n[providers.openai]\napi_key_file = "
      "\"k/openai.key\"\n");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->prices_file, "/base/p.toml");
  EXPECT_EQ(config->cache_dir, "/base/c");
  EXPECT_EQ(config->providers.at("openai").api_key_file, "/base/k/openai.key");
}

TEST(LlmConfigTest, GivenAKeyInTheFileItRefusesAndPointsToEnvOrKeyFile) {
  Result<LlmConfig> config = ParseText("[providers.openai]\napi_key = \"sk-123456789\"\n");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("providers.openai.api_key is not allowed"),
            std::string::npos);
  EXPECT_NE(config.status().message().find("api_key_env"), std::string::npos);
  EXPECT_EQ(config.status().message().find("sk-123456789"), std::string::npos);
}

TEST(LlmConfigTest, GivenMistakesItNamesTheKeyAndTheFile) {
  struct Case {
    std::string text, expected;
  };
  for (const Case& c : {
           Case{"defualt_model = \"x\"",
                "test.toml: [config] defualt_model is not a known setting"},
           Case{"[retry]\nmax_attempts = \"three\"", "retry.max_attempts has the wrong type"},
           Case{"[retry]\nmax_attempts = 0", "retry.max_attempts must be at least 1"},
           Case{"[providers.openia]\ntimeout_s = 3", "providers.openia: unknown provider"},
           Case{"[providers.openai]\ntimeout_s = -1",
                "providers.openai.timeout_s must be positive"},
           Case{"[models.x]\nmodel = \"m\"\nreasoning_effort = \"max\"",
                "unknown reasoning effort"},
           Case{"[models.x]\nmodle = \"m\"", "models.x.modle is not a known setting"},
           Case{"budget_usd = [", "TOML syntax error at line 1"},
           Case{"[roles.critic]\ntemperature = 0", "roles.critic: unknown role; known: generator"},
           Case{"[roles.analyst]\nmax_output_tokens = 0",
                "roles.analyst.max_output_tokens must be at least 1"},
           Case{"[roles.analyst]\ntemperature = -1", "roles.analyst.temperature must not be"},
           Case{"[roles.analyst]\ntop_p = 1", "roles.analyst.top_p is not a known setting"},
           Case{"[models.x]\nmodel = \"m\"\nseed = \"7\"", "models.x.seed has the wrong type"},
           Case{"[models.x]\nprompt_profile = \"tiny\"", "use \"full\" or \"compact\""},
           Case{"[providers.local]\ncontext_window = 100",
                "providers.local.context_window must be at least 256"},
       }) {
    Result<LlmConfig> config = ParseText(c.text);
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_NE(config.status().message().find(c.expected), std::string::npos)
        << config.status().message();
  }
}

TEST(LlmConfigTest, GivenANamedModelWithoutProviderResolvingSaysSo) {
  Result<LlmConfig> config = ParseText("[models.x]\nmodel = \"m\"\n");
  ASSERT_TRUE(config.ok());
  EXPECT_NE(ResolveModel("x", *config).status().message().find("needs provider"),
            std::string::npos);
  EXPECT_NE(ResolveModel("", *config).status().message().find("no model given"), std::string::npos);
}

TEST(LlmConfigTest, GivenAMissingFileItSaysSo) {
  Result<LlmConfig> config = LoadLlmConfig("/nonexistent/llm.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace kforge::llm
