// The whole stack over real HTTP: LlmSession -> HttpLlmClient -> libcurl -> a local
// cpp-httplib server that answers as each provider documents (bodies from testdata/). Retry
// waits go through a fake clock, so only the timeout tests take real time.
#include <gtest/gtest.h>

#include <fstream>

#include "kforge/llm/session.h"
#include "llm/json_util.h"
#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;
using testing::LocalServer;
using testing::ReadFixture;

struct Provider {
  const char* name;
  const char* model_spec;
  const char* url_prefix;     // Appended to the server URL to make base_url.
  const char* expected_path;  // What the server must see.
  const char* key_header;
  const char* key_prefix;
  const char* ok_body;
  const char* text;         // In ok_body's answer.
  const char* bad_request;  // 400 body and its kind.
  LlmErrorKind bad_request_kind;
  const char* unauthorized;  // 401 body.
  const char* not_found;     // 404 body.
  const char* rate_limited;  // 429 body without a retry hint in it.
  const char* server_error;  // Used for 500, 503 and 529.
};

const Provider kProviders[] = {
    {"openai", "openai:gpt-5", "/v1", "/v1/chat/completions", "Authorization", "Bearer ",
     "openai/response_nonstreaming_spec.json", "Hello! How can I assist you today?",
     "openai/errors/400_context_length_exceeded.json", LlmErrorKind::kContextTooLong,
     "openai/errors/401_invalid_api_key.json", "openai/errors/404_model_not_found.json",
     "openai/errors/429_rate_limit_exceeded.COMPOSITE.json", "openai/errors/500_server_error.json"},
    {"anthropic", "anthropic:claude-sonnet-4-5", "/v1", "/v1/messages", "x-api-key", "",
     "anthropic/response_system_captured.json", "The capital of France is Paris.",
     "anthropic/errors/400_prompt_too_long_captured.json", LlmErrorKind::kContextTooLong,
     "anthropic/errors/401_authentication_error_captured.json",
     "anthropic/errors/404_not_found_error_captured.json",
     "anthropic/errors/429_rate_limit_error_captured.json",
     "anthropic/errors/529_overloaded_error_captured_2026.json"},
    {"gemini", "gemini:gemini-2.5-flash", "/v1beta",
     // Streamed by default (the server below answers with one JSON body, which is read too).
     "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "x-goog-api-key", "",
     "gemini/response_basic.json", "Mountain View, California",
     "gemini/errors/400_FAILED_PRECONDITION_mock.json", LlmErrorKind::kBadRequest,
     "gemini/errors/400_INVALID_ARGUMENT_api_key_invalid.json",
     "gemini/errors/404_NOT_FOUND_v1beta_captured.json",
     "gemini/errors/429_RESOURCE_EXHAUSTED_vertex_style_mock.json",
     "gemini/errors/503_UNAVAILABLE_captured.json"},
};

void PrintTo(const Provider& p, std::ostream* os) { *os << p.name; }

void Json200(httplib::Response& response, const std::string& body, int status = 200) {
  response.status = status;
  response.set_content(body, "application/json");
}

class HttpProviderTest : public ::testing::TestWithParam<Provider> {
 protected:
  void SetUp() override {
    KF_SKIP_WITHOUT_WIRE_FIXTURES();
    testing::TestKey();
    log_ = testing::NewTestDir("http") / "llm.log";
  }

  // A client for the provider at `server`, with 3 attempts, no jitter, and a fake clock.
  std::unique_ptr<LlmClient> ClientFor(const std::string& server_url, double timeout_s = 5,
                                       int max_concurrency = 4) {
    const Provider& p = GetParam();
    std::string toml =
        "[retry]\nmax_attempts = 3\njitter = 0.0\n[providers." + std::string(p.name) +
        "]\nbase_url = \"" + server_url + p.url_prefix + "\"\napi_key_env = \"" +
        testing::kTestKeyEnv + "\"\ntimeout_s = " + std::to_string(timeout_s) +
        "\nconnect_timeout_s = 2\nmax_concurrency = " + std::to_string(max_concurrency) + "\n";
    Result<LlmConfig> config = ParseLlmConfig(toml, "http_test.toml", ".");
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    LlmDeps deps;
    deps.clock = &clock_;
    std::filesystem::path log = log_;
    deps.log = [log](std::string_view line) { std::ofstream(log, std::ios::app) << line << "\n"; };
    Result<std::unique_ptr<LlmSession>> session = LlmSession::Create(*config, deps);
    EXPECT_TRUE(session.ok());
    session_ = std::move(session).value();
    Result<std::unique_ptr<LlmClient>> client = session_->NewClient(p.model_spec);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(client).value();
  }

  Result<ChatResponse> Ask(LlmClient& client) {
    ChatRequest request;
    request.system = "Be brief.";
    request.messages.push_back(Message::User("What is the capital of France?"));
    return client.Complete(request);
  }

