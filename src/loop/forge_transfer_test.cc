// Specifications of cross-backend transfer in the forge loop (`kforge optimize --transfer`,
// docs/transfer.md), end to end: the bundled gelu kernels of one backend are given to a run for
// another (CUDA to HIP, CUDA to Vulkan, OpenCL to CUDA); the scripted model server
// (scripted_model_server.h) records what the generator was asked, and the run store records the
// same prompt. The scripted answers are the bundled kernels of the target backend: the test's
// script, not a model's output.
//
// What is asserted is the prompt, not the verdict: CUDA and HIP candidates compile here (nvcc,
// hipcc) but need a GPU to run, so their verdict is whatever this machine gives. The problem is
// gelu without its [seeds] table (written to the test's folder), so that the first thing the
// loop does is ask the model, on any machine.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/subprocess.h"
#include "llm/test_util.h"
#include "loop/forge.h"
#include "loop/scripted_model_server.h"
#include "store/run_store.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kGelu = fs::path(KFORGE_PROBLEMS_DIR) / "gelu";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Read(const fs::path& p) { return llm::testing::ReadFile(p); }

// A file of the kernel as the prompt must show it: its name, then its text under the label.
std::string Shown(const fs::path& file, const std::string& label) {
  return "`" + file.filename().string() + "`:\n\n```" + label + "\n" + Read(file) + "```\n";
}

// The answer a model gives: prose, then the files in blocks with the target's labels.
std::string Answer(const std::vector<std::pair<std::string, fs::path>>& blocks) {
  std::string out = "Here is the port.\n\n";
  for (const auto& [label, file] : blocks) out += "```" + label + "\n" + Read(file) + "```\n\n";
  return out;
}

// gelu's problem file without [seeds] and [candidates], beside a copy of its reference.
fs::path SeedlessGelu(const fs::path& dir) {
  std::istringstream in(Read(kGelu / "problem.toml"));
  std::string line, out;
  bool skip = false;
  while (std::getline(in, line)) {
    if (line.rfind('[', 0) == 0) skip = line == "[seeds]" || line == "[candidates]";
    if (!skip) out += line + "\n";
  }
  fs::create_directories(dir / "gelu");
  llm::testing::WriteFile(dir / "gelu" / "problem.toml", out);
  fs::copy_file(kGelu / "reference.cc", dir / "gelu" / "reference.cc");
  return dir / "gelu" / "problem.toml";
}

struct Workspace {
  explicit Workspace(const std::string& name) : dir(llm::testing::NewTestDir("transfer-" + name)) {
    Result<std::unique_ptr<RunStore>> s = RunStore::Open(dir / "runs.db");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) store = std::move(*s);
  }
  ForgeDeps Deps(llm::LlmClient* model) {
    return ForgeDeps{store.get(), runner.get(), model, model, progress.get(), dir / "runs"};
  }
  std::vector<LlmCallRow> Calls(int64_t run) const {
    Result<std::vector<LlmCallRow>> c = store->LlmCalls(run);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : std::vector<LlmCallRow>{};
  }
  int Runs() const {
    Result<std::vector<RunRow>> r = store->ListRuns();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? static_cast<int>(r->size()) : -1;
  }

  fs::path dir;
  std::unique_ptr<RunStore> store;
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  std::unique_ptr<ProgressSink> progress = NewSilentProgress();
};

// The user message of a recorded generation request (llm_calls.prompt_json).
std::string RecordedPrompt(const LlmCallRow& call) {
  json j = json::parse(call.prompt_json, nullptr, false);
  std::string out;
  for (const json& m : j.value("messages", json::array()))
    for (const json& part : m.value("parts", json::array())) out += part.value("text", "");
  return out;
}

// Small evaluations at gelu's quick size; functional generations only (no optimize pass).
ForgeOptions TransferOptions(const fs::path& problem, const std::string& backend,
                             const std::string& model) {
  ForgeOptions o;
  o.problem = problem.string();
  o.backend = backend;
  o.model = model;
  o.iterations = 0;
  o.functional_attempts = 1;
  o.eval.quick = true;
  o.eval.budget_ms = 30;
  o.eval.min_runs = 3;
  o.eval.max_runs = 10;
  o.eval.seeds = 2;
  o.eval.timeout_seconds = 60;
  o.eval.baselines = false;
  o.confirm = false;
  return o;
}

class ForgeTransferTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cache_dir_ = MakeScratchDir("transfertest-cache").value();
    chmod(cache_dir_.c_str(), 0755);
    setenv("KFORGE_CACHE_DIR", cache_dir_.c_str(), 1);
    setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 1);
    setenv("OPENAI_COMPAT_API_KEY", llm::testing::kTestKey, 1);
    setenv(llm::testing::kTestKeyEnv, llm::testing::kTestKey, 1);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(cache_dir_, ec);
  }

  static inline fs::path cache_dir_;
};

// Every file of the source kernel, under its label, and the ABI sentence naming both entry
// points: in the request the server received and in the prompt the run store recorded.
void ExpectTransferIn(const std::string& prompt,
                      const std::vector<std::pair<fs::path, std::string>>& files,
                      const std::string& source, const std::string& source_entry,
                      const std::string& target, const std::string& target_entry) {
  EXPECT_TRUE(Contains(prompt, "## A working implementation for another backend (" + source + ")"))
      << prompt;
  // The first file right under the section's first line (no fence around the kernel's blocks).
  EXPECT_TRUE(Contains(
      prompt, "keep this backend's ABI.\n\n" + Shown(files.front().first, files.front().second)))
      << prompt;
  for (const auto& [file, label] : files)
    EXPECT_TRUE(Contains(prompt, Shown(file, label))) << file << " under ```" << label << " in:\n"
                                                      << prompt;
  EXPECT_TRUE(Contains(prompt, "This `" + source + "` kernel exports `" + source_entry + "`"))
      << prompt;
  EXPECT_TRUE(
      Contains(prompt, "your `" + target + "` kernel must export `" + target_entry + "` instead"))
      << prompt;
}

// Runs gelu on `target` with `transfer` and one scripted answer; checks the first generation.
void ExpectPortPrompt(const std::string& name, const std::string& target, const fs::path& transfer,
                      const std::vector<std::pair<fs::path, std::string>>& files,
                      const std::string& source, const std::string& source_entry,
                      const std::string& target_entry, const std::string& answer) {
  ScriptedModelServer server(Protocol::kOpenAiChat, {answer});
  ScriptedClient c = ClientFor(server, Protocol::kOpenAiChat);
  ASSERT_TRUE(c.client);
  Workspace w(name);
  ForgeDeps deps = w.Deps(c.client.get());
  ForgeOptions o = TransferOptions(SeedlessGelu(w.dir), target, c.model);
  o.transfer_file = transfer.string();  // no --transfer-backend: inferred
  // Without a GPU a CUDA or HIP candidate may end the run as failed (no device to judge on):
  // whatever the machine gives, the run exists and the prompt is what is specified.
  Result<ForgeSummary> s = StartRun(o, deps);
  Result<std::vector<RunRow>> runs = w.store->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u) << (s.ok() ? "" : s.status().ToString());
  const int64_t run_id = (*runs)[0].id;

  std::vector<ScriptedModelServer::Exchange> gens = Generations(server.exchanges());
  ASSERT_EQ(gens.size(), 1u);
  ExpectTransferIn(gens[0].prompt, files, source, source_entry, target, target_entry);
  std::vector<LlmCallRow> calls = w.Calls(run_id);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].agent, "generator");
  ExpectTransferIn(RecordedPrompt(calls[0]), files, source, source_entry, target, target_entry);

  // The run records the inferred backend and the file's absolute path (for a resume elsewhere).
  Result<RunRow> run = w.store->GetRun(run_id);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  json config = json::parse(run->config_json);
  EXPECT_EQ(config.value("transfer_backend", ""), source);
  EXPECT_EQ(config.value("transfer_file", ""), fs::absolute(transfer).lexically_normal().string());
}

