// kforge_loop_overhead_bench: what the forge loop itself costs per iteration, apart from the
// model's latency and the evaluation (compile + run of the candidate). Prints numbers; asserts
// nothing.
//
//   kforge_loop_overhead_bench [passes=20] [repetitions=200]
//
// Part 1, end to end: the real loop (StartRun) on the fixture problem src/loop/testdata/
// repeat_scale, with a fake model client that answers instantly. The stage times the loop
// records in its store separate the evaluation from the rest, so
//   overhead per attempt = (wall time - evaluation time) / attempts.
// Part 2, step by step: each thing the loop does around one optimization pass, timed alone over
// many repetitions, with the run already holding 10, 100 and 500 attempts and twice as many model
// calls (reloading the run's state reads every attempt and sums over every call, so that step
// grows with the run).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/analyst.h"
#include "agent/code_extract.h"
#include "agent/generator.h"
#include "agent/prompt_template.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "kforge/llm/llm.h"
#include "kforge/problem.h"
#include "loop/forge.h"
#include "store/run_store.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kData = KFORGE_LOOP_TESTDATA;

std::string Read(const fs::path& p) { return ReadFile(p).value(); }
std::string CodeAnswer() {
  return "Here is the kernel.\n\n```cpp\n" + Read(kData / "answers" / "fast.cc") + "```\n";
}

// A fake model: answers every request at once, the analyst with its JSON, the generator with
// the fixture's fast kernel. No network, no latency.
class FakeInstantModel : public llm::LlmClient {
 public:
  Result<llm::ChatResponse> Complete(const llm::ChatRequest& request) override {
    llm::ChatResponse r;
    bool analyst = request.system.find("performance-analysis agent") != std::string::npos;
    r.text = analyst ? analyst_ : code_;
    r.finish_reason = llm::FinishReason::kStop;
    r.usage.input_tokens = 1000;
    r.usage.output_tokens = 200;
    r.request_id = "fake";
    return r;
  }
  std::string Describe() const override { return "fake:instant"; }

 private:
  std::string code_ = CodeAnswer();
  std::string analyst_ = Read(kData / "answers" / "analyst.json");
};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Mean microseconds of `f` over `reps` calls.
double MeanUs(int reps, const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return 1e6 * Seconds(t0) / reps;
}

struct EndToEnd {
  std::string verdict_json;  // of the best attempt, reused by part 2
};

