// The requests kforge builds, checked against the documented request fixtures in testdata/.
// Fields a fixture has that kforge never sends (n, stream, topP, safetySettings, tools,
// output_config, ...) are removed from the fixture before comparing, each named here. Gemini
// fixtures in snake_case or with single-object "parts" are normalised to the camelCase/array
// form kforge sends (the API accepts both; see SOURCES.md).
#include <gtest/gtest.h>

#include "llm/json_util.h"
#include "llm/test_util.h"
#include "llm/wire.h"

namespace kforge::llm {
namespace {

using testing::Base64Decode;
using testing::ReadFixture;
using testing::TestSettings;

// The 1x1 PNG that the RECONSTRUCTED fixtures carry.
const char kPngBase64[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

Json Fixture(const std::string& name) {
  std::string error;
  std::optional<Json> json = ParseJson(ReadFixture(name), &error);
  EXPECT_TRUE(json) << name << ": " << error;
  return json ? *json : Json();
}

Json Erase(Json json, std::initializer_list<const char*> keys) {
  for (const char* key : keys) json.erase(key);
  return json;
}

struct Built {
  HttpRequest http;
  Json body;
};

Built Build(const ChatRequest& request, const ProviderSettings& settings, const Secret& key) {
  Result<HttpRequest> http = NewWire(settings.wire)->BuildRequest(request, settings, key);
  EXPECT_TRUE(http.ok()) << http.status().ToString();
  if (!http.ok()) return {};
  std::string error;
  std::optional<Json> body = ParseJson(http->body, &error);
  EXPECT_TRUE(body) << error;
  return {*http, body ? *body : Json()};
}

ChatRequest UserText(const std::string& model, const std::string& text,
                     const std::string& system = "") {
  ChatRequest request;
  request.system = system;
  request.messages.push_back(Message::User(text));
  request.options.model = model;
  return request;
}

ContentPart Png() {
  Result<ContentPart> part = MakeImagePart(Base64Decode(kPngBase64));
  EXPECT_TRUE(part.ok());
  return part.ok() ? *part : ContentPart();
}

std::string Header(const HttpRequest& http, const std::string& name) {
  for (const HttpHeader& header : http.headers) {
    if (header.name == name) return header.value;
  }
  return "(absent)";
}

// ---- OpenAI ---------------------------------------------------------------------------------

class OpenAiRequestTest : public ::testing::Test {
 protected:
  void SetUp() override { KF_SKIP_WITHOUT_WIRE_FIXTURES(); }
  Secret key_ = testing::TestKey();
};

TEST_F(OpenAiRequestTest, GivenASystemPromptItMatchesTheSpecDefaultExample) {
  ChatRequest request = UserText("VAR_chat_model_id", "Hello!", "You are a helpful assistant.");
  Built built = Build(request, TestSettings("vllm", "x"), key_);
  EXPECT_EQ(built.body, Fixture("openai/request_system_user.json"));
  EXPECT_EQ(built.http.url, "http://localhost:8000/v1/chat/completions");
  EXPECT_EQ(Header(built.http, "Authorization"), std::string("Bearer ") + testing::kTestKey);
  EXPECT_EQ(Header(built.http, "Content-Type"), "application/json");
}

TEST_F(OpenAiRequestTest, GivenTheDeveloperRoleItMatchesTheCurrentSpecExample) {
  ProviderSettings settings = TestSettings("openai", "gpt-5");
  settings.system_role = "developer";
  ChatRequest request = UserText("VAR_chat_model_id", "Hello!", "You are a helpful assistant.");
  EXPECT_EQ(Build(request, settings, key_).body,
            Fixture("openai/request_developer_user_current_spec.json"));
}

TEST_F(OpenAiRequestTest, GivenAnImageItMatchesTheCapturedDataUrlRequest) {
  ChatRequest request;
  request.messages.push_back(
      Message{Role::kUser, {ContentPart::Text("What fruit is in the image?"), Png()}});
  request.options.model = "gpt-4o";
  // Not sent by kforge: "n" (1 is the default) and "stream" (false is the default).
  EXPECT_EQ(Build(request, TestSettings("openai", "gpt-4o"), key_).body,
            Erase(Fixture("openai/request_image_data_url.json"), {"n", "stream"}));
}

TEST_F(OpenAiRequestTest, GivenAnImageItHasTheOfficialImageInputShape) {
  // The official example points at an http URL; kforge always sends the bytes as a data URL in
  // the same image_url field. max_tokens is the field compatible servers read.
  ChatRequest request;
  request.messages.push_back(
      Message{Role::kUser, {ContentPart::Text("What is in this image?"), Png()}});
  request.options.model = "gpt-5.4";
  request.options.max_output_tokens = 300;
  Json built = Build(request, TestSettings("openai-compat", "m@http://h/v1"), key_).body;
  Json expected = Fixture("openai/request_image_url_official.json");
  expected["messages"][0]["content"][1]["image_url"]["url"] =
      std::string("data:image/png;base64,") + kPngBase64;
  EXPECT_EQ(built, expected);
}

TEST_F(OpenAiRequestTest, GivenMaxOutputTokensOpenAiGetsMaxCompletionTokens) {
  ChatRequest request = UserText("o3-mini", "hello");
  request.options.max_output_tokens = 100;
  EXPECT_EQ(Build(request, TestSettings("openai", "o3-mini"), key_).body,
            Erase(Fixture("openai/request_reasoning_o3mini_captured.json"), {"stream"}));
}

TEST_F(OpenAiRequestTest, GivenAllOptionsTheyUseTheDocumentedFieldNames) {
  ChatRequest request = UserText("gpt-5", "hi");
  request.options.temperature = 0.5;
  request.options.stop = {"END"};
  request.options.reasoning_effort = ReasoningEffort::kMinimal;
  Json body = Build(request, TestSettings("openai", "gpt-5"), key_).body;
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["stop"], Json::array({"END"}));
  EXPECT_EQ(body["reasoning_effort"], "minimal");
}

// llama.cpp's server, captured (testdata/llamacpp): what the loop sends with --llm local and
// per-role sampling (temperature 0, a seed, an output cap) is byte-for-byte those requests.
ChatRequest LlamaCppRequest(int max_output_tokens) {
  ChatRequest request = UserText(std::string(kLocalModelName),
                                 "Write a C++ function that returns the sum of an int array. "
                                 "Answer with one fenced code block only.",
                                 "You write C++.");
  request.options.temperature = 0;
  request.options.seed = 7;
  request.options.max_output_tokens = max_output_tokens;
  return request;
}

TEST_F(OpenAiRequestTest, GivenSamplingOptionsTheLocalModelGetsTheCapturedLlamaCppRequest) {
  Built built = Build(LlamaCppRequest(120), TestSettings("local", "qwen2.5-coder-1.5b"), key_);
  EXPECT_EQ(built.body, Fixture("llamacpp/chat_request.json"));
  EXPECT_EQ(built.http.url, "http://127.0.0.1:8089/v1/chat/completions");
  EXPECT_EQ(Build(LlamaCppRequest(8), TestSettings("local", "qwen2.5-coder-1.5b"), key_).body,
            Fixture("llamacpp/chat_length_request.json"));
  EXPECT_EQ(built.body,
            Erase(Fixture("llamacpp/chat_stream_request.json"), {"stream", "stream_options"}));
}

TEST_F(OpenAiRequestTest, GivenStreamingTheLocalModelGetsTheCapturedStreamedRequest) {
  ProviderSettings settings = TestSettings("local", "qwen2.5-coder-1.5b");
  settings.stream = true;
  EXPECT_EQ(Build(LlamaCppRequest(120), settings, key_).body,
            Fixture("llamacpp/chat_stream_request.json"));
}

TEST(StreamRequestTest, GivenStreamingAnthropicAsksForEventsAndGeminiUsesTheStreamMethod) {
  Secret key = testing::TestKey();
  ChatRequest request = UserText("claude-sonnet-4-5", "hi");
  ProviderSettings anthropic = TestSettings("anthropic", "claude-sonnet-4-5");
  anthropic.stream = true;
  Result<HttpRequest> a = NewWire(anthropic.wire)->BuildRequest(request, anthropic, key);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(Json::parse(a->body)["stream"], true);
  ProviderSettings gemini = TestSettings("gemini", "gemini-2.5-pro");
  gemini.stream = true;
  request.options.model = "gemini-2.5-pro";
  Result<HttpRequest> g = NewWire(gemini.wire)->BuildRequest(request, gemini, key);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->url, "https://generativelanguage.googleapis.com/v1beta/models/"
                    "gemini-2.5-pro:streamGenerateContent?alt=sse");
  EXPECT_FALSE(Json::parse(g->body).contains("stream"));
}

TEST_F(OpenAiRequestTest, GivenTheOverflowingPromptTheRequestIsTheCapturedOne) {
  Json captured = Fixture("llamacpp/context_overflow_request.json");
  ChatRequest request =
      UserText(std::string(kLocalModelName), captured["messages"][0]["content"].get<std::string>());
  request.options.max_output_tokens = captured["max_tokens"].get<int>();
  EXPECT_EQ(Build(request, TestSettings("local", "qwen2.5-coder-1.5b"), key_).body, captured);
}

TEST_F(OpenAiRequestTest, GivenNoSeedNoneIsSent) {
  Json body = Build(UserText("m", "hi"), TestSettings("local", "m"), key_).body;
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_FALSE(body.contains("max_tokens"));
}

TEST_F(OpenAiRequestTest, GivenNoKeyNoAuthorizationHeaderIsSent) {
  Built built = Build(UserText("llama3.2", "hi"), TestSettings("ollama", "llama3.2"), Secret());
  EXPECT_EQ(Header(built.http, "Authorization"), "(absent)");
  EXPECT_EQ(built.http.url, "http://localhost:11434/v1/chat/completions");
}

// ---- Anthropic ------------------------------------------------------------------------------

// The captures send single text blocks as arrays; kforge sends a string (both are documented).
Json TextBlocksAsStrings(Json body) {
  for (Json& message : body["messages"]) {
    Json& content = message["content"];
    if (content.is_array() && content.size() == 1 && content[0]["type"] == "text") {
      content = content[0]["text"];
    }
  }
  return body;
}

class AnthropicRequestTest : public OpenAiRequestTest {};

TEST_F(AnthropicRequestTest, GivenAPlainQuestionItMatchesTheDocsExample) {
  ChatRequest request = UserText("claude-opus-4-8", "What is the capital of France?");
  request.options.max_output_tokens = 16000;
  Built built = Build(request, TestSettings("anthropic", "x"), key_);
  EXPECT_EQ(built.body, Fixture("anthropic/request_basic_skill_docs.json"));
  EXPECT_EQ(built.http.url, "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(Header(built.http, "x-api-key"), testing::kTestKey);
  EXPECT_EQ(Header(built.http, "anthropic-version"), "2023-06-01");
}

TEST_F(AnthropicRequestTest, GivenAnImageItMatchesTheBase64BlockShape) {
  ChatRequest request;
  request.system = "You are a helpful assistant.";
  request.messages.push_back(
      Message{Role::kUser, {Png(), ContentPart::Text("What's in this image?")}});
  request.options.model = "claude-opus-4-8";
  request.options.max_output_tokens = 1024;
  EXPECT_EQ(Build(request, TestSettings("anthropic", "x"), key_).body,
            Fixture("anthropic/request_image_base64.RECONSTRUCTED.json"));
}

TEST_F(AnthropicRequestTest, GivenASystemPromptItMatchesTheCapturedRequest) {
  ChatRequest request = UserText("claude-3-opus-latest", "What is the capital of France?",
                                 "You are a helpful assistant.\n\n");
  request.options.max_output_tokens = 4096;
  EXPECT_EQ(
      Build(request, TestSettings("anthropic", "x"), key_).body,
      TextBlocksAsStrings(Erase(Fixture("anthropic/request_system_captured.json"), {"stream"})));
}

TEST_F(AnthropicRequestTest, GivenMinimalReasoningItMatchesTheCapturedThinkingRequests) {
  ChatRequest request = UserText("claude-sonnet-4-5", "How do I cross the street?");
  request.options.max_output_tokens = 4096;
  request.options.reasoning_effort = ReasoningEffort::kMinimal;
  EXPECT_EQ(
      Build(request, TestSettings("anthropic", "x"), key_).body,
      TextBlocksAsStrings(Erase(Fixture("anthropic/request_thinking_captured.json"), {"stream"})));
  // The streaming capture differs only in the model and "stream": true (kforge does not stream).
  request.options.model = "claude-sonnet-4-0";
  EXPECT_EQ(Build(request, TestSettings("anthropic", "x"), key_).body,
            TextBlocksAsStrings(
                Erase(Fixture("anthropic/request_thinking_stream_captured.json"), {"stream"})));
}

TEST_F(AnthropicRequestTest, GivenTheSdkSnapshotTheBodyAndHeadersMatch) {
  ChatRequest request =
      UserText("claude-sonnet-4-5", "Extract: I want to order 2 Green Tea at $5.50 each");
  request.options.max_output_tokens = 1024;
  Built built = Build(request, TestSettings("anthropic", "x"), key_);
  // Not sent by kforge: "output_config" (structured output).
  EXPECT_EQ(built.body,
            Erase(Fixture("anthropic/request_for_full_usage_captured.json"), {"output_config"}));
  HttpResponse sdk_headers = testing::ParseHeadersFile(
      ReadFixture("anthropic/request_for_full_usage_captured.headers.txt"));
  EXPECT_EQ(Header(built.http, "anthropic-version"), *sdk_headers.FindHeader("anthropic-version"));
  EXPECT_EQ(Header(built.http, "Content-Type"), *sdk_headers.FindHeader("content-type"));
}

TEST_F(AnthropicRequestTest, GivenASeedItIsNotSentBecauseTheApiHasNone) {
  ChatRequest request = UserText("claude-opus-4-6", "hi");
  request.options.seed = 7;
  request.options.temperature = 0;
  request.options.max_output_tokens = 300;
  Json body = Build(request, TestSettings("anthropic", "x"), key_).body;
  EXPECT_FALSE(body.contains("seed"));
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["max_tokens"], 300);
}

TEST_F(AnthropicRequestTest, GivenThinkingWithTemperatureItRefuses) {
  ChatRequest request = UserText("claude-sonnet-4-5", "hi");
  request.options.reasoning_effort = ReasoningEffort::kHigh;
  request.options.temperature = 0.3;
  Result<HttpRequest> http =
      NewAnthropicWire()->BuildRequest(request, TestSettings("anthropic", "x"), key_);
  ASSERT_FALSE(http.ok());
  EXPECT_EQ(LlmErrorKindOf(http.status()), LlmErrorKind::kBadRequest);
  EXPECT_NE(http.status().message().find("cannot be combined with temperature"), std::string::npos);
}

TEST_F(AnthropicRequestTest, GivenThinkingTheBudgetFitsUnderMaxTokens) {
  ChatRequest request = UserText("claude-sonnet-4-5", "hi");
  request.options.reasoning_effort = ReasoningEffort::kHigh;
  Json unset = Build(request, TestSettings("anthropic", "x"), key_).body;
  EXPECT_EQ(unset["thinking"]["budget_tokens"], 24576);
  EXPECT_EQ(unset["max_tokens"], 24576 + 4096);
  request.options.max_output_tokens = 8000;
  Json capped = Build(request, TestSettings("anthropic", "x"), key_).body;
  EXPECT_EQ(capped["thinking"]["budget_tokens"], 4000);
  request.options.max_output_tokens = 1000;
  EXPECT_FALSE(
      NewAnthropicWire()->BuildRequest(request, TestSettings("anthropic", "x"), key_).ok());
}

// ---- Gemini ---------------------------------------------------------------------------------

std::string CamelCase(const std::string& key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '_' && i + 1 < key.size()) {
      out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(key[++i]))));
    } else {
      out.push_back(key[i]);
    }
  }
  return out;
}

