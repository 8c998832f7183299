// Specifications of the exec: client. Small shell scripts, written by each test into its own
// folder, stand in for a coding-agent CLI; they run through the real process runner. They copy
// what they see (the prompt, their stdin, their environment) into the test's folder, which the
// key-leak check of the test program also scans for the test key.
#include "llm/exec.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/scoped_env.h"
#include "base/subprocess.h"
#include "kforge/llm/config.h"
#include "kforge/llm/secrets.h"
#include "kforge/llm/session.h"
#include "kforge/source_dir.h"
#include "llm/test_util.h"

namespace kforge::llm {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ChatRequest Request() {
  ChatRequest request;
  request.system = "You write fast kernels.";
  request.messages.push_back(Message::User("Make gelu faster."));
  request.files.push_back({"candidate.cc", "// the parent kernel\n"});
  return request;
}

class ExecClientTest : public ::testing::Test {
 protected:
  // An executable /bin/sh script in the test's folder. $SEEN in it is that folder.
  std::string Script(const std::string& body) {
    fs::path path = dir_ / "agent.sh";
    testing::WriteFile(path, "#!/bin/sh\nSEEN='" + dir_.string() + "'\n" + body);
    fs::permissions(path, fs::perms(0755));
    return path.string();
  }

  ExecSettings Settings(std::vector<std::string> command) const {
    ExecSettings settings;
    settings.name = "exec:test";
    settings.command = std::move(command);
    settings.workdir_root = dir_;
    settings.timeout = milliseconds(30000);
    return settings;
  }

  std::unique_ptr<LlmClient> Client(ExecSettings settings) {
    ExecEnv env;
    env.runner = Runner();
    env.clock = SystemClock();
    env.ledger = ledger_;
    env.log = [this](std::string_view line) { log_ += line; };
    env.environment = ProcessEnvironment();
    env.key_env_names = ApiKeyEnvNames(LlmConfig{});
    return NewExecClient(std::move(settings), std::move(env));
  }

  // The work folders left in the test's folder.
  int WorkFolders() const {
    int n = 0;
    for (const auto& entry : fs::directory_iterator(dir_))
      n += entry.path().filename().string().rfind("kforge-exec-", 0) == 0;
    return n;
  }

  static std::shared_ptr<ProcessRunner> Runner() {
    static std::shared_ptr<ProcessRunner> runner = NewSandboxRunner();
    return runner;
  }

  fs::path dir_ = testing::NewTestDir("exec");
  std::shared_ptr<UsageLedger> ledger_ = std::make_shared<UsageLedger>();
  std::string log_;
};

// ---- The answer ------------------------------------------------------------------------------

TEST_F(ExecClientTest, GivenACommandThatWritesACandidateFileThatFileIsTheAnswer) {
  std::string script = Script(
      "cp \"$1\" \"$SEEN/prompt.md\"\n"
      "cp \"$(dirname \"$1\")/input/candidate.cc\" \"$2/candidate.cc\"\n"
      "echo '// edited by the agent' >> \"$2/candidate.cc\"\n"
      "echo 'thinking out loud'\n");
  Result<ChatResponse> response =
      Client(Settings({script, "{prompt}", "{out}"}))->Complete(Request());

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->text,
            "```cpp candidate.cc\n// the parent kernel\n// edited by the agent\n```\n");
  EXPECT_EQ(response->finish_reason, FinishReason::kStop);
  EXPECT_EQ(response->model, "exec:test");
  EXPECT_EQ(response->usage, Usage{});
  EXPECT_FALSE(response->cost_usd.has_value());
  EXPECT_GT(response->latency.count(), 0);
  EXPECT_TRUE(Contains(response->reasoning, "the answer came from files candidate.cc"));
  EXPECT_TRUE(Contains(response->reasoning, "stdout (tail):\nthinking out loud"));
  EXPECT_EQ(ledger_->Total().calls, 1);
  EXPECT_EQ(ledger_->Total().unpriced_calls, 1);
  EXPECT_EQ(WorkFolders(), 0) << "a successful call's work folder is removed";
}

