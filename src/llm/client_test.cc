// HttpLlmClient over a fake transport and a fake clock: retries, waits, limits, vision, budget,
// accounting and option defaults.
#include "llm/client.h"

#include <gtest/gtest.h>

#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;
using testing::FakeTransport;

const char kOpenAiOk[] =
    R"({"id":"chatcmpl-1","model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant",)"
    R"("content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,)"
    R"("completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}})";
const char kOpenAi500[] =
    R"({"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}})";

ChatRequest Ping() { return ChatRequest{"", {Message::User("ping")}, {}}; }

class ClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<LlmClient> Client(const std::string& provider = "openai",
                                    const std::string& model = "gpt-5", int max_attempts = 3) {
    env_ = testing::TestEnv(transport_, clock_.get(), max_attempts);
    settings_ = testing::TestSettings(provider, model);
    return NewHttpClient(settings_, testing::TestKey(), env_);
  }

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::unique_ptr<FakeClock> clock_ = std::make_unique<FakeClock>();
  ClientEnv env_;
  ProviderSettings settings_;
};

TEST_F(ClientTest, GivenASuccessItReturnsTextUsageCostAndRecordsTheCall) {
  transport_->PushJson(200, kOpenAiOk, {{"x-request-id", "req-abc"}});
  Result<ChatResponse> result = Client()->Complete(Ping());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->text, "pong");
  EXPECT_EQ(result->request_id, "req-abc");
  EXPECT_EQ(result->usage.input_tokens, 12);
  EXPECT_EQ(result->usage.cached_input_tokens, 4);
  EXPECT_EQ(result->attempts, 1);
  ASSERT_TRUE(result->cost_usd);
  EXPECT_NEAR(*result->cost_usd, (8 * 1.25 + 4 * 0.125 + 5 * 10.0) / 1e6, 1e-15);
  EXPECT_EQ(env_.ledger->Total().calls, 1);
  EXPECT_NEAR(env_.ledger->Total().cost_usd, *result->cost_usd, 1e-15);
  EXPECT_EQ(env_.ledger->ByClient().count("openai:gpt-5"), 1u);
}

TEST_F(ClientTest, Given429WithRetryAfterItWaitsThatLongThenSucceeds) {
  transport_->PushJson(
      429, R"({"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}})",
      {{"retry-after", "7"}});
  transport_->PushJson(200, kOpenAiOk);
  Result<ChatResponse> result = Client()->Complete(Ping());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(clock_->sleeps(), std::vector<milliseconds>{milliseconds(7000)});
  EXPECT_EQ(result->total_time, milliseconds(7000));
}

TEST_F(ClientTest, Given429WithoutRetryAfterItBacksOffExponentially) {
  transport_->PushJson(429, R"({"error":{"message":"slow down","code":"rate_limit_exceeded"}})");
  Result<ChatResponse> result = Client("openai", "gpt-5", 4)->Complete(Ping());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kRateLimited);
  EXPECT_EQ(transport_->calls(), 4);
  EXPECT_EQ(clock_->sleeps(), (std::vector<milliseconds>{milliseconds(1000), milliseconds(2000),
                                                         milliseconds(4000)}));
  EXPECT_NE(result.status().message().find(
                "openai:gpt-5: [rate_limited] HTTP 429 rate_limit_exceeded: slow down; gave up "
                "after 4 attempts (retry.max_attempts = 4); lower max_concurrency"),
            std::string::npos)
      << result.status().message();
}

TEST_F(ClientTest, GivenJitterTheWaitsAreDrawnFromTheBand) {
  transport_->PushJson(503, kOpenAi500);
  std::unique_ptr<LlmClient> client = Client();
  env_.retry.jitter = 0.5;
  env_.random01 = [] { return 1.0; };  // The shortest wait in the band.
  client = NewHttpClient(settings_, testing::TestKey(), env_);
  EXPECT_FALSE(client->Complete(Ping()).ok());
  EXPECT_EQ(clock_->sleeps(), (std::vector<milliseconds>{milliseconds(500), milliseconds(1000)}));
}

