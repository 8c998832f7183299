// `kforge llm ping` against a local OpenAI-compatible server.
#include "cli/llm_command.h"

#include <gtest/gtest.h>

#include <sstream>

#include "llm/test_util.h"

namespace kforge {
namespace {

using llm::testing::LocalServer;
using llm::testing::NewTestDir;
using llm::testing::WriteFile;

const char kPong[] =
    R"({"id":"chatcmpl-9","object":"chat.completion","model":"qwen3-8b","choices":[{"index":0,)"
    R"("message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":14,"completion_tokens":2,"total_tokens":16}})";

class LlmPingTest : public ::testing::Test {
 protected:
  void SetUp() override { llm::testing::TestKey(); }

  // A config naming the server as [models.local] and as the vllm provider's URL.
  std::string Config(const std::string& url) {
    std::filesystem::path path = NewTestDir("ping") / "llm.toml";
    WriteFile(path,
              "[retry]\nmax_attempts = 1\n[models.local]\nprovider = \"openai-compat\"\n"
              "model = \"qwen3-8b\"\nbase_url = \"" +
                  url + "/v1\"\napi_key_env = \"" + llm::testing::kTestKeyEnv +
                  "\"\n[providers.openai]\nbase_url = \"" + url + "/v1\"\napi_key_env = \"" +
                  llm::testing::kTestKeyEnv + "\"\n");
    return path.string();
  }

  int Ping(const std::string& model, const std::string& config) {
    out_.str("");
    err_.str("");
    return RunLlmPing(LlmPingOptions{model, config}, out_, err_);
  }

  std::ostringstream out_, err_;
};

TEST_F(LlmPingTest, GivenAWorkingServerItPrintsLatencyTokensAndCost) {
  std::string auth;
  LocalServer server([&](const httplib::Request& request, httplib::Response& response) {
    auth = request.get_header_value("Authorization");
    response.set_header("x-request-id", "req-ping-1");
    response.set_content(kPong, "application/json");
  });
  ASSERT_EQ(Ping("local", Config(server.url())), 0) << err_.str();
  std::string out = out_.str();
  EXPECT_NE(
      out.find("model      openai-compat:qwen3-8b@" + server.url() + "/v1 (answered by qwen3-8b)"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("reply      pong"), std::string::npos) << out;
  EXPECT_NE(out.find("finish     stop"), std::string::npos);
  EXPECT_NE(out.find("latency    "), std::string::npos);
  EXPECT_NE(out.find("tokens     14 in (0 cached), 2 out (0 reasoning)"), std::string::npos);
  EXPECT_NE(out.find("cost       $0.000000"), std::string::npos) << out;  // Self-hosted: free.
  EXPECT_NE(out.find("request id req-ping-1"), std::string::npos);
  EXPECT_EQ(auth, std::string("Bearer ") + llm::testing::kTestKey);
  EXPECT_TRUE(err_.str().empty());
}

TEST_F(LlmPingTest, GivenAPricedModelItPrintsItsCost) {
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    response.set_content(kPong, "application/json");
  });
  ASSERT_EQ(Ping("openai:gpt-5", Config(server.url())), 0) << err_.str();
  // 14 * $1.25 + 2 * $10 per million tokens = $0.0000375.
  EXPECT_NE(out_.str().find("cost       $0.00003"), std::string::npos) << out_.str();
}

TEST_F(LlmPingTest, GivenUsageOrConfigErrorsItExitsWith2) {
  EXPECT_EQ(Ping("openia:gpt-5", ""), 2);
  EXPECT_NE(err_.str().find("unknown provider 'openia'"), std::string::npos) << err_.str();
  EXPECT_EQ(Ping("local", "/nonexistent/llm.toml"), 2);
  EXPECT_NE(err_.str().find("cannot open the config file"), std::string::npos);
  unsetenv("KFORGE_TEST_MISSING_KEY");
  std::filesystem::path config = NewTestDir("ping") / "nokey.toml";
  WriteFile(config, "[providers.anthropic]\napi_key_env = \"KFORGE_TEST_MISSING_KEY\"\n");
  EXPECT_EQ(Ping("anthropic:claude-opus-4-6", config.string()), 2);
  EXPECT_NE(err_.str().find("no API key: set the environment variable KFORGE_TEST_MISSING_KEY"),
            std::string::npos)
      << err_.str();
}

TEST_F(LlmPingTest, GivenAProviderErrorItExitsWith3AndSaysWhy) {
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    response.status = 401;
    response.set_content(
        R"({"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}})",
        "application/json");
  });
  EXPECT_EQ(Ping("local", Config(server.url())), 3);
  EXPECT_NE(err_.str().find("[auth] HTTP 401 invalid_api_key: Incorrect API key provided"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(
      Ping("openai-compat:m@http://127.0.0.1:" + std::to_string(llm::testing::UnusedPort()) + "/v1",
           ""),
      3);
  EXPECT_NE(err_.str().find("[connection_failed]"), std::string::npos) << err_.str();
}

TEST_F(LlmPingTest, GivenTheCliItRegistersLlmPingAndMapsFailuresToExitCodes) {
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    response.set_content(kPong, "application/json");
  });
  std::string config = Config(server.url());
  {
    CLI::App app("kforge");
    AddLlmCommands(app);
    ::testing::internal::CaptureStdout();
    EXPECT_NO_THROW(
        app.parse(std::vector<std::string>{config, "--config", "local", "--model", "ping", "llm"}));
    EXPECT_NE(::testing::internal::GetCapturedStdout().find("reply      pong"), std::string::npos);
  }
  {
    CLI::App app("kforge");
    AddLlmCommands(app);
    ::testing::internal::CaptureStderr();
    try {
      app.parse(std::vector<std::string>{"/nonexistent.toml", "--config", "local", "--model",
                                         "ping", "llm"});
      ADD_FAILURE() << "expected CLI::RuntimeError";
    } catch (const CLI::RuntimeError& e) {
      EXPECT_EQ(app.exit(e), 2);
    }
    ::testing::internal::GetCapturedStderr();
  }
  {
    CLI::App app("kforge");
    AddLlmCommands(app);
    EXPECT_THROW(app.parse(std::vector<std::string>{"ping", "llm"}), CLI::RequiredError);
  }
  {
    CLI::App app("kforge");
    int exit_code = -1;
    AddLlmCommands(app, &exit_code);
    ::testing::internal::CaptureStderr();
    EXPECT_NO_THROW(app.parse(std::vector<std::string>{"openia:x", "--model", "ping", "llm"}));
    EXPECT_NE(::testing::internal::GetCapturedStderr().find("unknown provider"), std::string::npos);
    EXPECT_EQ(exit_code, 2);
  }
}

}  // namespace
}  // namespace kforge