// snake_case keys -> camelCase; a single object where the proto has a list -> a list.
Json NormaliseGemini(const Json& json) {
  if (json.is_array()) {
    Json out = Json::array();
    for (const Json& item : json) out.push_back(NormaliseGemini(item));
    return out;
  }
  if (!json.is_object()) return json;
  Json out = Json::object();
  for (const auto& [key, value] : json.items()) {
    std::string name = CamelCase(key);
    Json normalised = NormaliseGemini(value);
    if ((name == "parts" || name == "contents") && normalised.is_object()) {
      normalised = Json::array({normalised});
    }
    out[name] = normalised;
  }
  return out;
}

// What kforge leaves implicit: the default "user" role, an empty generationConfig, and a role
// on systemInstruction (the captures send "user"; the API ignores it).
Json WithKforgeDefaults(Json json) {
  for (Json& content : json["contents"]) {
    if (!content.contains("role")) content["role"] = "user";
  }
  if (json.contains("systemInstruction")) json["systemInstruction"].erase("role");
  if (json.contains("generationConfig") && json["generationConfig"].empty()) {
    json.erase("generationConfig");
  }
  return json;
}

Json GeminiFixture(const std::string& name) {
  return WithKforgeDefaults(NormaliseGemini(Fixture(name)));
}