TEST_F(ClientTest, GivenServerErrorsItRetriesThenReportsTheLastOne) {
  for (int status : {500, 502, 503, 504, 529}) {
    transport_ = std::make_shared<FakeTransport>();
    clock_ = std::make_unique<FakeClock>();
    transport_->PushJson(status, kOpenAi500);
    Result<ChatResponse> result = Client()->Complete(Ping());
    ASSERT_FALSE(result.ok()) << status;
    EXPECT_EQ(transport_->calls(), 3) << status;
    EXPECT_NE(result.status().message().find("HTTP " + std::to_string(status)), std::string::npos);
    EXPECT_NE(result.status().message().find("gave up after 3 attempts"), std::string::npos);
  }
}

TEST_F(ClientTest, GivenAnErrorARetryCannotFixItFailsAtOnceWithAHint) {
  struct Case {
    int status;
    const char* body;
    LlmErrorKind kind;
    const char* hint;
  };
  for (const Case& c : {
           Case{400, R"({"error":{"message":"bad","type":"invalid_request_error"}})",
                LlmErrorKind::kBadRequest, "HTTP 400 invalid_request_error: bad"},
           Case{401, R"({"error":{"message":"no","code":"invalid_api_key"}})", LlmErrorKind::kAuth,
                "check the API key in $KFORGE_TEST_LLM_KEY"},
           Case{403, R"({"error":{"message":"no"}})", LlmErrorKind::kPermissionDenied,
                "may not do this"},
           Case{404, R"({"error":{"message":"no","code":"model_not_found"}})",
                LlmErrorKind::kModelNotFound, "check the model name 'gpt-5'"},
           Case{400, R"({"error":{"message":"maximum context length is 8192 tokens"}})",
                LlmErrorKind::kContextTooLong, "shorten the prompt"},
           Case{429, R"({"error":{"message":"quota","code":"insufficient_quota"}})",
                LlmErrorKind::kQuotaExhausted, "waiting will not help"},
           Case{501, "<html>Not Implemented</html>", LlmErrorKind::kBadRequest,
                "HTTP 501: <html>Not Implemented</html>"},
       }) {
    transport_ = std::make_shared<FakeTransport>();
    clock_ = std::make_unique<FakeClock>();
    transport_->PushJson(c.status, c.body);
    Result<ChatResponse> result = Client()->Complete(Ping());
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(LlmErrorKindOf(result.status()), c.kind) << result.status().message();
    EXPECT_EQ(transport_->calls(), 1) << c.status;
    EXPECT_TRUE(clock_->sleeps().empty());
    EXPECT_NE(result.status().message().find(c.hint), std::string::npos)
        << result.status().message();
  }
}

TEST_F(ClientTest, GivenARetryAfterLongerThanTheLimitItStopsAtOnce) {
  transport_->PushJson(429, R"({"error":{"message":"later"}})", {{"retry-after", "3600"}});
  Result<ChatResponse> result = Client()->Complete(Ping());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(transport_->calls(), 1);
  EXPECT_NE(result.status().message().find("the server asked to wait 3600 s before retrying, "
                                           "longer than retry.max_retry_after_s = 120 s"),
            std::string::npos)
      << result.status().message();
}

TEST_F(ClientTest, GivenXShouldRetryFalseItDoesNotRetry) {
  transport_->PushJson(500, R"({"type":"error","error":{"type":"api_error","message":"x"}})",
                       {{"x-should-retry", "false"}});
  EXPECT_FALSE(Client("anthropic", "claude-sonnet-4-5")->Complete(Ping()).ok());
  EXPECT_EQ(transport_->calls(), 1);
}

TEST_F(ClientTest, GivenTransportFailuresOnlyTimeoutsAndResetsAreRetried) {
  struct Case {
    LlmErrorKind kind;
    int calls;
  };
  for (const Case& c : {Case{LlmErrorKind::kTimeout, 3}, Case{LlmErrorKind::kConnectionLost, 3},
                        Case{LlmErrorKind::kConnectionFailed, 1}}) {
    transport_ = std::make_shared<FakeTransport>();
    transport_->Push(MakeLlmError(c.kind, "http", "POST http://x failed"));
    Result<ChatResponse> result = Client()->Complete(Ping());
    EXPECT_EQ(LlmErrorKindOf(result.status()), c.kind);
    EXPECT_EQ(transport_->calls(), c.calls) << LlmErrorKindTag(c.kind);
  }
}