EndToEnd RunEndToEnd(int passes, const fs::path& dir) {
  ForgeOptions o;
  o.problem = (kData / "repeat_scale").string();
  o.model = "fake:instant";
  o.iterations = passes;
  o.patience = passes + 1;  // every pass runs, gain or not
  o.eval.budget_ms = 30;
  o.eval.min_runs = 3;
  o.eval.max_runs = 20;
  o.eval.baselines = false;
  std::unique_ptr<RunStore> store = RunStore::Open(dir / "runs.db").value();
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  std::unique_ptr<ProgressSink> progress = NewSilentProgress();
  FakeInstantModel model;
  ForgeDeps deps{store.get(), runner.get(), &model, &model, progress.get(), dir / "runs"};
  auto t0 = std::chrono::steady_clock::now();
  Result<ForgeSummary> s = StartRun(o, deps);
  double wall = Seconds(t0);
  if (!s.ok()) {
    std::fprintf(stderr, "the loop failed: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  std::map<std::string, double> stages;
  std::vector<StageRow> rows = store->Stages(s->run_id).value();
  for (const StageRow& st : rows) stages[st.stage] += st.seconds;
  double eval = stages["evaluate"];
  std::printf("Part 1: the real loop, fake instant model, %d optimization passes\n", passes);
  std::printf("  attempts %lld, llm calls %lld, wall %.3f s\n", static_cast<long long>(s->attempts),
              static_cast<long long>(s->totals.llm_calls), wall);
  for (const auto& [name, sec] : stages)
    std::printf("  stage %-9s %9.3f s in all\n", name.c_str(), sec);
  std::printf("  evaluation per attempt          %9.1f ms\n", 1e3 * eval / s->attempts);
  std::printf("  loop overhead per attempt       %9.2f ms  (wall - evaluation) / attempts\n",
              1e3 * (wall - eval) / s->attempts);
  std::printf("  overhead share of the wall time %9.1f %%\n\n", 100 * (wall - eval) / wall);
  return {store->GetAttempt(s->run_id, s->best_attempt).value().verdict_json};
}

// Part 2 at one run length: `prior` attempts (with a real verdict each) already in the run.
void StepByStep(int prior, int reps, const std::string& verdict_json, const fs::path& dir) {
  std::unique_ptr<RunStore> store =
      RunStore::Open(dir / ("steps-" + std::to_string(prior) + ".db")).value();
  RunRow run;
  run.problem = "repeat_scale";
  run.backend = "cpp";
  run.model = "fake:instant";
  run.status = "running";
  int64_t id = store->CreateRun(run).value();
  std::string source = Read(kData / "answers" / "slow.cc");
  AttemptRow done;
  done.run_id = id;
  done.phase = "optimize";
  done.state = "done";
  done.status = "correct";
  done.source = source;
  done.verdict_json = verdict_json;
  done.median_ms = 0.1;
  for (int i = 0; i < prior; ++i) store->AddAttempt(done).value();

  Problem problem = LoadProblem(kData / "repeat_scale" / "problem.toml").value();
  json verdict = json::parse(verdict_json);
  GenerationContext ctx;
  ctx.problem = &problem;
  ctx.backend = "cpp";
  ctx.task = "optimize";
  ctx.previous = FencedBlock("cpp", source);
  ctx.verdict_status = "correct";
  ctx.verdict_feedback = VerdictFeedback(verdict);
  ctx.recommendation = RuleAnalyst(json::object()).ToText();
  llm::ChatRequest req = BuildGenerationRequest(ctx).value();
  std::string answer = CodeAnswer(), analyst = Read(kData / "answers" / "analyst.json");
  fs::path artifacts = dir / "artifacts";
  fs::create_directories(artifacts);

  LlmCallRow call;
  call.run_id = id;
  call.agent = "generator";
  call.model = "fake:instant";
  call.prompt_json = RequestToJson(req).dump();
  call.response_text = answer;
  call.input_tokens = 1000;
  for (int i = 0; i < 2 * prior; ++i)
    store->AddLlmCall(call).value();  // an analyst and a generator call each

  // What one optimization pass does around the model and the evaluation (forge.cc): 2 model
  // calls (analyst, generator), 1 evaluation, 3 reloads of the run's state.
  struct Step {
    const char* name;
    int per_pass;
    double us;
  };
  Step steps[] = {
      // First, while the run holds exactly `prior` attempts and 2 * `prior` model calls.
      {"store: reload, attempts", 3,
       MeanUs(std::max(1, reps / (prior >= 500 ? 10 : 1)), [&] { store->Attempts(id).value(); })},
      {"store: reload, totals (sums over the llm calls)", 3,
       MeanUs(std::max(1, reps / (prior >= 500 ? 10 : 1)), [&] { store->Totals(id).value(); })},
      {"build generation prompt (templates, problem files)", 1,
       MeanUs(reps, [&] { BuildGenerationRequest(ctx).value(); })},
      {"render analyst prompts", 1,
       MeanUs(reps,
              [&] {
                TemplateVars v = {{"problem_name", "repeat_scale"},
                                  {"backend", "cpp"},
                                  {"source", source},
                                  {"profile", verdict.dump(1)}};
                RenderPrompt("analyst_system.md", v).value();
                RenderPrompt("analyze.md", v).value();
              })},
      {"request to JSON for the store", 2, MeanUs(reps, [&] { RequestToJson(req).dump(); })},
      {"extract the candidate from the answer", 1,
       MeanUs(reps, [&] { ExtractCandidate(answer, "cpp").value(); })},
      {"parse the analyst's JSON", 1, MeanUs(reps, [&] { ParseRecommendation(analyst).value(); })},
      {"verdict feedback for the prompt", 1,
       MeanUs(reps, [&] { VerdictFeedback(json::parse(verdict_json)); })},
      {"stored verdict -> profile -> rule analyst", 1,
       MeanUs(reps,
              [&] {
                json stored = json::parse(verdict_json);
                Verdict v;
                v.sizes = stored.value("sizes", std::map<std::string, int64_t>{});
                v.fingerprint = stored.value("fingerprint", json::object());
                v.sol_percent = stored.value("roofline", json::object()).value("sol_percent", 0.0);
                RuleAnalyst(BuildProfile(v));
              })},
      {"store: add attempt", 1, MeanUs(reps, [&] { store->AddAttempt(done).value(); })},
      {"store: update attempt", 2,
       MeanUs(reps,
              [&] {
                done.number = 1;
                done.median_ms += 1;  // a changed row: SQLite skips writing byte-identical ones
                store->UpdateAttempt(done).ok();
              })},
      {"store: add llm call", 2, MeanUs(reps, [&] { store->AddLlmCall(call).value(); })},
      {"store: add stage", 3,
       MeanUs(reps,
              [&] {
                store->AddStage({id, 1, "generate", 0.1});
              })},
      {"store: add recommendation", 1,
       MeanUs(reps,
              [&] {
                store->AddRecommendation({id, 1, "llm", analyst});
              })},
      {"artifacts: candidate + verdict.json", 1,
       MeanUs(reps,
              [&] {
                WriteFileAtomic(artifacts / "candidate.cc", source);
                WriteFileAtomic(artifacts / "verdict.json", verdict.dump(1));
              })},
  };
  std::printf(
      "Part 2: one optimization pass step by step; the run holds %d attempts and %d model calls\n"
      "        (%.0f KB of prompt each); mean of %d repetitions\n",
      prior, 2 * prior, call.prompt_json.size() / 1024.0, reps);
  double total = 0;
  for (const Step& s : steps) {
    std::printf("  %-52s x%d %10.1f us\n", s.name, s.per_pass, s.us);
    total += s.per_pass * s.us;
  }
  std::printf("  %-52s    %10.2f ms per pass\n\n", "sum (weighted by how often a pass does each)",
              total / 1e3);
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  using namespace kforge;
  int passes = argc > 1 ? std::atoi(argv[1]) : 20;
  int reps = argc > 2 ? std::atoi(argv[2]) : 200;
  // A private cache traversable by the sandbox user, and the worker of this build.
  fs::path cache = MakeTempDir("loopbench-cache").value();
  chmod(cache.c_str(), 0755);
  setenv("KFORGE_CACHE_DIR", cache.c_str(), 0);
  setenv("KFORGE_WORKER", KFORGE_WORKER_PATH, 0);
  fs::path dir = MakeTempDir("loopbench").value();
  std::printf("kforge loop overhead (fake instant model; evaluation excluded); scratch %s\n\n",
              dir.c_str());
  EndToEnd e2e = RunEndToEnd(passes, dir);
  for (int prior : {10, 100, 500}) StepByStep(prior, reps, e2e.verdict_json, dir);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove_all(cache, ec);
  return 0;
}
