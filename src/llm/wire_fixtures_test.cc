// Every response, error and stream fixture in testdata/, served through the real client code
// (HttpLlmClient over a fake transport, so headers, retry decisions and messages are the ones
// a user would see), with what kforge must make of it. AllFixturesAreChecked fails when a
// fixture is in no table here and in no test of wire_request_test.cc / retry_test.cc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "kforge/llm/config.h"
#include "llm/client.h"
#include "llm/test_util.h"
#include "llm/wire.h"

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;
using testing::FakeTransport;

constexpr int kNotRetried = -1;
constexpr int kBackoff = 1000;  // TestEnv's first backoff wait.

struct ReplyCase {
  const char* file;
  const char* provider;  // openai, anthropic, gemini, vllm, ollama.
  LlmErrorKind kind;     // kNone: a successful answer.
  const char* contains;  // Success: in the text. Error: in the message.
  FinishReason finish = FinishReason::kStop;
  Usage usage = {};
  int wait_ms = kNotRetried;    // Errors: the wait before the retry.
  const char* request_id = "";  // Checked when not empty.
};

const ReplyCase kReplyCases[] = {
    // OpenAI Chat Completions.
    {"openai/response_nonstreaming_spec.json",
     "openai",
     LlmErrorKind::kNone,
     "Hello! How can I assist you today?",
     FinishReason::kStop,
     {19, 0, 0, 10, 0},
     0,
     "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"},
    {"openai/response_image_input_spec.json",
     "openai",
     LlmErrorKind::kNone,
     "The image shows a wooden boardwalk",
     FinishReason::kStop,
     {1117, 0, 0, 46, 0}},
    {"openai/response_nonstreaming_captured_gpt4o.json",
     "openai",
     LlmErrorKind::kNone,
     "The fruit in the image is a kiwi.",
     FinishReason::kStop,
     {1119, 0, 0, 10, 0},
     0,
     "chatcmpl-BExZtIgl2l91Y1IYJW3DSJj1yRlpY"},
    {"openai/response_reasoning_o3mini_captured.json",
     "openai",
     LlmErrorKind::kNone,
     "Hello there! How can I help you today?",
     FinishReason::kStop,
     {7, 0, 0, 87, 64}},
    {"openai/errors/400_context_length_exceeded.json", "openai", LlmErrorKind::kContextTooLong,
     "HTTP 400 context_length_exceeded: This model's maximum context length is 4097 tokens"},
    {"openai/errors/401_invalid_api_key.json",
     "openai",
     LlmErrorKind::kAuth,
     "HTTP 401 invalid_api_key: Incorrect API key provided",
     FinishReason::kStop,
     {},
     kNotRetried,
     "a51821b9fd83d8e0e04542bedc174310"},
    {"openai/errors/404_model_not_found.json", "openai", LlmErrorKind::kModelNotFound,
     "The model `gpt-5.2-proo` does not exist"},
    {"openai/errors/429_insufficient_quota.json", "openai", LlmErrorKind::kQuotaExhausted,
     "insufficient_quota: You exceeded your current quota"},
    {"openai/errors/429_rate_limit_exceeded.COMPOSITE.json",
     "openai",
     LlmErrorKind::kRateLimited,
     "rate_limit_exceeded: Rate limit reached for gpt-4.1",
     FinishReason::kStop,
     {},
     494},
    {"openai/errors/500_server_error.json",
     "openai",
     LlmErrorKind::kServerError,
     "HTTP 500 server_error: The server had an error",
     FinishReason::kStop,
     {},
     kBackoff},
    {"openai/errors/503_model_overloaded.json",
     "openai",
     LlmErrorKind::kOverloaded,
     "That model is currently overloaded",
     FinishReason::kStop,
     {},
     kBackoff},

    // Anthropic Messages.
    {"anthropic/response_full_usage_captured.json",
     "anthropic",
     LlmErrorKind::kNone,
     "{\"product_name\": \"Green Tea\"",
     FinishReason::kStop,
     {249, 0, 0, 26, 0},
     0,
     "msg_01Egs18hRzhru3uGon3qesbA"},
    {"anthropic/response_max_tokens_captured_UNATTRIBUTED.json",
     "anthropic",
     LlmErrorKind::kNone,
     "Hello",
     FinishReason::kLength,
     {22, 0, 0, 1, 0}},
    {"anthropic/response_system_captured.json",
     "anthropic",
     LlmErrorKind::kNone,
     "The capital of France is Paris.",
     FinishReason::kStop,
     {20, 0, 0, 10, 0}},
    {"anthropic/response_thinking_captured.json",
     "anthropic",
     LlmErrorKind::kNone,
     "Here's how to cross the street safely",
     FinishReason::kStop,
     {43, 0, 0, 321, 0}},
    {"anthropic/errors/400_invalid_request_error_docs.json",
     "anthropic",
     LlmErrorKind::kBadRequest,
     "invalid_request_error: messages: roles must alternate",
     FinishReason::kStop,
     {},
     kNotRetried,
     "req_011CSHoEeqs5C35K2UUqR7Fy"},
    {"anthropic/errors/400_prompt_too_long_captured.json", "anthropic",
     LlmErrorKind::kContextTooLong, "prompt is too long: 203284 tokens > 200000 maximum"},
    {"anthropic/errors/401_authentication_error_captured.json",
     "anthropic",
     LlmErrorKind::kAuth,
     "HTTP 401 authentication_error: invalid x-api-key",
     FinishReason::kStop,
     {},
     kNotRetried,
     "req_011CXw8h8A796q3f74Ezmhav"},
    {"anthropic/errors/401_authentication_error_captured_pre_request_id.json", "anthropic",
     LlmErrorKind::kAuth, "invalid x-api-key"},
    {"anthropic/errors/404_not_found_error_captured.json", "anthropic",
     LlmErrorKind::kModelNotFound, "not_found_error: model: claude-sonet-4-5"},
    {"anthropic/errors/429_rate_limit_error_captured.json",
     "anthropic",
     LlmErrorKind::kRateLimited,
     "rate_limit_error: This request would exceed",
     FinishReason::kStop,
     {},
     16000},
    {"anthropic/errors/500_api_error_captured.json",
     "anthropic",
     LlmErrorKind::kServerError,
     "HTTP 500 api_error: Internal server error",
     FinishReason::kStop,
     {},
     kBackoff},
    {"anthropic/errors/529_overloaded_error_captured_2024.json",
     "anthropic",
     LlmErrorKind::kOverloaded,
     "HTTP 529 overloaded_error: Overloaded",
     FinishReason::kStop,
     {},
     kBackoff,
     "req_01RCc7MbLyQNtGKzBTv8VCep"},
    {"anthropic/errors/529_overloaded_error_captured_2026.json",
     "anthropic",
     LlmErrorKind::kOverloaded,
     "Overloaded",
     FinishReason::kStop,
     {},
     kBackoff,
     "req_011CZAYwiDg6Eqv7HiBNWoE5"},

    // Gemini generateContent.
    {"gemini/response_basic.json",
     "gemini",
     LlmErrorKind::kNone,
     "located in **Mountain View, California**",
     FinishReason::kStop,
     {7, 0, 0, 22, 0}},
    {"gemini/response_cached_content_vertex.json",
     "gemini",
     LlmErrorKind::kNone,
     "Red Riding Hood is looking for **directions**",
     FinishReason::kStop,
     {12013, 11243, 0, 88, 73}},
    {"gemini/response_image_input_captured.json",
     "gemini",
     LlmErrorKind::kNone,
     "The fruit in the image is a kiwi.",
     FinishReason::kStop,
     {3367, 0, 0, 9, 0},
     0,
     "4YfNaLXqOsKVmtkPqqehuAQ"},
    {"gemini/response_max_tokens_captured.json",
     "gemini",
     LlmErrorKind::kNone,
     "The capital of France is",
     FinishReason::kLength,
     {15, 0, 0, 5, 0},
     0,
     "R5MoavWNNp_8qtsP2fWD2A0"},
    {"gemini/response_thinking_signature_captured.json",
     "gemini",
     LlmErrorKind::kNone,
     "Crossing the street safely is a fundamental skill",
     FinishReason::kStop,
     {29, 0, 0, 1737, 1001}},
    {"gemini/response_thinking_thought_summary.json",
     "gemini",
     LlmErrorKind::kNone,
     "Mountain View",
     FinishReason::kStop,
     {14, 0, 0, 26, 24}},
    {"gemini/response_finish_safety.json", "gemini", LlmErrorKind::kContentFiltered,
     "finishReason SAFETY"},
    {"gemini/response_finish_safety_captured.json", "gemini", LlmErrorKind::kContentFiltered,
     "finishReason SAFETY (HARM_CATEGORY_HATE_SPEECH)"},
    {"gemini/response_prompt_blocked_safety.json", "gemini", LlmErrorKind::kContentFiltered,
     "the prompt was blocked (blockReason SAFETY)"},
    {"gemini/response_prompt_feedback_only_mock.json", "gemini", LlmErrorKind::kContentFiltered,
     "the prompt was blocked: Message"},
    {"gemini/errors/400_FAILED_PRECONDITION_mock.json", "gemini", LlmErrorKind::kBadRequest,
     "HTTP 400 FAILED_PRECONDITION"},
    {"gemini/errors/400_INVALID_ARGUMENT_api_key_invalid.json", "gemini", LlmErrorKind::kAuth,
     "INVALID_ARGUMENT API_KEY_INVALID: API key not valid"},
    {"gemini/errors/403_PERMISSION_DENIED_service_disabled.json", "gemini",
     LlmErrorKind::kPermissionDenied, "Generative Language API has not been used in project"},
    {"gemini/errors/404_NOT_FOUND_v1_mock.json", "gemini", LlmErrorKind::kModelNotFound,
     "models/gemini-5.0-flash is not found"},
    {"gemini/errors/404_NOT_FOUND_v1beta_captured.json", "gemini", LlmErrorKind::kModelNotFound,
     "models/gemini-3.6-flahs is not found for API version v1beta"},
    {"gemini/errors/429_RESOURCE_EXHAUSTED_captured.json",
     "gemini",
     LlmErrorKind::kRateLimited,
     "HTTP 429 RESOURCE_EXHAUSTED",
     FinishReason::kStop,
     {},
     26000},
    {"gemini/errors/429_RESOURCE_EXHAUSTED_vertex_style_mock.json",
     "gemini",
     LlmErrorKind::kRateLimited,
     "RATE_LIMIT_EXCEEDED: Quota exceeded",
     FinishReason::kStop,
     {},
     kBackoff},
    {"gemini/errors/500_INTERNAL_captured.json",
     "gemini",
     LlmErrorKind::kServerError,
     "An internal error has occurred",
     FinishReason::kStop,
     {},
     kBackoff},
    {"gemini/errors/503_UNAVAILABLE_captured.json",
     "gemini",
     LlmErrorKind::kOverloaded,
     "HTTP 503 UNAVAILABLE: The model is overloaded",
     FinishReason::kStop,
     {},
     kBackoff},

    // OpenAI-compatible servers.
    {"openai_compat/ollama/response_length_captured.json",
     "ollama",
     LlmErrorKind::kNone,
     "gemma4-3",
     FinishReason::kLength,
     {25, 0, 0, 5, 0},
     0,
     "chatcmpl-218"},
    {"openai_compat/ollama/response_nonstreaming_captured.json",
     "ollama",
     LlmErrorKind::kNone,
     "Hey there! How can I assist you today?",
     FinishReason::kStop,
     {34, 0, 0, 28, 0}},
    {"openai_compat/ollama/response_reasoning_toolcall_captured.json",
     "ollama",
     LlmErrorKind::kNone,
     "",
     FinishReason::kToolCalls,
     {167, 0, 0, 68, 0}},
    {"openai_compat/ollama/error_404_model_not_found.DERIVED_FROM_SOURCE.json", "ollama",
     LlmErrorKind::kModelNotFound, "not_found_error: model \"llama3.2\" not found, try pulling"},
    {"openai_compat/ollama/error_404_native_api_chat.json", "ollama", LlmErrorKind::kModelNotFound,
     "HTTP 404: model \"llama3.2\" not found, try pulling it first"},
    {"openai_compat/vllm/response_nonstreaming_captured_2024.json",
     "vllm",
     LlmErrorKind::kNone,
     "Random Number Generator Produces Smallest Possible Result",
     FinishReason::kStop,
     {146, 0, 0, 10, 0}},
    {"openai_compat/vllm/response_nonstreaming_docs_sample.json",
     "vllm",
     LlmErrorKind::kNone,
     "The text in the illustration reads \"TONGYI Qwen.\"",
     FinishReason::kStop,
     {74, 0, 0, 15, 0}},
    {"openai_compat/vllm/error_400_pre_v0.10.1.json", "vllm", LlmErrorKind::kContextTooLong,
     "HTTP 400 BadRequestError: This model's maximum context length is 32768 tokens"},
    {"openai_compat/vllm/error_400_v0.10.1_and_later.json", "vllm", LlmErrorKind::kContextTooLong,
     "HTTP 400 BadRequestError: This model's maximum context length is 32768 tokens"},
    {"openai_compat/vllm/stream_reasoning_delta_docs.VERBATIM_INVALID_JSON.txt", "vllm",
     LlmErrorKind::kBadResponse, "response body is not a JSON object (invalid JSON at byte"},

    // llama.cpp's llama-server (scripts/local-llm, --llm local), captured.
    {"llamacpp/chat_response.json",
     "local",
     LlmErrorKind::kNone,
     "int sumArray(const std::vector<int>& arr) {",
     FinishReason::kStop,
     {39, 0, 0, 53, 0},
     0,
     "chatcmpl-jvfIjoX9XatdjRzNqUyVJwfOXQwQz7AQ"},
    {"llamacpp/chat_length_response.json",
     "local",
     LlmErrorKind::kNone,
     "```cpp\n#include <iostream>\n#include",
     FinishReason::kLength,
     {39, 38, 0, 8, 0}},
    {"llamacpp/context_overflow_response.json", "local", LlmErrorKind::kContextTooLong,
     "HTTP 400 exceed_context_size_error: request (20030 tokens) exceeds the available context "
     "size (16384 tokens)"},
    {"llamacpp/bad_json_response.json", "local", LlmErrorKind::kBadRequest,
     "HTTP 400 invalid_request_error: [json.exception.parse_error.101] parse error"},
};