TEST_F(ExecClientTest, GivenARequestTheCommandSeesItAsMarkdownWithItsFiles) {
  std::string script = Script(
      "cp \"$1\" \"$SEEN/prompt.md\"\n"
      "cp \"$2\" \"$SEEN/prompt.json\"\n"
      "ls \"$3\" > \"$SEEN/input.txt\"\n"
      "echo done\n");
  ChatRequest request = Request();
  request.messages.push_back(Message::Assistant("An earlier answer."));
  request.messages.push_back(Message::User("It did not compile."));
  auto response =
      Client(Settings({script, "{prompt}", "{prompt_json}", "{input}"}))->Complete(request);

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  std::string prompt = testing::ReadFile(dir_ / "prompt.md");
  EXPECT_TRUE(Contains(prompt, "# How to answer")) << prompt;
  EXPECT_TRUE(Contains(prompt, "candidate.cc for C++")) << prompt;
  EXPECT_TRUE(Contains(prompt, "\n# System\n\nYou write fast kernels.\n")) << prompt;
  EXPECT_TRUE(Contains(prompt,
                       "\n# User\n\nMake gelu faster.\n\n# Assistant\n\nAn earlier "
                       "answer.\n\n# User\n\nIt did not compile.\n"))
      << prompt;
  std::string json = testing::ReadFile(dir_ / "prompt.json");
  EXPECT_TRUE(Contains(json, "\"Make gelu faster.\"")) << json;
  EXPECT_TRUE(Contains(json, "\"files\": [\n  \"candidate.cc\"")) << json;
  EXPECT_EQ(testing::ReadFile(dir_ / "input.txt"), "candidate.cc\n");
}

TEST_F(ExecClientTest, GivenNoFileInTheAnswerFolderItsStdoutIsTheAnswer) {
  ExecSettings settings =
      Settings({Script("cat > \"$SEEN/stdin.md\"\n"
                       "printf '\\n  {\"bottleneck\": \"memory\"}\\n\\n'\n")});
  settings.stdin_prompt = true;
  auto response = Client(settings)->Complete(Request());

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->text, "{\"bottleneck\": \"memory\"}");
  EXPECT_TRUE(Contains(response->reasoning, "the answer came from stdout"));
  EXPECT_TRUE(Contains(testing::ReadFile(dir_ / "stdin.md"), "# User\n\nMake gelu faster."))
      << "stdin_prompt sends prompt.md on stdin";
}

TEST_F(ExecClientTest, GivenSeveralFilesTheCandidateComesFirstFencedAndTheAnswerFileLast) {
  std::string script = Script(
      "printf 'Unrolled by four.' > \"$1/answer.md\"\n"
      "printf '__kernel void k() {}\\n' > \"$1/candidate.cl\"\n"
      "printf 'int main() { /* ``` */ }\\n' > \"$1/candidate.cc\"\n"
      "printf 'x' > \"$1/.hidden\"\n"
      "echo 'ignored: files came back'\n");
  auto response = Client(Settings({script, "{out}"}))->Complete(Request());

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->text,
            "````cpp candidate.cc\nint main() { /* ``` */ }\n````\n\n"
            "```opencl candidate.cl\n__kernel void k() {}\n```\n\n"
            "Unrolled by four.\n");
}

TEST_F(ExecClientTest, GivenKeepWorkdirTheWorkFolderStaysAndTheLogNamesIt) {
  ExecSettings settings = Settings({Script("echo answer\n")});
  settings.keep_workdir = true;
  auto response = Client(settings)->Complete(Request());

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(WorkFolders(), 1);
  EXPECT_TRUE(Contains(log_, "work folder kept: " + dir_.string() + "/kforge-exec-")) << log_;
}

// ---- Failures --------------------------------------------------------------------------------

TEST_F(ExecClientTest, GivenACommandThatFailsItIsACommandFailedErrorWithItsStderrTail) {
  std::string script =
      Script("echo 'starting'\necho 'error: not logged in; run login' >&2\nexit 3\n");
  auto response = Client(Settings({script}))->Complete(Request());

  ASSERT_FALSE(response.ok());
  const std::string& message = response.status().message();
  EXPECT_EQ(LlmErrorKindOf(response.status()), LlmErrorKind::kCommandFailed) << message;
  EXPECT_TRUE(Contains(message, "exec:test: [command_failed]")) << message;
  EXPECT_TRUE(Contains(message, "exited with code 3")) << message;
  EXPECT_TRUE(Contains(message, "error: not logged in; run login")) << message;
  EXPECT_TRUE(Contains(message, "is kept")) << message;
  EXPECT_EQ(WorkFolders(), 1) << "a failed call's work folder is kept for a look";
  EXPECT_EQ(ledger_->Total().calls, 0);
}

