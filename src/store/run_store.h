// RunStore: the record of every forge run, in one SQLite database per workspace
// (<workspace>/.kforge/runs.db; format in docs/run-store.md).
//
// Everything the loop does is written here as it happens, each write its own transaction in
// WAL mode with synchronous=FULL, so a run killed at any moment (kill -9) loses nothing that
// was recorded and `kforge resume` can continue from the database alone. Totals (tokens, cost,
// attempts) are always computed from the rows, never kept as counters, so nothing is counted
// twice after a resume.
//
// Thread-safety: one RunStore may be used from several threads (calls are serialized inside).
#ifndef KFORGE_STORE_RUN_STORE_H_
#define KFORGE_STORE_RUN_STORE_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/status.h"

namespace kforge {

struct RunRow {
  int64_t id = 0;
  std::string problem;        // problem name
  std::string problem_path;   // problem.toml it was loaded from
  std::string backend;
  std::string model;          // LLM model string, or "offline"
  std::string status;         // "running", "done", "failed", "interrupted"
  std::string stop_reason;    // why it ended ("budget: iterations", "sol threshold", ...)
  std::string config_json;    // every option the run was started with (budgets, flags)
  std::string created_at, updated_at;  // ISO 8601 UTC
  int64_t best_attempt = -1;  // attempt number of the best correct kernel, -1 if none
  double best_ms = 0;
  double seed_ms = 0;
};

struct AttemptRow {
  int64_t run_id = 0;
  int64_t number = 0;          // 1, 2, ... within the run
  int64_t iteration = 0;       // loop iteration it belongs to
  std::string phase;           // "seed", "functional", "optimize", "tune"
  std::string state;           // "generating", "evaluating", "done"
  int64_t parent = -1;         // attempt it was derived from
  std::string source;          // candidate source (the main file)
  std::string extra_files_json;  // {"name.cl": "..."} for multi-file candidates
  std::string source_hash;
  std::string params_json;     // tuner parameters, if any
  std::string status;          // verdict status once evaluated
  std::string verdict_json;
  double median_ms = 0;
  double sol_percent = 0;
  std::string created_at;
  // Where its time went, in seconds: {"queue": candidate ready -> judging began, "compile",
  // "check", "time" (the worker's check and timing phases), "evaluate": the whole judgement}.
  std::string seconds_json;
};

struct LlmCallRow {
  int64_t id = 0;
  int64_t run_id = 0;
  int64_t attempt = -1;        // attempt it produced or analysed
  std::string agent;           // "generator", "analyst"
  std::string model;
  std::string prompt_json;     // the full request (system + messages), no keys
  std::string response_text;
  std::string finish_reason;
  int64_t input_tokens = 0, output_tokens = 0, cached_tokens = 0;
  double cost_usd = 0;
  double latency_ms = 0;
  std::string request_id;
  std::string error;           // non-empty when the call failed
  // How the answer came: {"streamed", "first_token_ms", "server_ms", "queue_ms",
  // "tokens_per_s", "usage_estimated"}, each present when known (docs/run-store.md).
  std::string details_json = "{}";
  std::string created_at;
  // The prompt's size as kforge measured it before sending (the server's count is input_tokens):
  // bytes of its text, kforge's token estimate (agent/prompt_fit.h), and what was cut to fit the
  // context window ("" = nothing). 0 and "" in calls recorded before schema version 2.
  int64_t prompt_chars = 0, prompt_tokens_estimate = 0;
  std::string prompt_shrunk;
};

struct RecommendationRow {
  int64_t run_id = 0;
  int64_t attempt = 0;         // the attempt it analysed
  std::string source;          // "llm" or "rules"
  std::string json;            // {bottleneck, evidence, change, expected_gain}
};

struct StageRow {
  int64_t run_id = 0;
  int64_t attempt = -1;
  std::string stage;           // "generate", "compile+evaluate", "profile", "analyse", ...
  double seconds = 0;
};

struct RunTotals {
  int64_t attempts = 0, correct = 0;
  int64_t llm_calls = 0;         // answered calls
  int64_t failed_llm_calls = 0;  // calls that ended in an error (their rows keep the error)
  int64_t input_tokens = 0, output_tokens = 0, cached_tokens = 0;
  double cost_usd = 0;
  double stage_seconds = 0;  // work: the stages' seconds added up (parallel ones each count)
  double wall_seconds = 0;   // time: the union of the stages' intervals (overlaps count once)
};

class RunStore {
 public:
  // Opens or creates the database (and its folder). Fails with a message naming the path.
  static Result<std::unique_ptr<RunStore>> Open(const std::filesystem::path& db);
  virtual ~RunStore() = default;

  virtual Result<int64_t> CreateRun(const RunRow& run) = 0;   // returns the new id
  virtual Status UpdateRun(const RunRow& run) = 0;            // by run.id; sets updated_at
  virtual Result<RunRow> GetRun(int64_t id) = 0;              // NotFound with a hint
  virtual Result<std::vector<RunRow>> ListRuns() = 0;         // newest first

  // Inserts the attempt with the next number of its run; returns that number.
  virtual Result<int64_t> AddAttempt(const AttemptRow& attempt) = 0;
  // Replaces the mutable fields (state, status, verdict_json, median_ms, sol_percent, source,
  // extra_files_json, source_hash, params_json).
  virtual Status UpdateAttempt(const AttemptRow& attempt) = 0;
  virtual Result<std::vector<AttemptRow>> Attempts(int64_t run_id) = 0;
  virtual Result<AttemptRow> GetAttempt(int64_t run_id, int64_t number) = 0;

  virtual Result<int64_t> AddLlmCall(const LlmCallRow& call) = 0;
  virtual Result<std::vector<LlmCallRow>> LlmCalls(int64_t run_id) = 0;
  virtual Status AddRecommendation(const RecommendationRow& rec) = 0;
  virtual Result<std::vector<RecommendationRow>> Recommendations(int64_t run_id) = 0;
  virtual Status AddStage(const StageRow& stage) = 0;
  virtual Result<std::vector<StageRow>> Stages(int64_t run_id) = 0;
  virtual Result<RunTotals> Totals(int64_t run_id) = 0;
};

}  // namespace kforge

#endif  // KFORGE_STORE_RUN_STORE_H_
