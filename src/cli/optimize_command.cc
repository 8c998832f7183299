// `kforge optimize`, `kforge resume`, `kforge runs`, `kforge show`: the forge loop and its record.
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/subprocess.h"
#include "backend/registry.h"
#include "cli/commands.h"
#include "kforge/llm/session.h"
#include "loop/forge.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct LoopFlags {
  ForgeOptions options;
  std::string llm_config;
  std::string precision;  // --precision as given
  std::vector<std::string> sizes;  // --size as given
  int64_t run_id = 0;
  int64_t attempt = 0;
  bool json = false;
  bool no_confirm = false;
  std::optional<int64_t> seed;  // --llm-seed: both roles
  std::string prompt_profile;  // --prompt-profile as given: the generator's ("" = the model's)
};

Result<std::unique_ptr<RunStore>> OpenStore() { return RunStore::Open(WorkspaceDir() / "runs.db"); }

// For commands that only read (runs, show): opening would create an empty store (and its
// folder) wherever they were typed; say where none was found instead.
Result<std::unique_ptr<RunStore>> OpenExistingStore() {
  const fs::path db = WorkspaceDir() / "runs.db";
  if (!fs::exists(db))
    return Status::NotFound(fmt::format("no run store at {} (set KFORGE_WORKSPACE, or run in the folder holding .kforge/)",
                                        db.string()));
  return RunStore::Open(db);
}

// The model to use: --llm, else $KFORGE_LLM, else the config's default_model; empty = offline.
std::string ChooseModel(const LoopFlags& f, const llm::LlmConfig& config) {
  if (!f.options.model.empty()) return f.options.model;
  if (const char* env = std::getenv("KFORGE_LLM")) return env;
  return config.default_model;
}

// Role fields that no flag set come from the config's [roles.<role>].
void FillRole(const llm::LlmConfig& config, const std::string& name, llm::RoleSettings* role) {
  auto it = config.roles.find(name);
  if (it == config.roles.end()) return;
  if (!role->temperature) role->temperature = it->second.temperature;
  if (!role->max_output_tokens) role->max_output_tokens = it->second.max_output_tokens;
  if (!role->seed) role->seed = it->second.seed;
}

// " (+2 failed)" after the count of answered calls, or "".
std::string FailedCalls(const RunTotals& t) {
  return t.failed_llm_calls > 0 ? fmt::format(" (+{} failed)", t.failed_llm_calls) : "";
}

// Each role's prompt limits from its model's settings (profile, context window, answer room);
// --prompt-profile wins for the generator. A model that does not resolve keeps the defaults:
// making its client reports why.
void FillPromptLimits(const LoopFlags& f, const llm::LlmConfig& config, ForgeOptions* o) {
  if (Result<llm::ProviderSettings> s = llm::ResolveModel(o->model, config); s.ok()) o->generator_prompt = LimitsFromSettings(*s);
  const std::string& analyst = o->analyst_model.empty() ? o->model : o->analyst_model;
  if (Result<llm::ProviderSettings> s = llm::ResolveModel(analyst, config); s.ok()) o->analyst_prompt = LimitsFromSettings(*s);
  if (Result<llm::PromptProfile> p = llm::ParsePromptProfile(f.prompt_profile); p.ok()) o->generator_prompt.profile = *p;
}

void PrintSummary(const ForgeSummary& s, bool offline) {
  fmt::print("run {} {}: {}\n", s.run_id, s.status, s.stop_reason);
  fmt::print("  attempts {}  llm calls {}{}  tokens in {} out {}  cost ${:.4f}\n", s.attempts, s.totals.llm_calls,
             FailedCalls(s.totals), s.totals.input_tokens, s.totals.output_tokens, s.totals.cost_usd);
  if (s.seed_ms > 0) fmt::print("  seed     {:.4f} ms\n", s.seed_ms);
  if (s.best_attempt > 0) {
    fmt::print("  best     {:.4f} ms (attempt {}), SOL {:.1f}%", s.best_ms, s.best_attempt, s.sol_percent);
    if (s.seed_ms > 0) fmt::print(", {:.2f}x over the seed (single runs)", s.seed_ms / s.best_ms);
    fmt::print("\n");
    for (const Confirmation& c : s.confirmed) fmt::print("  confirmed {}\n", c.Summary());
    if (s.confirm_seconds > 0) fmt::print("  confirmation took {:.1f} s\n", s.confirm_seconds);
    fmt::print("  kernel   {}\n", s.best_path.string());
  } else {
    fmt::print("  no correct kernel\n");
  }
  if (offline && s.evaluations_exhaustive > 0)
    fmt::print("  tuner    {} evaluations; an exhaustive sweep of the same space needs {}\n", s.tune_evaluations, s.evaluations_exhaustive);
}

