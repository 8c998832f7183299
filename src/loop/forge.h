// The forge loop: from a problem and a backend to the fastest verified kernel the budget
// allows, with every step recorded in the run store.
//
//   seed        evaluate the problem's seed kernel (the baseline)
//   functional  generate -> evaluate -> feed the verdict back, until a candidate is correct
//   optimize    profile the best kernel -> analyst recommendation -> N candidates -> evaluate;
//               a broken candidate goes back through functional repair; keep the best
//   offline     without an LLM: the rule-based analyst and the tuner (agent/tuner.h)
//   confirm     a kernel that measured faster than the best is re-timed against it (and the
//               seed) interleaved (ConfirmInterleaved) and becomes the best only when the
//               confirmed ratio says it is faster; the tuner confirms its top configurations
//               and picks by confirmed ratio; the final best is confirmed against the seed
//
// Runs are resumable: all state is derived from the store (docs/run-store.md), so after a
// kill -9, ResumeRun continues with nothing lost and nothing counted twice.
#ifndef KFORGE_LOOP_FORGE_H_
#define KFORGE_LOOP_FORGE_H_

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/prompt_fit.h"
#include "kforge/eval.h"
#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "loop/progress.h"
#include "store/run_store.h"

namespace kforge {

class ProcessRunner;

struct ForgeOptions {
  std::string problem;           // name or path (FindProblem)
  std::string backend = "cpp";
  std::string model;             // LLM model string; empty = offline mode
  std::string analyst_model;     // empty = `model`
  // Sampling per role, sent with each request: temperature, output cap (max_tokens), seed.
  // Unset fields leave the model's settings in charge (docs/llm.md, "Sampling per role").
  llm::RoleSettings generator_llm, analyst_llm;
  // Prompt profile and context window per role, from the models' settings (and --prompt-profile):
  // prompts are shrunk to fit, or refused with [context_too_long] (docs/loop.md, "Prompt size").
  PromptLimits generator_prompt, analyst_prompt;
  int iterations = 5;            // optimization passes
  int candidates = 1;            // candidates per pass, generated in parallel
  // Candidates of a pass judged at once (each in its own sandboxed processes; timed runs take
  // the device one at a time); their verdicts are recorded in order. 0: all of them where the
  // device is not the host CPU (eval/compile_farm.h MayJudgeWhileBuilding), else 1.
  int judge_jobs = 0;
  int functional_attempts = 4;   // generations to reach a correct kernel (and per repair)
  int max_evaluations = 40;      // offline tuner: evaluations at most
  int64_t max_tokens = 0;        // 0 = no limit
  double max_cost_usd = 0;       // 0 = no limit
  double max_seconds = 0;        // wall time of the run; 0 = no limit
  double sol_target = 0;         // stop once SOL% reaches this; 0 = never
  int patience = 2;              // stop after this many passes without gain
  std::string instructions;      // added to every generation prompt
  std::vector<std::string> context_files;
  std::vector<std::string> deny; // code patterns candidates may not contain
  // --transfer: a working kernel for another backend, shown whole in every generation prompt
  // (agent/transfer.h, docs/transfer.md), and its backend ("": inferred from the file).
  // StartRun checks both and records the backend and the file's absolute path.
  std::string transfer_file;
  std::string transfer_backend;
  EvalOptions eval;
  bool confirm = true;           // confirmation of new bests and of the tuner's top configurations
  int confirm_top = 3;           // tuner: configurations re-timed by confirmation
  ConfirmOptions confirm_options;

  nlohmann::json ToJson() const;
  static ForgeOptions FromJson(const nlohmann::json& j);
};

struct ForgeDeps {
  RunStore* store = nullptr;
  ProcessRunner* runner = nullptr;
  llm::LlmClient* generator = nullptr;  // null in offline mode
  llm::LlmClient* analyst = nullptr;    // null: the rule-based analyst
  ProgressSink* progress = nullptr;
  std::filesystem::path artifacts;      // <workspace>/runs; a folder per run inside
};

struct ForgeSummary {
  int64_t run_id = 0;
  std::string status, stop_reason;
  int64_t best_attempt = -1;
  double best_ms = 0, seed_ms = 0, sol_percent = 0;
  std::filesystem::path best_path;   // the best kernel's main file, or empty
  int64_t attempts = 0, evaluations_exhaustive = 0;
  int64_t tune_evaluations = 0;      // offline mode: configurations evaluated
  std::vector<Confirmation> confirmed;  // the best kernel's confirmations (against the seed first)
  double confirm_seconds = 0;        // wall time spent confirming, this run
  RunTotals totals;
};

// Fails before the run exists when the problem, a --size or --transfer is wrong (a --transfer
// kernel that cannot be read, an unknown or ambiguous backend: InvalidArgument or NotFound with
// what to do).
Result<ForgeSummary> StartRun(const ForgeOptions& options, ForgeDeps& deps);

// One line on why an attempt failed, as the repair prompts' memory of failed approaches shows
// it: the verdict message's first line that names an error (else its first line), file names
// instead of temporary paths, at most `max_chars` cut at a word boundary (" ..." marks a cut).
std::string FailureSummary(const std::string& message, size_t max_chars);
// A run started with --transfer reads its kernel again; when it is gone the run is marked failed
// with a message that says to put it back and resume.
Result<ForgeSummary> ResumeRun(int64_t run_id, ForgeDeps& deps);

// <workspace>/.kforge: $KFORGE_WORKSPACE, else ./.kforge.
std::filesystem::path WorkspaceDir();

}  // namespace kforge

#endif  // KFORGE_LOOP_FORGE_H_