// Issue 12, fix 6: a refused connection is a wrong address on a first call (it fails at once,
// above) but a server restarting once the client has reached it, or right after the call lost
// its connection: then it is retried, with room for the restart.
TEST_F(ClientTest, GivenAServerThatAnsweredBeforeARefusedConnectionIsRetriedUntilItIsBack) {
  std::unique_ptr<LlmClient> client = Client();
  transport_->PushJson(200, kOpenAiOk);  // replies are queued; the last one stays
  for (int i = 0; i < 5; ++i) transport_->Push(MakeLlmError(LlmErrorKind::kConnectionFailed, "http", "POST http://x failed"));
  transport_->PushJson(200, kOpenAiOk);
  ASSERT_TRUE(client->Complete(Ping()).ok());
  Result<ChatResponse> result = client->Complete(Ping());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->attempts, 6);
  EXPECT_EQ(transport_->calls(), 7);
}

TEST_F(ClientTest, GivenALostConnectionThenARefusedOneInOneCallItKeepsRetrying) {
  transport_->Push(MakeLlmError(LlmErrorKind::kConnectionLost, "http", "POST http://x: connection reset"));
  transport_->Push(MakeLlmError(LlmErrorKind::kConnectionFailed, "http", "POST http://x failed"));
  transport_->PushJson(200, kOpenAiOk);
  Result<ChatResponse> result = Client()->Complete(Ping());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(transport_->calls(), 3);
}

TEST_F(ClientTest, GivenARestartThatNeverEndsTheReconnectsAreBounded) {
  std::unique_ptr<LlmClient> client = Client();
  transport_->PushJson(200, kOpenAiOk);
  for (int i = 0; i < 20; ++i) transport_->Push(MakeLlmError(LlmErrorKind::kConnectionFailed, "http", "POST http://x failed"));
  ASSERT_TRUE(client->Complete(Ping()).ok());
  Result<ChatResponse> result = client->Complete(Ping());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kConnectionFailed);
  EXPECT_EQ(transport_->calls(), 1 + 8);
  EXPECT_NE(result.status().message().find("gave up after 8 attempts"), std::string::npos) << result.status().message();
}

TEST_F(ClientTest, GivenAMalformedSuccessBodyItFailsWithoutRetrying) {
  transport_->PushJson(200, R"({"choices": [)");
  Result<ChatResponse> result = Client()->Complete(Ping());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kBadResponse);
  EXPECT_NE(result.status().message().find("invalid JSON at byte"), std::string::npos)
      << result.status().message();
  EXPECT_NE(result.status().message().find("check base_url"), std::string::npos);
  EXPECT_EQ(transport_->calls(), 1);
}

ChatRequest WithImage() {
  ChatRequest request = Ping();
  request.messages[0].parts.push_back(ContentPart::Image("image/png", "\x89PNG\r\n\x1a\nxx"));
  return request;
}

TEST_F(ClientTest, GivenImagesForAModelWithoutVisionItRefusesBeforeSending) {
  transport_->PushJson(200, kOpenAiOk);
  Result<ChatResponse> result = Client("openai", "o3-mini")->Complete(WithImage());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kVisionUnsupported);
  EXPECT_NE(result.status().message().find("model 'o3-mini' is not marked as accepting images"),
            std::string::npos);
  Result<ChatResponse> local = Client("vllm", "qwen")->Complete(WithImage());
  EXPECT_EQ(LlmErrorKindOf(local.status()), LlmErrorKind::kVisionUnsupported);
  EXPECT_EQ(transport_->calls(), 0);
}

TEST_F(ClientTest, GivenImagesForAVisionModelTheyAreSent) {
  transport_->PushJson(200, kOpenAiOk);
  EXPECT_TRUE(Client("openai", "gpt-5")->Complete(WithImage()).ok());
  env_ = testing::TestEnv(transport_, clock_.get());
  ProviderSettings local = testing::TestSettings("vllm", "qwen-vl");
  local.vision = true;  // As `vision = true` in the config.
  EXPECT_TRUE(NewHttpClient(local, Secret(), env_)->Complete(WithImage()).ok());
  EXPECT_EQ(transport_->calls(), 2);
}