struct StreamCase {
  const char* file;
  const char* provider;
  LlmErrorKind kind;
  const char* contains;  // Success: in the text. Error: in the detail.
  FinishReason finish = FinishReason::kStop;
  Usage usage = {};
  const char* reasoning = "";  // Success: in the reasoning.
};

const StreamCase kStreamCases[] = {
    {"openai/stream_include_usage_captured.sse",
     "openai",
     LlmErrorKind::kNone,
     "Hi, how are you?",
     FinishReason::kStop,
     {10, 0, 0, 5, 0}},
    {"openai/stream_spec_example_as_sse.RECONSTRUCTED.sse", "openai", LlmErrorKind::kNone, "Hello"},
    {"openai/stream_spec_example.verbatim.txt", "openai", LlmErrorKind::kBadResponse,
     "stream ended without a finish_reason or [DONE]"},
    {"anthropic/stream_basic_captured.sse",
     "anthropic",
     LlmErrorKind::kNone,
     "Hello there!",
     FinishReason::kStop,
     {11, 0, 0, 6, 0}},
    {"anthropic/stream_max_tokens_tool_use_captured.sse",
     "anthropic",
     LlmErrorKind::kNone,
     "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a "
     "file called taxes.txt. Let me do that for you now.",
     FinishReason::kLength,
     {450, 0, 0, 124, 0}},
    {"anthropic/stream_thinking_captured.sse",
     "anthropic",
     LlmErrorKind::kNone,
     "prioritize safety over speed when crossing streets.",
     FinishReason::kStop,
     {43, 0, 0, 282, 0},
     "This is a straightforward question about pedestrian safety"},
    {"anthropic/errors/stream_error_event_sdk_test.sse", "anthropic", LlmErrorKind::kOverloaded,
     "overloaded_error: Overloaded"},
    {"gemini/stream_basic_crlf.sse",
     "gemini",
     LlmErrorKind::kNone,
     "The capital of Wyoming is **Cheyenne**.\n",
     FinishReason::kStop,
     {7, 0, 0, 10, 0}},
    {"openai_compat/ollama/stream_include_usage.DERIVED_FROM_SOURCE.sse",
     "ollama",
     LlmErrorKind::kNone,
     "Hello!",
     FinishReason::kStop,
     {12, 0, 0, 9, 0},
     "The user"},
    {"openai_compat/vllm/stream_continuous_usage_captured_2024.sse",
     "vllm",
     LlmErrorKind::kNone,
     "Hello Sam. It's nice to meet you. Is there something I can help you with or would you "
     "like to chat?",
     FinishReason::kStop,
     {46, 0, 0, 26, 0}},
    {"openai_compat/vllm/stream_reasoning_delta_docs.VERBATIM_INVALID_JSON.txt", "vllm",
     LlmErrorKind::kBadResponse, "stream ended without a finish_reason"},
    {"llamacpp/chat_stream_response.sse",
     "local",
     LlmErrorKind::kNone,
     "int sumArray(const std::vector<int>& arr) {",
     FinishReason::kStop,
     {39, 38, 0, 53, 0}},
};