// Starts (or resumes) one run with the LLM that --llm, KFORGE_LLM or the config names; offline
// when none does. *offline says which it was.
Result<ForgeSummary> RunForge(LoopFlags& f, bool resume, bool* offline) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<RunStore> store, OpenStore());
  if (resume) {
    KF_ASSIGN_OR_RETURN(RunRow run, store->GetRun(f.run_id));
    f.options = ForgeOptions::FromJson(json::parse(run.config_json, nullptr, false));
  }
  const char* cfg_env = std::getenv("KFORGE_LLM_CONFIG");
  std::string cfg_path = !f.llm_config.empty() ? f.llm_config : cfg_env ? cfg_env : "";
  KF_ASSIGN_OR_RETURN(llm::LlmConfig config, cfg_path.empty() ? Result<llm::LlmConfig>(llm::LlmConfig()) : llm::LoadLlmConfig(cfg_path));
  f.options.model = ChooseModel(f, config);
  if (!resume) {  // a resumed run keeps the sampling it was started with
    if (f.seed) f.options.generator_llm.seed = f.options.analyst_llm.seed = f.seed;
    FillRole(config, "generator", &f.options.generator_llm);
    FillRole(config, "analyst", &f.options.analyst_llm);
    if (!f.options.model.empty()) FillPromptLimits(f, config, &f.options);
  }
  std::unique_ptr<llm::LlmSession> session;
  std::unique_ptr<llm::LlmClient> generator, analyst;
  if (!f.options.model.empty()) {
    KF_ASSIGN_OR_RETURN(session, llm::LlmSession::Create(config));
    KF_ASSIGN_OR_RETURN(generator, session->NewClient(f.options.model));
    KF_ASSIGN_OR_RETURN(analyst, session->NewClient(f.options.analyst_model.empty() ? f.options.model : f.options.analyst_model));
  } else {
    fmt::print(stderr, "kforge: no LLM configured (--llm, KFORGE_LLM or a config's default_model): running the offline tuner with the rule-based analyst\n");
  }
  *offline = !generator;
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  std::unique_ptr<ProgressSink> progress = NewProgressSink(STDERR_FILENO);
  ForgeDeps deps{store.get(), runner.get(), generator.get(), analyst.get(), progress.get(), WorkspaceDir() / "runs"};
  return resume ? ResumeRun(f.run_id, deps) : StartRun(f.options, deps);
}

int RunLoop(LoopFlags& f, bool resume) {
  bool offline = true;
  Result<ForgeSummary> s = RunForge(f, resume, &offline);
  if (!s.ok()) { fmt::print(stderr, "kforge: {}\n", s.status().message()); return s.status().code() == StatusCode::kInvalidArgument || s.status().code() == StatusCode::kNotFound ? kExitUsage : kExitEnvironment; }
  PrintSummary(*s, offline);
  return s->best_attempt > 0 ? kExitOk : kExitVerdict;
}

int ListRuns() {
  Result<std::unique_ptr<RunStore>> store = OpenExistingStore();
  if (!store.ok() && store.status().code() == StatusCode::kNotFound) {
    fmt::print(stderr, "kforge runs: {}\n", store.status().message());
    return kExitOk;  // no runs yet is an answer, not a failure
  }
  if (!store.ok()) { fmt::print(stderr, "kforge runs: {}\n", store.status().message()); return kExitEnvironment; }
  Result<std::vector<RunRow>> runs = (*store)->ListRuns();
  if (!runs.ok()) { fmt::print(stderr, "kforge runs: {}\n", runs.status().message()); return kExitEnvironment; }
  // The model goes last and whole: model strings with a URL are long, and a cut one is useless.
  fmt::print("{:>4} {:<24} {:<26} {:<7} {:<12} {:>10} {:>10} {:>8}  {}\n", "id", "created", "problem", "backend", "status", "seed_ms", "best_ms", "cost$", "model");
  for (const RunRow& r : *runs) {
    Result<RunTotals> t = (*store)->Totals(r.id);
    fmt::print("{:>4} {:<24} {:<26} {:<7} {:<12} {:>10.4f} {:>10.4f} {:>8.4f}  {}\n", r.id, r.created_at, r.problem, r.backend,
               r.status, r.seed_ms, r.best_ms, t.ok() ? t->cost_usd : 0.0, r.model);
  }
  return kExitOk;
}

