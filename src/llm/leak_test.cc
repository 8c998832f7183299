// The key never reaches a file: a whole run against a server that echoes the key back in
// answers, errors and retries writes a transcript, a response cache, a log and the ping report,
// and then every file the test run wrote is searched for the key. (The global test environment
// in test_util.cc repeats the search over all files of the test program when it ends.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "cli/llm_command.h"
#include "kforge/llm/session.h"
#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using testing::kTestKey;
using testing::kTestKeyTail;
using testing::LocalServer;

// Echoes the key it was sent: in the answer text, in a 401 message, in a 500 message.
void EchoingProvider(const httplib::Request& request, httplib::Response& response) {
  std::string key = request.get_header_value("Authorization");
  std::string question = request.body;
  if (question.find("fail auth") != std::string::npos) {
    response.status = 401;
    response.set_content(R"({"error":{"message":"Incorrect API key provided: )" + key +
                             R"(","type":"invalid_request_error","code":"invalid_api_key"}})",
                         "application/json");
  } else if (question.find("fail server") != std::string::npos) {
    response.status = 500;
    response.set_content("<html>upstream rejected " + key + "</html>", "text/html");
  } else {
    response.set_header("x-request-id", "req-" + key.substr(7, 20));
    response.set_content(
        R"({"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"your key is )" +
            key +
            R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}})",
        "application/json");
  }
}

// The key file lives outside the test output: it is the one file meant to hold the key.
class KeyFile {
 public:
  KeyFile() {
    path_ = std::filesystem::temp_directory_path() /
            ("kforge-llm-key-" + std::to_string(getpid()) + ".key");
    std::ofstream(path_) << kTestKey << "\n";
    chmod(path_.c_str(), 0600);
  }
  ~KeyFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

ChatRequest Say(const std::string& text) {
  ChatRequest request;
  request.messages.push_back(Message::User(text));
  return request;
}

TEST(KeyLeakTest, GivenAServerThatEchoesTheKeyNoFileTheRunWroteContainsIt) {
  testing::TestKey();
  KeyFile key_file;
  LocalServer server(EchoingProvider);
  std::filesystem::path dir = testing::NewTestDir("leak");
  std::string config_text =
      "transcript = \"run.jsonl\"\ncache_dir = \"cache\"\n[retry]\nmax_attempts = 2\n"
      "initial_backoff_ms = 1\n[providers.vllm]\nbase_url = \"" +
      server.url() + "/v1\"\napi_key_file = \"" + key_file.path() +
      "\"\n[models.echo]\nprovider = \"vllm\"\n"
      "model = \"m\"\n";
  testing::WriteFile(dir / "llm.toml", config_text);
  Result<LlmConfig> config = LoadLlmConfig(dir / "llm.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();

  std::filesystem::path log_path = dir / "llm.log";
  LlmDeps deps;
  deps.log = [log_path](std::string_view line) {
    std::ofstream(log_path, std::ios::app) << line << "\n";
  };
  Result<std::unique_ptr<LlmSession>> session = LlmSession::Create(*config, deps);
  ASSERT_TRUE(session.ok());
  Result<std::unique_ptr<LlmClient>> client = (*session)->NewClient("echo");
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  Result<ChatResponse> answer = (*client)->Complete(Say("hello"));
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_TRUE((*client)->Complete(Say("hello"))->from_cache);
  Result<ChatResponse> auth = (*client)->Complete(Say("fail auth"));
  Result<ChatResponse> server_error = (*client)->Complete(Say("fail server"));
  for (const Result<ChatResponse>* failed : {&auth, &server_error}) {
    ASSERT_FALSE(failed->ok());
    EXPECT_EQ(failed->status().message().find(kTestKeyTail), std::string::npos)
        << failed->status().message();
    std::ofstream(dir / "errors.txt", std::ios::app) << failed->status().ToString() << "\n";
  }
  EXPECT_NE(auth.status().message().find("Incorrect API key provided: Bearer [REDACTED]"),
            std::string::npos)
      << auth.status().message();
  EXPECT_NE(testing::ReadFile(log_path).find("upstream rejected Bearer [REDACTED]"),
            std::string::npos)
      << "the retry was logged";

  std::ostringstream out, err;
  EXPECT_EQ(RunLlmPing(LlmPingOptions{"echo", (dir / "llm.toml").string()}, out, err), 0)
      << err.str();
  std::ofstream(dir / "ping.txt") << out.str() << err.str();
  EXPECT_NE(out.str().find("reply      your key is Bearer [REDACTED]"), std::string::npos)
      << out.str();

  EXPECT_TRUE(std::filesystem::exists(dir / "run.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir / "cache"));
  for (const char* needle : {kTestKey, kTestKeyTail}) {
    EXPECT_EQ(testing::FilesContaining(dir, needle), std::vector<std::string>()) << needle;
    EXPECT_EQ(testing::FilesContaining(testing::TestRoot(), needle), std::vector<std::string>())
        << needle;
  }
  // The search itself works: a file with the key is found.
  std::filesystem::path probe = testing::NewTestDir("probe") / "probe.txt";
  testing::WriteFile(probe, std::string("x") + kTestKey);
  EXPECT_EQ(testing::FilesContaining(probe.parent_path(), kTestKey).size(), 1u);
  std::filesystem::remove(probe);
}

}  // namespace
}  // namespace kforge::llm