  FakeClock clock_;
  std::unique_ptr<LlmSession> session_;
  std::filesystem::path log_;
};

TEST_P(HttpProviderTest, GivenASuccessItSendsTheDocumentedRequestAndParsesTheAnswer) {
  const Provider& p = GetParam();
  httplib::Request seen;
  LocalServer server([&](const httplib::Request& request, httplib::Response& response) {
    seen = request;
    Json200(response, ReadFixture(p.ok_body));
  });
  Result<ChatResponse> result = Ask(*ClientFor(server.url()));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_NE(result->text.find(p.text), std::string::npos);
  EXPECT_EQ(seen.path, p.expected_path);
  EXPECT_EQ(seen.get_header_value(p.key_header), std::string(p.key_prefix) + testing::kTestKey);
  EXPECT_EQ(seen.get_header_value("Content-Type"), "application/json");
  std::string error;
  std::optional<Json> body = ParseJson(seen.body, &error);
  ASSERT_TRUE(body) << error;
  EXPECT_NE(seen.body.find("What is the capital of France?"), std::string::npos);
  EXPECT_EQ(server.hits(), 1);
  EXPECT_EQ(session_->ledger().Total().calls, 1);
}

TEST_P(HttpProviderTest, GivenErrorsARetryCannotFixItFailsOnceWithTheProvidersMessage) {
  const Provider& p = GetParam();
  struct Case {
    int status;
    const char* fixture;
    LlmErrorKind kind;
  };
  for (const Case& c :
       {Case{400, p.bad_request, p.bad_request_kind},
        Case{std::string(p.name) == "gemini" ? 400 : 401, p.unauthorized, LlmErrorKind::kAuth},
        Case{404, p.not_found, LlmErrorKind::kModelNotFound}}) {
    LocalServer server([&](const httplib::Request&, httplib::Response& response) {
      Json200(response, ReadFixture(c.fixture), c.status);
    });
    Result<ChatResponse> result = Ask(*ClientFor(server.url()));
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(LlmErrorKindOf(result.status()), c.kind) << result.status().message();
    EXPECT_NE(result.status().message().find("HTTP " + std::to_string(c.status)),
              std::string::npos);
    EXPECT_EQ(server.hits(), 1) << c.fixture;
  }
}

TEST_P(HttpProviderTest, GivenAPlain401ItIsAnAuthError) {
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    Json200(
        response,
        R"({"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}})",
        401);
  });
  Result<ChatResponse> result = Ask(*ClientFor(server.url()));
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kAuth);
  EXPECT_NE(result.status().message().find("check the API key in $KFORGE_TEST_LLM_KEY"),
            std::string::npos)
      << result.status().message();
}

TEST_P(HttpProviderTest, Given429WithRetryAfterItWaitsThatLongAndSucceeds) {
  const Provider& p = GetParam();
  std::atomic<int> hits{0};
  LocalServer flaky([&](const httplib::Request&, httplib::Response& response) {
    if (hits++ == 0) {
      response.set_header("Retry-After", "2");
      Json200(response, ReadFixture(p.rate_limited), 429);
    } else {
      Json200(response, ReadFixture(p.ok_body));
    }
  });
  Result<ChatResponse> result = Ask(*ClientFor(flaky.url()));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->attempts, 2);
  EXPECT_EQ(clock_.sleeps(), std::vector<milliseconds>{milliseconds(2000)});
  EXPECT_NE(testing::ReadFile(log_).find("attempt 1 of 3 failed: [rate_limited] HTTP 429"),
            std::string::npos)
      << testing::ReadFile(log_);
}

TEST_P(HttpProviderTest, Given429WithoutRetryAfterItBacksOffAndGivesUp) {
  const Provider& p = GetParam();
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    Json200(response, ReadFixture(p.rate_limited), 429);
  });
  Result<ChatResponse> result = Ask(*ClientFor(server.url()));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kRateLimited);
  EXPECT_EQ(server.hits(), 3);
  EXPECT_EQ(clock_.sleeps(), (std::vector<milliseconds>{milliseconds(1000), milliseconds(2000)}));
  EXPECT_NE(result.status().message().find("gave up after 3 attempts"), std::string::npos);
}

TEST_P(HttpProviderTest, GivenServerErrorsItRetriesEachAndReportsTheKind) {
  const Provider& p = GetParam();
  struct Case {
    int status;
    LlmErrorKind kind;
  };
  for (const Case& c : {Case{500, LlmErrorKind::kServerError}, Case{503, LlmErrorKind::kOverloaded},
                        Case{529, LlmErrorKind::kOverloaded}}) {
    LocalServer server([&](const httplib::Request&, httplib::Response& response) {
      Json200(response, ReadFixture(p.server_error), c.status);
    });
    Result<ChatResponse> result = Ask(*ClientFor(server.url()));
    ASSERT_FALSE(result.ok());
    LlmErrorKind kind = LlmErrorKindOf(result.status());
    // A body's own type may be more precise than the status (Anthropic's overloaded_error).
    EXPECT_TRUE(kind == c.kind || kind == LlmErrorKind::kOverloaded) << result.status().message();
    EXPECT_EQ(server.hits(), 3) << c.status;
  }
}