// Tested in wire_request_test.cc (requests) and retry_test.cc (headers without a body).
const char* const kCheckedElsewhere[] = {
    "openai/request_system_user.json",
    "openai/request_developer_user_current_spec.json",
    "openai/request_image_data_url.json",
    "openai/request_image_url_official.json",
    "openai/request_reasoning_o3mini_captured.json",
    "openai/ratelimit_headers_docs_sample.headers.txt",
    "openai/response_200_ratelimit_headers_captured.headers.txt",
    "anthropic/request_basic_skill_docs.json",
    "anthropic/request_image_base64.RECONSTRUCTED.json",
    "anthropic/request_system_captured.json",
    "anthropic/request_thinking_captured.json",
    "anthropic/request_thinking_stream_captured.json",
    "anthropic/request_for_full_usage_captured.json",
    "anthropic/request_for_full_usage_captured.headers.txt",
    "gemini/request_all_fields.RECONSTRUCTED.json",
    "gemini/request_generation_config_official.json",
    "gemini/request_system_instruction_official.json",
    "gemini/request_inline_image_official.RECONSTRUCTED_DATA.json",
    "gemini/request_inline_image_camelcase_captured.DATA_REPLACED.json",
    "gemini/request_sysinst_maxtokens_thinking_captured.json",
    "gemini/request_safety_settings_captured.json",
    "gemini/request_include_thoughts_captured.json",
    "llamacpp/chat_request.json",
    "llamacpp/chat_length_request.json",
    "llamacpp/chat_stream_request.json",
    "llamacpp/context_overflow_request.json",
    // Below: GivenTheCapturedLlamaCppServerTheLocalPresetNamesItsModel.
    "llamacpp/models.json",
    "llamacpp/props.json",
};