// One attempt as JSON: the attempt, its verdict, the calls that produced it (generator) or
// analysed it (analyst), each with its full request, and the analyst's recommendations for it.
json AttemptJson(RunStore& store, const RunRow& run, const AttemptRow& a) {
  auto parsed = [](const std::string& text) {
    json j = json::parse(text.empty() ? "null" : text, nullptr, false);
    return j.is_discarded() ? json(text) : j;
  };
  json extra = parsed(a.extra_files_json);
  json out = {{"run", run.id},
              {"attempt", {{"number", a.number}, {"phase", a.phase}, {"iteration", a.iteration}, {"parent", a.parent},
                           {"state", a.state}, {"status", a.status}, {"median_ms", a.median_ms}, {"sol_percent", a.sol_percent},
                           {"params", parsed(a.params_json)}, {"source", a.source},
                           {"program", extra.is_object() ? extra.value("program", "") : ""},
                           {"seconds", parsed(a.seconds_json.empty() ? "{}" : a.seconds_json)}}},
              {"verdict", parsed(a.verdict_json)},
              {"calls", json::array()},
              {"recommendations", json::array()}};
  Result<std::vector<LlmCallRow>> calls = store.LlmCalls(run.id);
  for (const LlmCallRow& c : calls.ok() ? *calls : std::vector<LlmCallRow>{}) {
    if (c.attempt != a.number) continue;
    out["calls"].push_back({{"agent", c.agent}, {"role", c.agent == "analyst" ? "analysed this attempt" : "produced this attempt"},
                            {"model", c.model}, {"request", parsed(c.prompt_json)}, {"response", c.response_text},
                            {"finish_reason", c.finish_reason}, {"input_tokens", c.input_tokens},
                            {"output_tokens", c.output_tokens}, {"cached_tokens", c.cached_tokens}, {"cost_usd", c.cost_usd},
                            {"latency_ms", c.latency_ms}, {"request_id", c.request_id}, {"error", c.error},
                            {"prompt_chars", c.prompt_chars}, {"prompt_tokens_estimate", c.prompt_tokens_estimate},
                            {"prompt_shrunk", c.prompt_shrunk}, {"details", parsed(c.details_json)},
                            {"created_at", c.created_at}});
  }
  Result<std::vector<RecommendationRow>> recs = store.Recommendations(run.id);
  for (const RecommendationRow& r : recs.ok() ? *recs : std::vector<RecommendationRow>{})
    if (r.attempt == a.number) out["recommendations"].push_back({{"source", r.source}, {"recommendation", parsed(r.json)}});
  return out;
}

// How an answer came (an llm_calls row's details), for the text view; "" when nothing is known.
std::string DescribeDetails(const json& d) {
  if (!d.is_object() || !d.contains("streamed")) return "";  // a failed call: at most its images
  std::string out = d.value("streamed", false) ? "streamed" : "not streamed";
  if (d.contains("first_token_ms")) out += fmt::format(", first token after {:.1f} s", d["first_token_ms"].get<double>() / 1000);
  if (d.contains("tokens_per_s")) out += fmt::format(", {:.1f} tokens/s", d["tokens_per_s"].get<double>());
  if (d.contains("server_ms"))
    out += fmt::format(", server computed {:.1f} s, queued or in transit {:.1f} s", d["server_ms"].get<double>() / 1000,
                       d.value("queue_ms", 0.0) / 1000);
  if (d.value("usage_estimated", false)) out += ", token counts estimated by kforge (the answer was stopped before the server counted)";
  return out;
}