TEST_F(ExecClientTest, GivenAHangingCommandItIsStoppedAtTheTimeoutWithATimeoutError) {
  ExecSettings settings = Settings({Script("echo 'waiting for a login' >&2\nsleep 60\n")});
  settings.timeout = milliseconds(1000);
  const auto start = std::chrono::steady_clock::now();
  auto response = Client(settings)->Complete(Request());

  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  ASSERT_FALSE(response.ok());
  const std::string& message = response.status().message();
  EXPECT_EQ(LlmErrorKindOf(response.status()), LlmErrorKind::kTimeout) << message;
  EXPECT_TRUE(Contains(message, "did not finish within timeout_s (1 s)")) << message;
  EXPECT_TRUE(Contains(message, "waiting for a login")) << message;
}

TEST_F(ExecClientTest, GivenACommandThatWritesNothingItIsABadResponseThatSaysWhereToWrite) {
  auto response = Client(Settings({Script("exit 0\n")}))->Complete(Request());

  ASSERT_FALSE(response.ok());
  const std::string& message = response.status().message();
  EXPECT_EQ(LlmErrorKindOf(response.status()), LlmErrorKind::kBadResponse) << message;
  EXPECT_TRUE(Contains(message, "wrote no file in")) << message;
  EXPECT_TRUE(Contains(message, "{out}/candidate.<ext>")) << message;
}

TEST_F(ExecClientTest, GivenAProgramThatDoesNotExistItCannotStart) {
  auto response = Client(Settings({(dir_ / "no-such-agent").string()}))->Complete(Request());

  ASSERT_FALSE(response.ok());
  EXPECT_EQ(LlmErrorKindOf(response.status()), LlmErrorKind::kCommandFailed);
  EXPECT_TRUE(Contains(response.status().message(), "could not start"))
      << response.status().message();
}

// ---- Keys ------------------------------------------------------------------------------------

TEST(ExecEnvironmentTest, GivenKforgesEnvironmentItWithholdsKeysUnlessPassedThrough) {
  Secret key = testing::TestKey();  // Registered, as a loaded key is.
  Environment environment = {{"PATH", "/usr/bin"},
                             {"HOME", "/home/u"},
                             {"OPENAI_API_KEY", "sk-test-openai"},
                             {"GEMINI_API_KEY", "g"},
                             {"MY_GATEWAY", "x"},
                             {"SOME_VENDOR_API_KEY", "v"},
                             {"KFORGE_LLM", "openai:gpt-5"},
                             {"AUTH_HEADER", "Bearer " + key.Reveal()},
                             {"ANTHROPIC_API_KEY", "sk-ant-mine"}};
  Environment kept = ScrubEnvironment(environment, {"MY_GATEWAY"}, {"ANTHROPIC_API_KEY"});

  EXPECT_EQ(kept,
            (Environment{
                {"PATH", "/usr/bin"}, {"HOME", "/home/u"}, {"ANTHROPIC_API_KEY", "sk-ant-mine"}}));
}