// Readable parameters in test output.
void PrintTo(const ReplyCase& c, std::ostream* os) { *os << c.file; }
void PrintTo(const StreamCase& c, std::ostream* os) { *os << c.file; }

std::string NameOf(const std::string& file) {
  std::string name;
  for (char c : file) name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return name;
}

void ExpectUsage(const Usage& actual, const Usage& expected, const std::string& file) {
  EXPECT_EQ(actual.input_tokens, expected.input_tokens) << file;
  EXPECT_EQ(actual.cached_input_tokens, expected.cached_input_tokens) << file;
  EXPECT_EQ(actual.cache_write_tokens, expected.cache_write_tokens) << file;
  EXPECT_EQ(actual.output_tokens, expected.output_tokens) << file;
  EXPECT_EQ(actual.reasoning_tokens, expected.reasoning_tokens) << file;
}

class ReplyFixtureTest : public ::testing::TestWithParam<ReplyCase> {};

// Serves the fixture twice through a client that may try twice, so a retryable error shows its
// wait and a final message; a successful answer comes back on the first attempt.
TEST_P(ReplyFixtureTest, ParsesOrFailsWithTheRightError) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  const ReplyCase& c = GetParam();
  auto transport = std::make_shared<FakeTransport>();
  transport->Push(testing::FixtureResponse(c.file));
  FakeClock clock;
  ClientEnv env = testing::TestEnv(transport, &clock, /*max_attempts=*/2);
  std::shared_ptr<UsageLedger> ledger = env.ledger;
  std::unique_ptr<LlmClient> client =
      NewHttpClient(testing::TestSettings(c.provider, "m"), testing::TestKey(), env);
  Result<ChatResponse> result = client->Complete(ChatRequest{"", {Message::User("hi")}, {}});

  if (c.kind == LlmErrorKind::kNone) {
    ASSERT_TRUE(result.ok()) << c.file << ": " << result.status().ToString();
    EXPECT_NE(result->text.find(c.contains), std::string::npos) << result->text;
    EXPECT_EQ(result->finish_reason, c.finish) << c.file;
    ExpectUsage(result->usage, c.usage, c.file);
    EXPECT_EQ(transport->calls(), 1);
    EXPECT_EQ(ledger->Total().calls, 1);
    if (*c.request_id) {
      EXPECT_EQ(result->request_id, c.request_id);
    }
    return;
  }
  ASSERT_FALSE(result.ok()) << c.file;
  const std::string& message = result.status().message();
  EXPECT_EQ(LlmErrorKindOf(result.status()), c.kind) << message;
  EXPECT_NE(message.find(c.contains), std::string::npos) << message;
  EXPECT_EQ(message.find("key1234"), std::string::npos) << "DebugInfo details stay out";
  if (*c.request_id) {
    EXPECT_NE(message.find(c.request_id), std::string::npos) << message;
  }
  if (c.wait_ms == kNotRetried) {
    EXPECT_EQ(transport->calls(), 1) << c.file;
    EXPECT_TRUE(clock.sleeps().empty());
  } else {
    EXPECT_EQ(transport->calls(), 2) << c.file;
    ASSERT_EQ(clock.sleeps().size(), 1u);
    EXPECT_EQ(clock.sleeps()[0], milliseconds(c.wait_ms)) << c.file;
    EXPECT_NE(message.find("gave up after 2 attempts"), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Wire, ReplyFixtureTest, ::testing::ValuesIn(kReplyCases),
                         [](const auto& info) { return NameOf(info.param.file); });

class StreamFixtureTest : public ::testing::TestWithParam<StreamCase> {};

TEST_P(StreamFixtureTest, FoldsTheStreamOrFailsWithTheRightError) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  const StreamCase& c = GetParam();
  ProviderSettings settings = testing::TestSettings(c.provider, "m");
  Reply reply = NewWire(settings.wire)->ParseStream(testing::ReadFixture(c.file));
  if (c.kind == LlmErrorKind::kNone) {
    ASSERT_TRUE(reply.ok()) << c.file << ": " << reply.error.detail;
    EXPECT_NE(reply.response->text.find(c.contains), std::string::npos) << reply.response->text;
    EXPECT_NE(reply.response->reasoning.find(c.reasoning), std::string::npos);
    EXPECT_EQ(reply.response->finish_reason, c.finish);
    ExpectUsage(reply.response->usage, c.usage, c.file);
    return;
  }
  ASSERT_FALSE(reply.ok()) << c.file;
  EXPECT_EQ(reply.error.kind, c.kind) << reply.error.detail;
  EXPECT_NE(reply.error.detail.find(c.contains), std::string::npos) << reply.error.detail;
}

