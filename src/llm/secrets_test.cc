#include "kforge/llm/secrets.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "kforge/llm/llm.h"
#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using testing::kTestKey;
using testing::NewTestDir;
using testing::WriteFile;

std::string KeyFile(const std::string& content, mode_t mode) {
  std::filesystem::path path = NewTestDir("keyfile") / "api.key";
  WriteFile(path, content);
  chmod(path.c_str(), mode);
  return path.string();
}

TEST(LoadApiKeyTest, GivenTheVariableIsSetItReturnsItsValue) {
  setenv("KFORGE_TEST_ENV_KEY", "sk-Qx7mR2pL9vT4wE6y", 1);
  Result<Secret> key = LoadApiKey("KFORGE_TEST_ENV_KEY", "", true, "openai:gpt-5");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->Reveal(), "sk-Qx7mR2pL9vT4wE6y");
}

TEST(LoadApiKeyTest, GivenNoKeyAndOneIsRequiredItNamesTheVariable) {
  unsetenv("KFORGE_TEST_UNSET_KEY");
  Result<Secret> key = LoadApiKey("KFORGE_TEST_UNSET_KEY", "", true, "openai:gpt-5");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(LlmErrorKindOf(key.status()), LlmErrorKind::kConfig);
  EXPECT_NE(key.status().message().find("KFORGE_TEST_UNSET_KEY"), std::string::npos);
}

TEST(LoadApiKeyTest, GivenNoKeyForALocalServerItReturnsAnEmptyKey) {
  unsetenv("KFORGE_TEST_UNSET_KEY");
  Result<Secret> key = LoadApiKey("KFORGE_TEST_UNSET_KEY", "", false, "ollama:llama3.2");
  ASSERT_TRUE(key.ok());
  EXPECT_TRUE(key->empty());
}

TEST(LoadApiKeyTest, GivenAnOwnerOnlyKeyFileItReadsTheTrimmedKey) {
  std::string path = KeyFile("  sk-Hb3nK8wZ5cJ1dF0g\n", 0600);
  Result<Secret> key = LoadApiKey("", path, true, "anthropic:claude");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->Reveal(), "sk-Hb3nK8wZ5cJ1dF0g");
}

TEST(LoadApiKeyTest, GivenBothAKeyFileAndAVariableTheFileWins) {
  setenv("KFORGE_TEST_ENV_KEY", "sk-Qx7mR2pL9vT4wE6y", 1);
  std::string path = KeyFile("sk-Hb3nK8wZ5cJ1dF0g", 0400);
  Result<Secret> key = LoadApiKey("KFORGE_TEST_ENV_KEY", path, true, "openai:gpt-5");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->Reveal(), "sk-Hb3nK8wZ5cJ1dF0g");
}

TEST(LoadApiKeyTest, GivenAGroupOrWorldReadableKeyFileItRefusesAndSaysChmod) {
  for (mode_t mode : {0644, 0640, 0604, 0660, 0606}) {
    std::string path = KeyFile("sk-never-shown-in-errors-999", mode);
    Result<Secret> key = LoadApiKey("", path, true, "openai:gpt-5");
    ASSERT_FALSE(key.ok()) << std::oct << mode;
    EXPECT_NE(key.status().message().find("chmod 600 " + path), std::string::npos);
    EXPECT_EQ(key.status().message().find("sk-never-shown"), std::string::npos);
  }
}

TEST(LoadApiKeyTest, GivenABadKeyFileItSaysWhatIsWrongWithoutItsContent) {
  struct Case {
    std::string content;
    std::string expected;
  };
  for (const Case& c :
       {Case{"", "is empty"}, Case{"sk-line-one-xxxx\nsk-line-two-yyyy", "one line"}}) {
    Result<Secret> key = LoadApiKey("", KeyFile(c.content, 0600), true, "p");
    ASSERT_FALSE(key.ok());
    EXPECT_NE(key.status().message().find(c.expected), std::string::npos) << key.status().message();
    EXPECT_EQ(key.status().message().find("sk-line"), std::string::npos);
  }
  Result<Secret> missing = LoadApiKey("", "/nonexistent/kforge.key", true, "p");
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);
  Result<Secret> folder = LoadApiKey("", NewTestDir("keydir").string(), true, "p");
  EXPECT_FALSE(folder.ok());
}

TEST(RedactTest, GivenARegisteredKeyItIsReplacedEverywhere) {
  testing::TestKey();
  std::string text = std::string("Authorization: Bearer ") + kTestKey + " and again " + kTestKey;
  std::string redacted = Redact(text);
  EXPECT_EQ(redacted.find(kTestKey), std::string::npos);
  EXPECT_NE(redacted.find("Bearer [REDACTED] and again [REDACTED]"), std::string::npos);
}

TEST(RedactTest, GivenAPartlyMaskedEchoOfTheKeyItsFragmentsAreRemoved) {
  testing::TestKey();
  // As OpenAI echoes keys: the first and last characters around stars.
  std::string echo = "Incorrect API key provided: sk-kforge-test-7c0f*****-DO-NOT-LEAK.";
  std::string redacted = Redact(echo);
  EXPECT_EQ(redacted.find("sk-kforge-test-7c0f"), std::string::npos) << redacted;
  EXPECT_EQ(redacted.find("-DO-NOT-LEAK"), std::string::npos) << redacted;
  EXPECT_NE(redacted.find("Incorrect API key provided: [REDACTED]"), std::string::npos);
}

TEST(RedactTest, GivenTextWithoutKeysItIsUnchanged) {
  testing::TestKey();
  EXPECT_EQ(Redact("HTTP 401 invalid_api_key: try again"), "HTTP 401 invalid_api_key: try again");
}

TEST(RedactTest, GivenAShortSecretItIsNotRegistered) {
  RegisterSecret(Secret("abc"));
  EXPECT_EQ(Redact("abcdef abc"), "abcdef abc");
}

TEST(MakeLlmErrorTest, GivenAKeyInTheDetailTheMessageDoesNotContainIt) {
  testing::TestKey();
  Status status = MakeLlmError(LlmErrorKind::kAuth, "openai:gpt-5",
                               std::string("server said: bad key ") + kTestKey);
  EXPECT_EQ(status.message().find(kTestKey), std::string::npos);
  EXPECT_EQ(LlmErrorKindOf(status), LlmErrorKind::kAuth);
}

}  // namespace
}  // namespace kforge::llm