TEST_F(ForgeTransferTest,
       GivenACudaKernelForHipThePromptShowsItUnderACudaFenceWithBothEntryPoints) {
  const fs::path cu = kGelu / "candidates" / "vec4_cuda.cu";
  ExpectPortPrompt("cuda-hip", "hip", cu, {{cu, "cuda"}}, "cuda", "kf_cuda_run", "kf_hip_run",
                   Answer({{"hip", kGelu / "candidates" / "vec4_hip.hip"}}));
}

TEST_F(ForgeTransferTest, GivenAnOpenClKernelSourceForCudaThePromptShowsItsLauncherAndItsKernels) {
  // The .cl given directly: its launcher beside it (naive_opencl.cpp) comes too, first.
  const fs::path cl = kGelu / "seeds" / "naive_opencl.cl";
  ExpectPortPrompt("opencl-cuda", "cuda", cl,
                   {{kGelu / "seeds" / "naive_opencl.cpp", "cpp"}, {cl, "opencl"}}, "opencl",
                   "kf_cl_run", "kf_cuda_run",
                   Answer({{"cuda", kGelu / "candidates" / "vec4_cuda.cu"}}));
}

// CUDA to Vulkan, through a repair: a first answer whose shader does not compile (glslang runs
// here), then the bundled kernel. The repair prompt shows the failed candidate's launcher and
// shader under the Vulkan labels (cpp, glsl), and the CUDA kernel again.
TEST_F(ForgeTransferTest,
       GivenACudaKernelForVulkanTheRepairPromptLabelsTheCandidateAndKeepsTheTransfer) {
  const fs::path cu = kGelu / "seeds" / "naive_cuda.cu";
  const fs::path launcher = kGelu / "candidates" / "vec4_vulkan.cpp",
                 shader = kGelu / "candidates" / "vec4_vulkan.comp";
  const std::string broken_shader =
      "#version 450\nlayout(local_size_x = 64) in;\nvoid main() { this is not glsl; }\n";
  const std::string broken =
      "```cpp\n" + Read(launcher) + "```\n\n```glsl\n" + broken_shader + "```\n";
  ScriptedModelServer server(Protocol::kOpenAiChat,
                             {broken, Answer({{"cpp", launcher}, {"glsl", shader}})});
  ScriptedClient c = ClientFor(server, Protocol::kOpenAiChat);
  ASSERT_TRUE(c.client);
  Workspace w("cuda-vulkan");
  ForgeDeps deps = w.Deps(c.client.get());
  ForgeOptions o = TransferOptions(SeedlessGelu(w.dir), "vulkan", c.model);
  o.functional_attempts = 2;
  o.transfer_file = cu.string();
  Result<ForgeSummary> s = StartRun(o, deps);
  ASSERT_TRUE(s.ok()) << s.status().ToString();

  std::vector<ScriptedModelServer::Exchange> gens = Generations(server.exchanges());
  ASSERT_EQ(gens.size(), 2u);
  for (const auto& g : gens)
    ExpectTransferIn(g.prompt, {{cu, "cuda"}}, "cuda", "kf_cuda_run", "vulkan", "kf_vk_run");
  Result<std::vector<AttemptRow>> attempts = w.store->Attempts(s->run_id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_GE(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].status, "compile_error") << (*attempts)[0].verdict_json;
  const std::string repair = gens[1].prompt;
  EXPECT_TRUE(Contains(repair, "## Your previous candidate\n\n```cpp\n" + Read(launcher) +
                                   "```\n```glsl\n" + broken_shader + "```\n"))
      << repair;
  std::vector<LlmCallRow> calls = w.Calls(s->run_id);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(Contains(RecordedPrompt(calls[1]), "```glsl\n" + broken_shader + "```\n"));
}

TEST_F(ForgeTransferTest, GivenAnUnknownTransferBackendNoRunStartsAndTheErrorListsTheBackends) {
  ScriptedModelServer server(Protocol::kOpenAiChat, {});
  ScriptedClient c = ClientFor(server, Protocol::kOpenAiChat);
  ASSERT_TRUE(c.client);
  Workspace w("unknown-backend");
  ForgeDeps deps = w.Deps(c.client.get());
  ForgeOptions o = TransferOptions(SeedlessGelu(w.dir), "hip", c.model);
  o.transfer_file = (kGelu / "seeds" / "naive_cuda.cu").string();
  o.transfer_backend = "cuda-graphs";
  Result<ForgeSummary> s = StartRun(o, deps);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.status().message(),
                       "unknown --transfer-backend 'cuda-graphs'; the backends are: "))
      << s.status().message();
  EXPECT_TRUE(Contains(s.status().message(), "vulkan")) << s.status().message();
  EXPECT_EQ(w.Runs(), 0);
  EXPECT_EQ(server.received(), 0);
}