class GeminiRequestTest : public OpenAiRequestTest {};

TEST_F(GeminiRequestTest, GivenEveryFieldItMatchesTheReconstructedRequest) {
  ChatRequest request;
  request.system = "You are a helpful assistant.";
  request.messages.push_back(
      Message{Role::kUser, {ContentPart::Text("What is in this image?"), Png()}});
  request.options.model = "gemini-2.5-flash";
  request.options.max_output_tokens = 1024;
  request.options.temperature = 0.7;
  request.options.reasoning_effort = ReasoningEffort::kMinimal;  // thinkingBudget 512.
  Built built = Build(request, TestSettings("gemini", "x"), key_);
  Json expected = GeminiFixture("gemini/request_all_fields.RECONSTRUCTED.json");
  // Not sent by kforge: includeThoughts (thought summaries are not requested).
  expected["generationConfig"]["thinkingConfig"].erase("includeThoughts");
  EXPECT_EQ(built.body, expected);
  EXPECT_EQ(
      built.http.url,
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent");
  EXPECT_EQ(Header(built.http, "x-goog-api-key"), testing::kTestKey);
  EXPECT_EQ(built.http.url.find(testing::kTestKey), std::string::npos);
}

TEST_F(GeminiRequestTest, GivenGenerationOptionsTheyMatchTheOfficialExample) {
  ChatRequest request = UserText("gemini-2.0-flash", "Explain how AI works");
  request.options.stop = {"Title"};
  request.options.temperature = 1.0;
  request.options.max_output_tokens = 800;
  Json expected = GeminiFixture("gemini/request_generation_config_official.json");
  // Not sent by kforge: topP and topK.
  expected["generationConfig"].erase("topP");
  expected["generationConfig"].erase("topK");
  EXPECT_EQ(Build(request, TestSettings("gemini", "x"), key_).body, expected);
}

TEST_F(GeminiRequestTest, GivenASeedItIsInTheGenerationConfig) {
  ChatRequest request = UserText("gemini-2.5-flash", "hi");
  request.options.seed = 7;
  request.options.temperature = 0;
  Json config = Build(request, TestSettings("gemini", "x"), key_).body["generationConfig"];
  EXPECT_EQ(config["seed"], 7);
  EXPECT_EQ(config["temperature"], 0);
}

TEST_F(GeminiRequestTest, GivenASystemInstructionItMatchesTheSnakeCaseExample) {
  ChatRequest request = UserText("m", "Hello there", "You are a cat. Your name is Neko.");
  EXPECT_EQ(Build(request, TestSettings("gemini", "x"), key_).body,
            GeminiFixture("gemini/request_system_instruction_official.json"));
}

TEST_F(GeminiRequestTest, GivenAnInlineImageItMatchesBothCasings) {
  ChatRequest official;
  official.messages.push_back(
      Message{Role::kUser,
              {ContentPart::Text("Tell me about this instrument"),
               ContentPart::Image("image/jpeg", Base64Decode(kPngBase64))}});
  official.options.model = "m";
  EXPECT_EQ(Build(official, TestSettings("gemini", "x"), key_).body,
            GeminiFixture("gemini/request_inline_image_official.RECONSTRUCTED_DATA.json"));

  ChatRequest captured;
  captured.system = "You are a helpful chatbot.";
  captured.messages.push_back(
      Message{Role::kUser, {ContentPart::Text("What fruit is in the image?"), Png()}});
  captured.options.model = "m";
  EXPECT_EQ(Build(captured, TestSettings("gemini", "x"), key_).body,
            GeminiFixture("gemini/request_inline_image_camelcase_captured.DATA_REPLACED.json"));
}

TEST_F(GeminiRequestTest, GivenNoReasoningItSendsAZeroThinkingBudgetLikeTheCapture) {
  ChatRequest request =
      UserText("m", "What is the capital of France?", "You are a helpful chatbot.");
  request.options.max_output_tokens = 5;
  request.options.reasoning_effort = ReasoningEffort::kNone;
  Json expected = GeminiFixture("gemini/request_sysinst_maxtokens_thinking_captured.json");
  // Not sent by kforge: responseModalities (TEXT is the default).
  expected["generationConfig"].erase("responseModalities");
  EXPECT_EQ(Build(request, TestSettings("gemini", "x"), key_).body, expected);
}

TEST_F(GeminiRequestTest, GivenTheOtherCapturesTheMessagesMatch) {
  // Not sent by kforge: safetySettings, tools, responseModalities, include_thoughts.
  ChatRequest safety = UserText("m", "Tell me a joke about a Brazilians.", "You hate the world!");
  EXPECT_EQ(
      Build(safety, TestSettings("gemini", "x"), key_).body,
      Erase(GeminiFixture("gemini/request_safety_settings_captured.json"), {"safetySettings"}));
  ChatRequest thoughts =
      UserText("m", "How do I cross the street?", "You are a helpful assistant.");
  EXPECT_EQ(Build(thoughts, TestSettings("gemini", "x"), key_).body,
            Erase(GeminiFixture("gemini/request_include_thoughts_captured.json"),
                  {"tools", "generationConfig"}));
}

TEST_F(GeminiRequestTest, GivenAModelsPrefixItIsNotDoubled) {
  ChatRequest request = UserText("models/gemini-2.5-pro", "hi");
  EXPECT_EQ(
      Build(request, TestSettings("gemini", "x"), key_).http.url,
      "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent");
}

TEST(Base64Test, EncodesAndDecodesTheFixturePng) {
  EXPECT_EQ(Base64Encode(Base64Decode(kPngBase64)), kPngBase64);
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
}

TEST(MakeImagePartTest, RecognisesPngAndJpegAndRefusesOthers) {
  EXPECT_EQ(MakeImagePart(Base64Decode(kPngBase64))->mime_type, "image/png");
  EXPECT_EQ(MakeImagePart(std::string("\xFF\xD8\xFF\xE0rest", 8))->mime_type, "image/jpeg");
  Result<ContentPart> gif = MakeImagePart("GIF89a....");
  ASSERT_FALSE(gif.ok());
  EXPECT_NE(gif.status().message().find("neither PNG nor JPEG"), std::string::npos);
  EXPECT_FALSE(LoadImagePart("/nonexistent.png").ok());
}

}  // namespace
}  // namespace kforge::llm