// The analyst's profile images (docs/loop.md, "Profile images"): "images sent: roofline
// (attempt-3/analysis-1-roofline.png, 44 KB, xxh128 ...)" and why any were left out; "" when the
// call had none.
std::string DescribeImages(const json& d) {
  if (!d.is_object()) return "";
  std::string out;
  for (const json& i : d.value("images", json::array()))
    out += fmt::format("image sent: {} ({}, {:.0f} KB, xxh128 {})\n", i.value("name", ""), i.value("file", ""),
                       i.value("bytes", 0.0) / 1024, i.value("xxh128", ""));
  for (const json& why : d.value("images_left_out", json::array())) out += "image left out: " + why.get<std::string>() + "\n";
  return out;
}

// The last user message of a recorded request, for the text view.
std::string LastUserText(const json& request) {
  std::string text;
  for (const json& m : request.is_object() ? request.value("messages", json::array()) : json::array()) {
    if (!m.is_object() || m.value("role", "") != "user") continue;
    text.clear();
    if (m.contains("content") && m["content"].is_string()) text = m["content"].get<std::string>();
    for (const json& part : m.value("parts", json::array()))
      if (part.is_object() && part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
  }
  return text;
}

// "prompt: 1234 tokens (server) / ~1300 estimated, 3900 chars", with what was cut to fit the
// context window; calls recorded before prompt sizes were (schema version 1) have none.
std::string PromptSizeLine(const json& call) {
  const int64_t chars = call["prompt_chars"].get<int64_t>(), server = call["input_tokens"].get<int64_t>();
  if (chars == 0) return fmt::format("prompt: {} tokens (server); its size was not recorded", server);
  std::string line = server > 0 ? fmt::format("prompt: {} tokens (server)", server) : "prompt: not counted by the server";
  line += fmt::format(" / ~{} estimated, {} chars", call["prompt_tokens_estimate"].get<int64_t>(), chars);
  if (const std::string shrunk = call["prompt_shrunk"].get<std::string>(); !shrunk.empty()) line += "; shrunk to fit the context window: " + shrunk;
  return line;
}

int Show(const LoopFlags& f) {
  Result<std::unique_ptr<RunStore>> store = OpenExistingStore();
  if (!store.ok()) {
    fmt::print(stderr, "kforge show: {}\n", store.status().message());
    return store.status().code() == StatusCode::kNotFound ? kExitUsage : kExitEnvironment;
  }
  Result<RunRow> run = (*store)->GetRun(f.run_id);
  if (!run.ok()) { fmt::print(stderr, "kforge show: {}\n", run.status().message()); return kExitUsage; }
  if (f.attempt > 0) {
    Result<AttemptRow> a = (*store)->GetAttempt(f.run_id, f.attempt);
    if (!a.ok()) { fmt::print(stderr, "kforge show: {}\n", a.status().message()); return kExitUsage; }
    json j = AttemptJson(**store, *run, *a);
    if (f.json) {
      fmt::print("{}\n", j.dump(1));
      return kExitOk;
    }
    fmt::print("attempt {} of run {} ({}, iteration {}, parent {}): {} {}\n", a->number, run->id, a->phase, a->iteration, a->parent, a->state, a->status);
    if (!a->params_json.empty()) fmt::print("parameters: {}\n", a->params_json);
    fmt::print("--- source ---\n{}\n", a->source);
    if (const std::string program = j["attempt"]["program"].get<std::string>(); !program.empty())
      fmt::print("--- program ---\n{}\n", program);
    const json& v = j["verdict"];
    fmt::print("--- verdict ---\n{}\n", v.is_object() ? v.value("message", "") : "");
    if (v.is_object()) {
      if (const std::string out = v.value("compiler_output", ""); !out.empty())
        fmt::print("--- compiler output (last 40 lines) ---\n{}\n", TailLines(out, 40, 8000));
      fmt::print("{}", DescribePrecision(v.value("precision", json::object()), ""));
      for (const json& c : v.value("confirmed", json::array())) fmt::print("confirmed {}\n", Confirmation::FromJson(c).Summary());
    }
    for (const json& c : j["calls"]) {
      fmt::print("--- {} call, {} ({}; {} in / {} out tokens; ${:.4f}; {:.0f} ms; finish {}{}) ---\n", c["agent"].get<std::string>(),
                 c["role"].get<std::string>(), c["model"].get<std::string>(), c["input_tokens"].get<int64_t>(),
                 c["output_tokens"].get<int64_t>(), c["cost_usd"].get<double>(), c["latency_ms"].get<double>(),
                 c["finish_reason"].get<std::string>().empty() ? "-" : c["finish_reason"].get<std::string>(),
                 c["error"].get<std::string>().empty() ? "" : "; error: " + c["error"].get<std::string>());
      fmt::print("{}\n", PromptSizeLine(c));
      if (std::string how = DescribeDetails(c.value("details", json::object())); !how.empty()) fmt::print("{}\n", how);
      fmt::print("{}", DescribeImages(c.value("details", json::object())));
      fmt::print("prompt (last user message; --json has the whole request):\n{}\n", LastUserText(c["request"]));
      fmt::print("answer:\n{}\n", c["response"].get<std::string>());
    }
    for (const json& r : j["recommendations"]) fmt::print("recommendation ({}): {}\n", r["source"].get<std::string>(), r["recommendation"].dump());
    return kExitOk;
  }
  if (f.json) {
    Result<RunTotals> t = (*store)->Totals(run->id);
    json out = {{"run", {{"id", run->id}, {"problem", run->problem}, {"backend", run->backend}, {"model", run->model},
                         {"status", run->status}, {"stop_reason", run->stop_reason}, {"created_at", run->created_at},
                         {"seed_ms", run->seed_ms}, {"best_ms", run->best_ms}, {"best_attempt", run->best_attempt},
                         {"config", json::parse(run->config_json, nullptr, false)}}},
                {"attempts", json::array()}};
    if (t.ok())
      out["totals"] = {{"attempts", t->attempts}, {"correct", t->correct}, {"llm_calls", t->llm_calls},
                       {"input_tokens", t->input_tokens}, {"output_tokens", t->output_tokens}, {"cost_usd", t->cost_usd},
                       {"failed_llm_calls", t->failed_llm_calls}, {"stage_seconds", t->stage_seconds},
                       {"wall_seconds", t->wall_seconds}};
    Result<std::vector<AttemptRow>> attempts = (*store)->Attempts(run->id);
    for (const AttemptRow& a : attempts.ok() ? *attempts : std::vector<AttemptRow>{})
      out["attempts"].push_back(AttemptJson(**store, *run, a));
    fmt::print("{}\n", out.dump(1));
    return kExitOk;
  }
  Result<RunTotals> t = (*store)->Totals(run->id);
  fmt::print("run {}: {} on {} with {} — {} ({})\n", run->id, run->problem, run->backend, run->model, run->status, run->stop_reason);
  ForgeOptions config = ForgeOptions::FromJson(json::parse(run->config_json, nullptr, false));
  fmt::print("  precision {}\n", config.eval.precision ? PrecisionPolicyName(*config.eval.precision)
                                                       : "the problem's (not recorded)");
  if (!config.transfer_file.empty())
    fmt::print("  transfer  {} ({}), ported to {}\n", config.transfer_file, config.transfer_backend, run->backend);
  if (t.ok()) fmt::print("  {} attempts ({} correct), {} llm calls{}, {} input + {} output tokens, ${:.4f}, {:.1f} s ({:.1f} s of stages, parallel ones added)\n",
                         t->attempts, t->correct, t->llm_calls, FailedCalls(*t), t->input_tokens, t->output_tokens, t->cost_usd,
                         t->wall_seconds, t->stage_seconds);
  Result<std::vector<AttemptRow>> attempts = (*store)->Attempts(run->id);
  fmt::print("{:>4} {:<11} {:>4} {:<10} {:<14} {:>10} {:>7} {:>22}  {}\n", "#", "phase", "iter", "state", "status", "median_ms", "SOL%",
             "s queue/build/chk/time", "params");
  for (const AttemptRow& a : attempts.ok() ? *attempts : std::vector<AttemptRow>{}) {
    json v = json::parse(a.verdict_json.empty() ? "{}" : a.verdict_json, nullptr, false);
    std::string mark = !v.is_object() ? "" : v.value("confirmed_pick", false) ? " (confirmed pick)"
                       : v.contains("confirmation_lost_to") ? fmt::format(" (lost to {} in confirmation)", v["confirmation_lost_to"].get<int64_t>())
                                                            : "";
    // Where its time went (attempts.seconds_json): queued, compile gate, checks, timing.
    json secs = json::parse(a.seconds_json.empty() ? "{}" : a.seconds_json, nullptr, false);
    std::string where = secs.is_object() && secs.contains("evaluate")
                            ? fmt::format("{:.1f}/{:.1f}/{:.1f}/{:.1f}", secs.value("queue", 0.0), secs.value("compile", 0.0),
                                          secs.value("check", 0.0), secs.value("time", 0.0))
                            : "-";
    fmt::print("{:>4} {:<11} {:>4} {:<10} {:<14} {:>10.4f} {:>7.1f} {:>22}  {}{}\n", a.number, a.phase, a.iteration, a.state, a.status,
               a.median_ms, a.sol_percent, where, a.params_json, mark);
    if (a.number == run->best_attempt && v.is_object())
      for (const json& c : v.value("confirmed", json::array())) fmt::print("       best, confirmed {}\n", Confirmation::FromJson(c).Summary());
  }
  Result<std::vector<RecommendationRow>> recs = (*store)->Recommendations(run->id);
  for (const RecommendationRow& r : recs.ok() ? *recs : std::vector<RecommendationRow>{})
    fmt::print("recommendation for attempt {} ({}): {}\n", r.attempt, r.source, r.json);
  return kExitOk;
}

void AddBudgetFlags(CLI::App* cmd, LoopFlags* f) {
  ForgeOptions& o = f->options;
  cmd->add_option("--iterations", o.iterations, "Optimization passes (default 5)");
  cmd->add_option("--candidates", o.candidates, "Candidates per pass, generated in parallel (default 1)");
  cmd->add_option("--judge-jobs", o.judge_jobs,
                  "Candidates of a pass judged at once (default: all of them on a GPU, one where the device may be the host CPU)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--functional-attempts", o.functional_attempts, "Generations to reach a correct kernel (default 4)");
  cmd->add_option("--max-evals", o.max_evaluations, "Offline tuner: evaluations at most (default 40)");
  cmd->add_option("--max-tokens", o.max_tokens, "Token budget, 0 = none");
  cmd->add_option("--max-cost", o.max_cost_usd, "Cost budget in USD, 0 = none");
  cmd->add_option("--max-time", o.max_seconds, "Wall-time budget in seconds, 0 = none");
  cmd->add_option("--sol-target", o.sol_target, "Stop when SOL% reaches this, 0 = never");
  cmd->add_option("--patience", o.patience, "Stop after this many passes without gain (default 2)");
}

// Per-role sampling; they win over the config's [roles.generator] / [roles.analyst].
void AddSamplingFlags(CLI::App* cmd, LoopFlags* f) {
  ForgeOptions& o = f->options;
  cmd->add_option("--generator-temperature", o.generator_llm.temperature, "Generator sampling temperature, 0 to 2 (default: the model's)")
      ->check(CLI::Range(0.0, 2.0));
  cmd->add_option("--generator-max-output-tokens", o.generator_llm.max_output_tokens, "Generator: output cap per answer (max_tokens)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--analyst-temperature", o.analyst_llm.temperature, "Analyst sampling temperature, 0 to 2 (default: the model's)")
      ->check(CLI::Range(0.0, 2.0));
  cmd->add_option("--analyst-max-output-tokens", o.analyst_llm.max_output_tokens, "Analyst: output cap per answer (max_tokens)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--llm-seed", f->seed, "Sampling seed sent with every request (servers that honour it repeat their answers)");
  cmd->add_option("--prompt-profile", f->prompt_profile,
                  "Generation prompts: full (the ABI document) or compact (an ABI summary; the local preset's default)")
      ->check(CLI::IsMember(std::vector<std::string>{"full", "compact"}));
}

}  // namespace