INSTANTIATE_TEST_SUITE_P(Wire, StreamFixtureTest, ::testing::ValuesIn(kStreamCases),
                         [](const auto& info) { return NameOf(info.param.file); });

TEST(WireFixturesTest, AllFixturesAreChecked) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  std::set<std::string> checked(std::begin(kCheckedElsewhere), std::end(kCheckedElsewhere));
  for (const ReplyCase& c : kReplyCases) checked.insert(c.file);
  for (const StreamCase& c : kStreamCases) checked.insert(c.file);
  for (const std::string& file : std::set<std::string>(checked)) {
    // A body's .headers.txt is served with it (FixtureResponse).
    std::string headers = testing::HeadersFileFor(file);
    if (!headers.empty()) checked.insert(headers);
  }
  std::filesystem::path root = testing::WireDir();
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
    ++files;
    std::string relative = std::filesystem::relative(entry.path(), root).generic_string();
    EXPECT_TRUE(checked.count(relative)) << relative << " is not checked by any test";
  }
  EXPECT_GE(files, 90);
}

// scripts/local-llm starts llama-server with --alias qwen2.5-coder-1.5b and a 16k context, as
// the captured server was: the `local` preset's model name must be the id the server lists.
TEST(WireFixturesTest, GivenTheCapturedLlamaCppServerTheLocalPresetNamesItsModel) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  nlohmann::json models = nlohmann::json::parse(testing::ReadFixture("llamacpp/models.json"));
  ASSERT_EQ(models["data"].size(), 1u);
  Result<ProviderSettings> local = ParseModelSpec("local");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(models["data"][0]["id"], local->model);
  nlohmann::json props = nlohmann::json::parse(testing::ReadFixture("llamacpp/props.json"));
  EXPECT_EQ(props["model_alias"], local->model);
  EXPECT_GE(props["default_generation_settings"]["n_ctx"].get<int>(), 16384);
}