// Through the session, as `kforge optimize --llm exec:agent` makes the client.
TEST(ExecSessionTest, GivenAnApiKeyInKforgesEnvironmentTheCommandDoesNotSeeIt) {
  fs::path dir = testing::NewTestDir("exec-env");
  fs::path script = dir / "agent.sh";
  testing::WriteFile(script, "#!/bin/sh\nenv > '" + (dir / "env.txt").string() +
                                 "'\necho '```cpp\nint x;\n```'\n");
  fs::permissions(script, fs::perms(0755));
  ScopedEnv openai("OPENAI_API_KEY", testing::kTestKey);
  ScopedEnv anthropic("ANTHROPIC_API_KEY", "sk-ant-test-passed-through");
  ScopedEnv visible("KFORGE_EXEC_TEST_VISIBLE", "seen");
  Result<LlmConfig> config =
      ParseLlmConfig("[exec.agent]\ncommand = [\"" + script.string() + "\"]\nworkdir_root = \"" +
                         dir.string() + "\"\nenv_passthrough = [\"ANTHROPIC_API_KEY\"]\n",
                     "test.toml", dir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  LlmDeps deps;
  deps.log = [](std::string_view) {};
  auto session = LlmSession::Create(*config, deps);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto client = (*session)->NewClient("exec:agent");
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  auto response = (*client)->Complete(Request());

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ((*client)->Describe(), "exec:agent");
  EXPECT_EQ(response->text, "```cpp\nint x;\n```");
  std::string env = testing::ReadFile(dir / "env.txt");
  EXPECT_FALSE(Contains(env, "OPENAI_API_KEY")) << env;
  EXPECT_FALSE(Contains(env, testing::kTestKey)) << env;
  EXPECT_FALSE(Contains(env, "KFORGE_")) << env;
  EXPECT_TRUE(Contains(env, "ANTHROPIC_API_KEY=sk-ant-test-passed-through")) << env;
  EXPECT_TRUE(Contains(env, "PATH=")) << env;
}

// ---- Configuration ---------------------------------------------------------------------------

TEST(ExecConfigTest, GivenAnExecTableEveryKeyIsRead) {
  Result<LlmConfig> config = ParseLlmConfig(
      "[exec.claude]\n"
      "command = [\"claude\", \"-p\", \"--add-dir\", \"{workdir}\"]\n"
      "timeout_s = 900\ncwd = \"agents\"\nkeep_workdir = true\nstdin_prompt = true\n"
      "env_passthrough = [\"ANTHROPIC_API_KEY\"]\nmax_concurrency = 2\n",
      "llm.toml", "/cfg");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Result<ExecSettings> settings = ResolveExec("exec:claude", *config);
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->name, "exec:claude");
  EXPECT_EQ(settings->command,
            (std::vector<std::string>{"claude", "-p", "--add-dir", "{workdir}"}));
  EXPECT_EQ(settings->timeout, milliseconds(900000));
  EXPECT_EQ(settings->cwd, "/cfg/agents");
  EXPECT_TRUE(settings->keep_workdir);
  EXPECT_TRUE(settings->stdin_prompt);
  EXPECT_EQ(settings->env_passthrough, std::vector<std::string>{"ANTHROPIC_API_KEY"});
  EXPECT_EQ(settings->max_concurrency, 2);
}

TEST(ExecConfigTest, GivenAnUnknownPlaceholderTheConfigIsRejected) {
  Result<LlmConfig> config =
      ParseLlmConfig("[exec.x]\ncommand = [\"agent\", \"{promt}\"]\n", "llm.toml", "/cfg");
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(Contains(config.status().message(),
                       "exec.x.command has the unknown placeholder "
                       "{promt}"))
      << config.status().message();
}

TEST(ExecConfigTest, GivenNoCommandTheConfigIsRejected) {
  Result<LlmConfig> config = ParseLlmConfig("[exec.x]\ntimeout_s = 5\n", "llm.toml", "/cfg");
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(Contains(config.status().message(), "exec.x.command must be set"));
}

TEST(ExecConfigTest, GivenAPathWithoutAnEntryItRunsThatProgramWithThePromptAndTheOutFolder) {
  Result<ExecSettings> settings = ResolveExec("exec:/bin/true", LlmConfig{});
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->command, (std::vector<std::string>{"/bin/true", "{prompt}", "{out}"}));
  EXPECT_EQ(settings->name, "exec:/bin/true");
}

TEST(ExecConfigTest, GivenAnUnknownNameTheErrorSaysWhatIsConfigured) {
  Result<LlmConfig> config =
      ParseLlmConfig("[exec.codex]\ncommand = [\"codex\", \"exec\"]\n", "llm.toml", "/cfg");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Result<ExecSettings> settings = ResolveExec("exec:claude", *config);
  ASSERT_FALSE(settings.ok());
  EXPECT_EQ(LlmErrorKindOf(settings.status()), LlmErrorKind::kConfig);
  EXPECT_TRUE(Contains(settings.status().message(), "configured: codex"))
      << settings.status().message();
  EXPECT_FALSE(ResolveExec("exec:./no-such-script", *config).ok());
}

TEST(ExecConfigTest, GivenTheExampleConfigItsClaudeAndCodexEntriesResolve) {
  Result<LlmConfig> config =
      LoadLlmConfig(fs::path(KFORGE_SOURCE_DIR) / "src/llm/llm.example.toml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Result<ExecSettings> claude = ResolveExec("exec:claude", *config);
  ASSERT_TRUE(claude.ok()) << claude.status().ToString();
  EXPECT_EQ(claude->command.front(), "claude");
  EXPECT_EQ(claude->timeout, milliseconds(1200000));
  Result<ExecSettings> codex = ResolveExec("exec:codex", *config);
  ASSERT_TRUE(codex.ok()) << codex.status().ToString();
  EXPECT_EQ((std::vector<std::string>(codex->command.begin(), codex->command.begin() + 2)),
            (std::vector<std::string>{"codex", "exec"}));
}

}  // namespace
}  // namespace kforge::llm