TEST_F(ForgeTransferTest, GivenAMissingTransferFileNoRunStartsAndTheErrorSaysWhatToGive) {
  ScriptedModelServer server(Protocol::kOpenAiChat, {});
  ScriptedClient c = ClientFor(server, Protocol::kOpenAiChat);
  ASSERT_TRUE(c.client);
  Workspace w("missing-file");
  ForgeDeps deps = w.Deps(c.client.get());
  ForgeOptions o = TransferOptions(SeedlessGelu(w.dir), "vulkan", c.model);
  o.transfer_file = (w.dir / "gone.cu").string();
  Result<ForgeSummary> s = StartRun(o, deps);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(s.status().message(), "gone.cu: no such file (the kernel to port"))
      << s.status().message();
  EXPECT_EQ(w.Runs(), 0);
  EXPECT_EQ(server.received(), 0);
}

// A run whose generator call failed is resumed after its transfer kernel was removed: the
// resume stops before any call and says to put the kernel back; once it is back, the resumed
// run's prompt carries it.
TEST_F(ForgeTransferTest, GivenAResumeWhoseTransferKernelIsGoneItSaysToPutItBackAndThenCarriesIt) {
  Workspace w("resume");
  const fs::path kernel = w.dir / "port_me.cu";
  llm::testing::WriteFile(kernel, Read(kGelu / "seeds" / "naive_cuda.cu"));
  const fs::path problem = SeedlessGelu(w.dir);
  int64_t run_id = 0;
  {
    ScriptedModelServer empty(Protocol::kOpenAiChat, {});  // answers 400: the script is exhausted
    ScriptedClient c = ClientFor(empty, Protocol::kOpenAiChat);
    ASSERT_TRUE(c.client);
    ForgeDeps deps = w.Deps(c.client.get());
    ForgeOptions o = TransferOptions(problem, "vulkan", c.model);
    o.transfer_file = kernel.string();
    Result<ForgeSummary> s = StartRun(o, deps);
    ASSERT_FALSE(s.ok()) << "the generator call should have failed";
    Result<std::vector<RunRow>> runs = w.store->ListRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u);
    run_id = (*runs)[0].id;
  }
  fs::remove(kernel);
  ScriptedModelServer server(Protocol::kOpenAiChat,
                             {Answer({{"cpp", kGelu / "candidates" / "vec4_vulkan.cpp"},
                                      {"glsl", kGelu / "candidates" / "vec4_vulkan.comp"}})});
  ScriptedClient c = ClientFor(server, Protocol::kOpenAiChat);
  ASSERT_TRUE(c.client);
  ForgeDeps deps = w.Deps(c.client.get());
  Result<ForgeSummary> gone = ResumeRun(run_id, deps);
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(Contains(gone.status().message(),
                       "run " + std::to_string(run_id) +
                           " cannot go on without its --transfer kernel (put it back where it "
                           "was, then `kforge resume " +
                           std::to_string(run_id) + "`)"))
      << gone.status().message();
  EXPECT_TRUE(Contains(gone.status().message(), "port_me.cu: no such file"))
      << gone.status().message();
  EXPECT_EQ(server.received(), 0);

  llm::testing::WriteFile(kernel, Read(kGelu / "seeds" / "naive_cuda.cu"));
  Result<ForgeSummary> back = ResumeRun(run_id, deps);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  std::vector<ScriptedModelServer::Exchange> gens = Generations(server.exchanges());
  ASSERT_EQ(gens.size(), 1u);
  ExpectTransferIn(gens[0].prompt, {{kernel, "cuda"}}, "cuda", "kf_cuda_run", "vulkan",
                   "kf_vk_run");
}

}  // namespace
}  // namespace kforge