TEST_F(ClientTest, GivenASpentBudgetItRefusesBeforeSending) {
  transport_->PushJson(200, kOpenAiOk);
  std::unique_ptr<LlmClient> client = Client();
  env_.ledger->SetBudget(0.00001);
  env_.ledger->Record("other", Usage(), 0.00002);
  Result<ChatResponse> result = client->Complete(Ping());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kBudgetExceeded);
  EXPECT_EQ(transport_->calls(), 0);
}

TEST_F(ClientTest, GivenManyThreadsTheProviderLimitHolds) {
  transport_->PushJson(200, kOpenAiOk);
  std::unique_ptr<LlmClient> client = Client();
  env_.limiter = std::make_shared<ConcurrencyLimiter>(2);
  client = NewHttpClient(settings_, testing::TestKey(), env_);
  std::atomic<int> now{0}, peak{0};
  transport_->on_post = [&] {
    int current = ++now;
    int seen = peak.load();
    while (current > seen && !peak.compare_exchange_weak(seen, current)) {
    }
    std::this_thread::sleep_for(milliseconds(20));
    --now;
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&client] { EXPECT_TRUE(client->Complete(Ping()).ok()); });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(peak.load(), 2);
  EXPECT_EQ(transport_->calls(), 6);
  EXPECT_EQ(env_.ledger->Total().calls, 6);
}

TEST_F(ClientTest, GivenModelDefaultsTheyFillOnlyUnsetOptions) {
  transport_->PushJson(200, kOpenAiOk);
  std::unique_ptr<LlmClient> client = Client();
  settings_.temperature = 0.2;
  settings_.max_output_tokens = 77;
  client = NewHttpClient(settings_, testing::TestKey(), env_);
  ChatRequest request = Ping();
  request.options.temperature = 0.9;
  ASSERT_TRUE(client->Complete(request).ok());
  std::string body = transport_->requests()[0].body;
  EXPECT_NE(body.find("\"temperature\":0.9"), std::string::npos) << body;
  EXPECT_NE(body.find("\"max_completion_tokens\":77"), std::string::npos) << body;
  EXPECT_NE(body.find("\"model\":\"gpt-5\""), std::string::npos) << body;
  EXPECT_EQ(transport_->requests()[0].total_timeout, settings_.timeout);
}

TEST_F(ClientTest, GivenAnotherModelInTheOptionsItIsUsedAndPricedAsSuch) {
  transport_->PushJson(200, kOpenAiOk);
  ChatRequest request = Ping();
  request.options.model = "gpt-5-mini";
  Result<ChatResponse> result = Client()->Complete(request);
  ASSERT_TRUE(result.ok());
  EXPECT_NE(transport_->requests()[0].body.find("\"model\":\"gpt-5-mini\""), std::string::npos);
  EXPECT_NEAR(*result->cost_usd, (8 * 0.25 + 4 * 0.025 + 5 * 2.0) / 1e6, 1e-15);
  EXPECT_EQ(env_.ledger->ByClient().count("openai:gpt-5-mini"), 1u);
}

TEST_F(ClientTest, GivenAModelWithoutAPriceTheCostIsUnknown) {
  transport_->PushJson(200, kOpenAiOk);
  Result<ChatResponse> result = Client("openai", "gpt-unpriced")->Complete(Ping());
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->cost_usd);
  EXPECT_EQ(env_.ledger->Total().unpriced_calls, 1);
}

TEST_F(ClientTest, GivenARetryEachFailedAttemptIsLoggedWithoutTheKey) {
  std::string seen;
  transport_->PushJson(
      503, std::string(R"({"error":{"message":"busy, key )") + testing::kTestKey + R"("}})");
  transport_->PushJson(200, kOpenAiOk);
  std::unique_ptr<LlmClient> client = Client();
  env_.log = [&seen](std::string_view line) { seen += std::string(line) + "\n"; };
  client = NewHttpClient(settings_, testing::TestKey(), env_);
  ASSERT_TRUE(client->Complete(Ping()).ok());
  EXPECT_NE(seen.find("openai:gpt-5: attempt 1 of 3 failed: [overloaded] HTTP 503"),
            std::string::npos)
      << seen;
  EXPECT_NE(seen.find("retrying in 1 s"), std::string::npos) << seen;
  EXPECT_EQ(seen.find(testing::kTestKeyTail), std::string::npos) << seen;
}

}  // namespace
}  // namespace kforge::llm