Result<ForgeSummary> OptimizeOne(const ForgeOptions& options, const std::string& llm_config) {
  LoopFlags f;
  f.options = options;
  f.llm_config = llm_config;
  bool offline = true;
  return RunForge(f, false, &offline);
}

void AddLoopCommands(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<LoopFlags>();
  CLI::App* opt = app.add_subcommand("optimize", "Forge a fast verified kernel for a problem (LLM agents, or the offline tuner)");
  opt->add_option("problem", f->options.problem, "Problem name, folder or problem.toml")->required();
  opt->add_option("--backend,-b", f->options.backend, "Backend: " + BackendNames() + " (default cpp)");
  opt->add_option("--llm", f->options.model, "Model, e.g. openai:gpt-5, anthropic:claude-opus-4-6, or a coding-agent CLI exec:NAME (docs/llm.md); none = offline");
  opt->add_option("--analyst-llm", f->options.analyst_model, "Model for the performance analyst (default: --llm)");
  opt->add_option("--llm-config", f->llm_config, "LLM config file (default $KFORGE_LLM_CONFIG)");
  opt->add_option("--instructions", f->options.instructions, "Extra instructions for the generation agent");
  opt->add_option("--context", f->options.context_files, "Context files added to every generation prompt");
  opt->add_option("--deny", f->options.deny, "A code pattern candidates may not contain (repeatable)");
  opt->add_option("--transfer", f->options.transfer_file,
                  "A working kernel for another backend to port from: its host file or its "
                  ".cl/.comp (docs/transfer.md)");
  opt->add_option("--transfer-backend", f->options.transfer_backend,
                  "The backend of --transfer (default: inferred from the file: .cu cuda, .hip hip, "
                  ".cl opencl, .comp vulkan)");
  opt->add_option("--size", f->sizes, "Override a size parameter for every evaluation: --size n=262144 (repeatable)");
  opt->add_flag("--quick", f->options.eval.quick, "Evaluate at the problem's quick sizes");
  opt->add_option("--budget-ms", f->options.eval.budget_ms, "Timing budget per evaluation in ms (default 2000)");
  opt->add_option("--precision-target", f->options.eval.precision_target,
                  "Timing also stops once the median is known within this fraction, 95% interval (default 0.03; 0: off)");
  AddTrustedStateFlags(opt, &f->options.eval);
  opt->add_option("--precision", f->precision,
                  "Precision policy every attempt is judged under: strict, tf32, bf16, fp16 or "
                  "kernelbench (default: the problem's, else strict)");
  AddBudgetFlags(opt, f.get());
  AddSamplingFlags(opt, f.get());
  opt->add_flag("--no-confirm", f->no_confirm, "Pick and report by single measurements, without confirmation (quick runs)");
  opt->add_option("--confirm-rounds", f->options.confirm_options.rounds, "Confirmation: ABBA rounds (default 5)");
  opt->add_option("--confirm-top", f->options.confirm_top, "Offline tuner: configurations re-timed by confirmation (default 3)");
  opt->callback([f, exit_code] {
    f->options.confirm = !f->no_confirm;
    Result<std::optional<PrecisionPolicy>> precision = ParsePrecisionFlag(f->precision);
    if (!precision.ok()) {
      fmt::print(stderr, "kforge optimize: {}\n", precision.status().message());
      *exit_code = kExitUsage;
      return;
    }
    f->options.eval.precision = *precision;
    Result<std::map<std::string, int64_t>> sizes = ParseSizes(f->sizes);
    if (!sizes.ok()) {
      fmt::print(stderr, "kforge optimize: {}\n", sizes.status().message());
      *exit_code = kExitUsage;
      return;
    }
    f->options.eval.sizes = *sizes;
    *exit_code = RunLoop(*f, false);
  });

  CLI::App* res = app.add_subcommand("resume", "Continue an interrupted run where it stopped");
  res->add_option("run", f->run_id, "Run id (see `kforge runs`)")->required();
  res->add_option("--llm-config", f->llm_config, "LLM config file (default $KFORGE_LLM_CONFIG)");
  res->callback([f, exit_code] { *exit_code = RunLoop(*f, true); });

  CLI::App* runs = app.add_subcommand("runs", "List the runs of this workspace (.kforge/)");
  runs->callback([exit_code] { *exit_code = ListRuns(); });

  CLI::App* show = app.add_subcommand("show", "Show a run, or one attempt with its prompts and verdict");
  show->add_option("run", f->run_id, "Run id")->required();
  show->add_option("--attempt", f->attempt, "Attempt number");
  show->add_flag("--json", f->json, "As one JSON object: the run with every attempt, or the attempt with its verdict, calls (full requests) and recommendations");
  show->callback([f, exit_code] { *exit_code = Show(*f); });
}

}  // namespace kforge