TEST_P(HttpProviderTest, GivenMalformedJsonItFailsWithoutRetrying) {
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    Json200(response, "{\"candidates\": [{\"content\": ");
  });
  Result<ChatResponse> result = Ask(*ClientFor(server.url()));
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kBadResponse);
  EXPECT_NE(result.status().message().find("invalid JSON"), std::string::npos);
  EXPECT_EQ(server.hits(), 1);
}

TEST_P(HttpProviderTest, GivenATruncatedBodyItRetriesAsALostConnection) {
  const Provider& p = GetParam();
  std::string body = ReadFixture(p.ok_body);
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    response.set_content_provider(body.size(), "application/json",
                                  [&body](size_t, size_t, httplib::DataSink& sink) {
                                    sink.write(body.data(), body.size() / 2);
                                    return false;  // Close the connection mid-body.
                                  });
  });
  Result<ChatResponse> result = Ask(*ClientFor(server.url()));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kConnectionLost)
      << result.status().message();
  EXPECT_NE(result.status().message().find("broke before the whole response arrived"),
            std::string::npos);
  EXPECT_EQ(server.hits(), 3);
}

TEST_P(HttpProviderTest, GivenASlowServerItTimesOutAndRetries) {
  const Provider& p = GetParam();
  LocalServer* self = nullptr;
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    self->SleepUnlessStopping(milliseconds(3000));
    Json200(response, ReadFixture(p.ok_body));
  });
  self = &server;
  auto start = std::chrono::steady_clock::now();
  Result<ChatResponse> result = Ask(*ClientFor(server.url(), /*timeout_s=*/0.2));
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kTimeout) << result.status().message();
  EXPECT_NE(result.status().message().find("total timeout 0.2 s"), std::string::npos)
      << result.status().message();
  EXPECT_EQ(server.hits(), 3);
  EXPECT_LT(elapsed, std::chrono::seconds(3));
}

TEST_P(HttpProviderTest, GivenNothingListensItFailsAtOnceAndSaysSo) {
  std::string url = "http://127.0.0.1:" + std::to_string(testing::UnusedPort());
  Result<ChatResponse> result = Ask(*ClientFor(url));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(LlmErrorKindOf(result.status()), LlmErrorKind::kConnectionFailed);
  EXPECT_NE(result.status().message().find("is the server running"), std::string::npos)
      << result.status().message();
  EXPECT_TRUE(clock_.sleeps().empty());
}

TEST_P(HttpProviderTest, GivenManyCallersAtMostMaxConcurrencyRequestsAreInFlight) {
  const Provider& p = GetParam();
  std::atomic<int> now{0}, peak{0};
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    int current = ++now;
    int seen = peak.load();
    while (current > seen && !peak.compare_exchange_weak(seen, current)) {
    }
    std::this_thread::sleep_for(milliseconds(50));
    --now;
    Json200(response, ReadFixture(p.ok_body));
  });
  std::unique_ptr<LlmClient> client = ClientFor(server.url(), 5, /*max_concurrency=*/2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] { EXPECT_TRUE(Ask(*client).ok()); });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(server.hits(), 6);
  EXPECT_EQ(peak.load(), 2);
}

INSTANTIATE_TEST_SUITE_P(Http, HttpProviderTest, ::testing::ValuesIn(kProviders),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HttpGeminiTest, GivenRetryInfoInTheBodyItWaitsTheDelayItNames) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  testing::TestKey();
  std::atomic<int> hits{0};
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    if (hits++ == 0) {
      Json200(response, ReadFixture("gemini/errors/429_RESOURCE_EXHAUSTED_captured.json"), 429);
    } else {
      Json200(response, ReadFixture("gemini/response_basic.json"));
    }
  });
  FakeClock clock;
  ClientEnv env = testing::TestEnv(std::shared_ptr<HttpTransport>(NewCurlTransport()), &clock);
  std::unique_ptr<LlmClient> client =
      NewHttpClient(testing::TestSettings("gemini", "gemini-2.5-flash", server.url() + "/v1beta"),
                    testing::TestKey(), env);
  Result<ChatResponse> result = client->Complete(ChatRequest{"", {Message::User("hi")}, {}});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(clock.sleeps(), std::vector<milliseconds>{milliseconds(26000)});
}

}  // namespace
}  // namespace kforge::llm