TEST(WireFixturesTest, GivenAFilteredAnswerItsTokensAreStillCounted) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  auto transport = std::make_shared<FakeTransport>();
  transport->Push(testing::FixtureResponse("gemini/response_finish_safety.json"));
  FakeClock clock;
  ClientEnv env = testing::TestEnv(transport, &clock);
  std::shared_ptr<UsageLedger> ledger = env.ledger;
  std::unique_ptr<LlmClient> client =
      NewHttpClient(testing::TestSettings("gemini", "gemini-2.0-flash"), testing::TestKey(), env);
  Result<ChatResponse> result = client->Complete(ChatRequest{"", {Message::User("hi")}, {}});
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kContentFiltered);
  EXPECT_NE(result.status().message().find("rephrase the request"), std::string::npos);
  EXPECT_EQ(ledger->Total().usage.input_tokens, 7);
  EXPECT_EQ(ledger->Total().usage.output_tokens, 20);
  EXPECT_GT(ledger->Total().cost_usd, 0);
}

TEST(WireFixturesTest, GivenTheCapturedRateLimitHeadersTheRequestIdComesFromThem) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  HttpResponse response = testing::ParseHeadersFile(
      testing::ReadFixture("openai/response_200_ratelimit_headers_captured.headers.txt"));
  response.body = testing::ReadFixture("openai/response_nonstreaming_spec.json");
  auto transport = std::make_shared<FakeTransport>();
  transport->Push(response);
  FakeClock clock;
  std::unique_ptr<LlmClient> client =
      NewHttpClient(testing::TestSettings("openai", "gpt-5"), testing::TestKey(),
                    testing::TestEnv(transport, &clock));
  Result<ChatResponse> result = client->Complete(ChatRequest{"", {Message::User("hi")}, {}});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->request_id, "f8d0f53b6881c5c0a3698e55f8f410ac");
  EXPECT_EQ(result->model, "gpt-5.4");
  ASSERT_TRUE(result->cost_usd);
  EXPECT_NEAR(*result->cost_usd, (19 * 1.25 + 10 * 10.0) / 1e6, 1e-15);
}

TEST(WireFixturesTest, GivenReasoningFieldsTheyAreKeptApartFromTheText) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  struct Case {
    const char* file;
    WireFormat wire;
    const char* reasoning;
  };
  for (const Case& c : {Case{"anthropic/response_thinking_captured.json", WireFormat::kAnthropic,
                             "This is a straightforward question about pedestrian safety."},
                        Case{"gemini/response_thinking_thought_summary.json", WireFormat::kGemini,
                             "**Thinking About Google's Headquarters**"},
                        Case{"openai_compat/ollama/response_reasoning_toolcall_captured.json",
                             WireFormat::kOpenAi, "Use GetWeatherInfo function."}}) {
    Reply reply = NewWire(c.wire)->ParseReply(testing::FixtureResponse(c.file));
    ASSERT_TRUE(reply.ok()) << c.file;
    EXPECT_NE(reply.response->reasoning.find(c.reasoning), std::string::npos) << c.file;
    EXPECT_EQ(reply.response->text.find(c.reasoning), std::string::npos) << c.file;
  }
}

}  // namespace
}  // namespace kforge::llm
