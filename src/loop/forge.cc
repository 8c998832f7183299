// The forge loop. ForgeRun derives all of its state from the run store, so Run() is the same
// code for a new run and for a resumed one.
#include "loop/forge.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "agent/analyst.h"
#include "agent/code_extract.h"
#include "agent/generator.h"
#include "agent/profile_images.h"
#include "agent/prompt_template.h"
#include "agent/transfer.h"
#include "agent/tuner.h"
#include "backend/registry.h"
#include "base/files.h"
#include "eval/compile_farm.h"
#include "kforge/problem.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string MainExtension(const std::string& backend) {
  const BackendSpec* b = FindBackend(backend);
  return b && !b->extensions.empty() ? b->extensions[0] : ".cc";
}

// The candidate's files (candidate<ext>, and its sibling program, main file first): what
// WriteFiles puts in the attempt's folder, and what clients that work on files get (exec:
// copies them into the command's input folder).
std::vector<llm::RequestFile> CandidateFiles(const AttemptRow& a, const std::string& backend, const BackendSpec& info) {
  std::vector<llm::RequestFile> files = {{"candidate" + MainExtension(backend), a.source}};
  json extra = json::parse(a.extra_files_json.empty() ? "{}" : a.extra_files_json, nullptr, false);
  if (extra.is_object() && extra.contains("program") && info.sibling_extension)
    files.push_back({std::string("candidate") + info.sibling_extension, extra["program"].get<std::string>()});
  return files;
}

bool IsCorrect(const AttemptRow& a) { return a.state == "done" && a.status == "correct" && a.median_ms > 0; }

json VerdictOf(const AttemptRow& a) {
  json v = json::parse(a.verdict_json.empty() ? "{}" : a.verdict_json, nullptr, false);
  return v.is_object() ? v : json::object();
}

// A kernel that lost a confirmation against the best of its time is never the best: its single
// faster measurement was noise (docs/loop.md). The key is written compactly by the loop itself,
// so a plain search finds it (inside a JSON string the quote before the colon is escaped).
bool LostConfirmation(const AttemptRow& a) {
  return a.verdict_json.find("\"confirmation_lost_to\":") != std::string::npos &&
         VerdictOf(a).contains("confirmation_lost_to");
}

// What CallModel appends to an answer that did not end by itself; GenerateInto reads them back.
constexpr std::string_view kCutOffNote = "\n[kforge: the answer was cut off at the output limit]";
constexpr std::string_view kRepetitionNote = "\n[kforge: the answer was stopped: it kept repeating itself]";

bool HasNote(const std::string& answer, std::string_view note) { return answer.find(note) != std::string::npos; }

// The model a client sends to: "local:qwen2.5-coder-1.5b@http://..." -> "qwen2.5-coder-1.5b".
std::string ModelOfClient(const llm::LlmClient& client) {
  std::string d = client.Describe();
  size_t colon = d.find(':');
  std::string model = colon == std::string::npos ? d : d.substr(colon + 1);
  size_t at = model.rfind('@');
  return at == std::string::npos ? model : model.substr(0, at);
}

// How an answer came, for the llm_calls row (docs/run-store.md): streamed, time to the first
// token, the server's own compute time and the rest (queueing, transit), tokens per second.
json CallDetails(const llm::ChatResponse& r) {
  json d = json::object();
  d["streamed"] = r.streamed;
  if (r.streamed) d["first_token_ms"] = r.first_token.count();
  if (r.server_time) {
    d["server_ms"] = r.server_time->count();
    d["queue_ms"] = std::max<int64_t>(0, r.latency.count() - r.server_time->count());
  }
  double generating = static_cast<double>((r.latency - r.first_token).count()) / 1000.0;
  if (r.streamed && generating > 0 && r.usage.output_tokens > 0) d["tokens_per_s"] = r.usage.output_tokens / generating;
  if (r.usage_estimated) d["usage_estimated"] = true;
  return d;
}

std::string ConfirmLabel(const AttemptRow& a) { return a.phase == "seed" ? "seed" : "attempt " + std::to_string(a.number); }

class ForgeRun {
 public:
  ForgeRun(ForgeOptions o, ForgeDeps& d, RunRow run) : options_(std::move(o)), deps_(d), run_(std::move(run)) {}
  ~ForgeRun() { JoinAhead(); }
  ForgeRun(const ForgeRun&) = delete;
  ForgeRun& operator=(const ForgeRun&) = delete;
  Result<ForgeSummary> Run();

 private:
  Result<ForgeSummary> RunSteps();
  Status Prepare();
  Status Reload();
  bool OverBudget(std::string* why);
  void Progress(const std::string& phase, const AttemptRow& a, const std::string& event);
  ProgressState State(const std::string& phase, const AttemptRow& a) const;
  void LiveProgress(const std::string& agent, int64_t attempt, const llm::StreamProgress& p);
  Result<AttemptRow> NewAttempt(const std::string& phase, int64_t iteration, int64_t parent, AttemptRow a = {});
  Status WriteFiles(const AttemptRow& a, fs::path* main);
  Status EvaluateAttempt(AttemptRow& a);
  Status BuildAhead(const std::vector<AttemptRow>& batch);
  // Judging ahead (ForgeOptions::judge_jobs): the batch's judgements start now, `jobs` at once;
  // EvaluateAttempt takes each one's verdict and records it as it would its own judgement.
  struct AheadVerdict {
    Result<Verdict> verdict = Status::Internal("not judged");
    double started = 0, ended = 0;
  };
  void JudgeAhead(const std::vector<AttemptRow>& batch);
  void JoinAhead();
  std::string DeniedPattern(const AttemptRow& a) const;
  // A verdict given without running the judge.
  Verdict UnjudgedVerdict(VerdictStatus status, const std::string& gate, const std::string& message) const;
  Result<Verdict> Judge(const AttemptRow& a, const std::filesystem::path& main, const EvalOptions& eo) const;
  Status EnsureSeed();
  Status FinishPending();
  // `details`: keys added to the call's details_json (the profile images it carried).
  Result<std::string> CallModel(llm::LlmClient& client, const FittedRequest& req, const PromptLimits& limits, const std::string& agent,
                                int64_t attempt, const json& details = json::object());
  Status GenerateInto(AttemptRow& a, GenerationContext ctx);
  Result<bool> Functional(int64_t iteration, const AttemptRow* start, int made = 0);
  Status Optimize();
  Result<Recommendation> Analyse(AttemptRow best);
  Result<json> AttachProfileImages(const AttemptRow& best, const json& verdict, llm::ChatRequest* request);
  Status Tune();
  // Confirmation (forge.h, docs/loop.md).
  Result<std::optional<InterleavedTimes>> ConfirmAttempts(std::vector<AttemptRow>& kernels);
  Status RecordConfirmation(int64_t number, const std::vector<Confirmation>& cs, int64_t lost_to, bool pick = false);
  Status NoteSeedFailure(int64_t number, const Verdict& failure);
  Status SaveVerdict(AttemptRow& a, const json& v);
  Status FailInConfirmation(int64_t number, const Verdict& failure);
  Status Challenge(int64_t number, int64_t incumbent);
  Status ConfirmTop();
  Status ConfirmBestAgainstSeed();
  const AttemptRow* SeedAttempt() const;
  const AttemptRow* SameSource(const AttemptRow& a) const;
  // `same` is a copy: the attempts it came from are reloaded inside.
  Status RecordDuplicate(AttemptRow& a, AttemptRow same, const fs::path& main);
  // `repairing`: the attempt the prompt repairs (its full verdict is in the prompt already).
  GenerationContext BaseContext(const std::string& task, int64_t repairing = -1);
  std::string Memory(int64_t repairing) const;
  Result<ForgeSummary> Finalize(const std::string& status, const std::string& reason);

  ForgeOptions options_;
  ForgeDeps& deps_;
  RunRow run_;
  Problem problem_;
  const BackendSpec* backend_ = nullptr;
  fs::path dir_;
  std::vector<AttemptRow> attempts_;
  const AttemptRow* best_ = nullptr;
  std::string recommendation_;
  RunTotals totals_;
  double session_start_ = Now();
  double seconds_before_ = 0;  // run time spent in earlier sessions
  double exhaustive_ = 0;
  std::mutex reload_mu_;  // CallModel reloads from the parallel generation threads
  std::unique_ptr<CompileFarm> farm_;  // made for the first batch of several candidates
  std::map<int64_t, double> ready_at_;  // attempt -> when its candidate existed (for its queue time)
  std::map<int64_t, std::shared_future<AheadVerdict>> ahead_;  // attempt -> its judgement, started ahead
  std::vector<std::thread> ahead_threads_;
  bool images_warned_ = false;  // the progress line said once why the analyst gets no images
  // --transfer's kernel as the generation prompts show it (read once, by Prepare); "" for none.
  std::string transfer_text_;
};

Status ForgeRun::Prepare() {
  backend_ = FindBackend(options_.backend);
  if (!backend_) return Status::InvalidArgument("unknown backend '" + options_.backend + "'; known: " + BackendNames());
  KF_ASSIGN_OR_RETURN(fs::path file, FindProblem(run_.problem_path.empty() ? options_.problem : run_.problem_path));
  KF_ASSIGN_OR_RETURN(problem_, LoadProblem(file));
  if (!options_.transfer_file.empty()) {
    // StartRun checked it; a resumed run reads it again, and says what to do when it is gone.
    Result<TransferKernel> k =
        LoadTransferKernel(options_.transfer_file, options_.transfer_backend);
    if (!k.ok())
      return k.status().WithContext(
          fmt::format("run {0} cannot go on without its --transfer kernel (put it back where it "
                      "was, then `kforge resume {0}`)",
                      run_.id));
    transfer_text_ = TransferPromptText(*k, *backend_);
  }
  dir_ = deps_.artifacts / std::to_string(run_.id);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status::IoError("cannot create " + dir_.string() + ": " + ec.message());
  return Reload();
}

Status ForgeRun::Reload() {
  KF_ASSIGN_OR_RETURN(attempts_, deps_.store->Attempts(run_.id));
  KF_ASSIGN_OR_RETURN(totals_, deps_.store->Totals(run_.id));
  best_ = nullptr;
  for (const AttemptRow& a : attempts_)
    if (IsCorrect(a) && !LostConfirmation(a) && (!best_ || a.median_ms < best_->median_ms)) best_ = &a;
  return Status::Ok();
}

bool ForgeRun::OverBudget(std::string* why) {
  double elapsed = seconds_before_ + Now() - session_start_;
  if (options_.max_seconds > 0 && elapsed >= options_.max_seconds) { *why = "budget: wall time"; return true; }
  if (options_.max_tokens > 0 && totals_.input_tokens + totals_.output_tokens >= options_.max_tokens) { *why = "budget: tokens"; return true; }
  if (options_.max_cost_usd > 0 && totals_.cost_usd >= options_.max_cost_usd) { *why = "budget: cost"; return true; }
  if (options_.sol_target > 0 && best_ && best_->sol_percent >= options_.sol_target) { *why = "SOL target reached"; return true; }
  return false;
}

void ForgeRun::Progress(const std::string& phase, const AttemptRow& a, const std::string& event) {
  if (!deps_.progress) return;
  deps_.progress->Report(State(phase, a), event);
}

ProgressState ForgeRun::State(const std::string& phase, const AttemptRow& a) const {
  ProgressState s;
  s.run_id = run_.id;
  s.phase = phase;
  s.attempt = a.number;
  s.last_status = a.status;
  s.best_ms = best_ ? best_->median_ms : 0;
  s.sol_percent = best_ ? best_->sol_percent : 0;
  s.seed_ms = run_.seed_ms;
  s.tokens = totals_.input_tokens + totals_.output_tokens;
  s.cost_usd = totals_.cost_usd;
  s.elapsed_s = seconds_before_ + Now() - session_start_;
  s.budget_s = options_.max_seconds;
  return s;
}

// Fields of `a` that UpdateAttempt never rewrites (params_json, extra_files_json) must be set
// here, before the row is inserted.
Result<AttemptRow> ForgeRun::NewAttempt(const std::string& phase, int64_t iteration, int64_t parent, AttemptRow a) {
  a.run_id = run_.id;
  a.phase = phase;
  a.iteration = iteration;
  a.parent = parent;
  a.state = "generating";
  KF_ASSIGN_OR_RETURN(a.number, deps_.store->AddAttempt(a));
  return a;
}

Status ForgeRun::WriteFiles(const AttemptRow& a, fs::path* main) {
  fs::path adir = dir_ / ("attempt-" + std::to_string(a.number));
  fs::create_directories(adir);
  const std::vector<llm::RequestFile> files = CandidateFiles(a, options_.backend, *backend_);
  for (const llm::RequestFile& f : files) KF_RETURN_IF_ERROR(WriteFileAtomic(adir / f.name, f.content));
  *main = adir / files.front().name;
  return Status::Ok();
}

// The first of the user's --deny patterns (substrings) that the candidate contains, or "".
std::string ForgeRun::DeniedPattern(const AttemptRow& a) const {
  for (const std::string& d : options_.deny)
    if (!d.empty() && (a.source.find(d) != std::string::npos || a.extra_files_json.find(d) != std::string::npos)) return d;
  return "";
}

// The source an attempt gets when the model's answers held no code, asked twice (GenerateInto).
constexpr char kNoCodeSource[] = "// kforge: the model returned no usable code twice\n";

Verdict ForgeRun::UnjudgedVerdict(VerdictStatus status, const std::string& gate, const std::string& message) const {
  Verdict v;
  v.status = status;
  v.gate = gate;
  v.message = message;
  v.problem = problem_.name;
  v.backend = options_.backend;
  return v;
}

// The verdict of attempt `a`, whose files are written (`main`): a judgement, except for an
// attempt without code (nothing to build or run; a compile error of the one-line placeholder
// would tell the model about the placeholder, not about its answers) and one holding a denied
// pattern.
Result<Verdict> ForgeRun::Judge(const AttemptRow& a, const fs::path& main, const EvalOptions& eo) const {
  if (a.source == kNoCodeSource)
    return UnjudgedVerdict(VerdictStatus::kCompileError, "no_code",
                           "the model's answers held no usable code (asked twice): nothing was built or judged; answer with the whole " +
                               options_.backend + " kernel in one fenced code block");
  if (std::string denied = DeniedPattern(a); !denied.empty())
    return UnjudgedVerdict(VerdictStatus::kSuspicious, "deny", "the candidate contains the denied pattern `" + denied + "` (kforge optimize --deny)");
  return Evaluate(problem_, main, eo, *deps_.runner);
}

// Where an attempt's time went (store: attempts.seconds_json): queued after its answer, the
// judgement's compile gate (what was left of a farm build), the worker's checks and timing.
json AttemptSeconds(const Verdict& v, double evaluate, double queue) {
  json s = {{"queue", queue}, {"evaluate", evaluate}, {"compile", v.stages.value("compile", 0.0)}};
  double check = 0, time = 0;
  for (const auto& [phase, ms] : v.worker_phases.items()) {
    if (!ms.is_number()) continue;
    if (phase == "checks") check += ms.get<double>() / 1000;
    if (phase == "timing") time += ms.get<double>() / 1000;
  }
  // A Python candidate's job has no worker phases: its stages say the same (its inline and
  // Triton builds happen as it loads).
  if (check == 0) check = v.stages.value("python_candidate.check", 0.0);
  if (time == 0) time = v.stages.value("python_candidate.timed runs", 0.0);
  if (v.stages.contains("python_candidate.load")) s["compile"] = v.stages.value("python_candidate.load", 0.0);
  s["check"] = check;
  s["time"] = time;
  return s;
}

Status ForgeRun::EvaluateAttempt(AttemptRow& a) {
  fs::path main;
  KF_RETURN_IF_ERROR(WriteFiles(a, &main));
  a.state = "evaluating";
  a.source_hash = HashHex(a.source + a.extra_files_json);
  KF_RETURN_IF_ERROR(deps_.store->UpdateAttempt(a));
  // Only the models' candidates: the seed is the baseline, and the tuner's search must measure
  // every configuration it asks for (a default one may reproduce the seed's text exactly).
  if (a.phase != "seed" && a.phase != "tune" && a.source != kNoCodeSource)
    if (const AttemptRow* same = SameSource(a)) return RecordDuplicate(a, *same, main);
  Progress(a.phase, a, "evaluating attempt " + std::to_string(a.number));
  const int64_t incumbent = best_ ? best_->number : -1;
  double t0 = Now();
  EvalOptions eo = options_.eval;
  eo.backend = options_.backend;
  if (a.phase == "tune") eo.baselines = false;
  Result<Verdict> v = Status::Internal("not judged");
  double t1 = 0;
  if (auto it = ahead_.find(a.number); it != ahead_.end()) {
    AheadVerdict ahead = it->second.get();  // its own start and end, not this wait
    ahead_.erase(it);
    v = std::move(ahead.verdict);
    t0 = ahead.started;
    t1 = ahead.ended;
  } else {
    v = Judge(a, main, eo);
    t1 = Now();
  }
  if (!v.ok()) return v.status();
  KF_RETURN_IF_ERROR(deps_.store->AddStage({run_.id, a.number, "evaluate", t1 - t0}));
  a.seconds_json = AttemptSeconds(*v, t1 - t0, ready_at_.count(a.number) ? t0 - ready_at_[a.number] : 0).dump();
  a.state = "done";
  a.status = VerdictStatusName(v->status);
  a.verdict_json = v->ToJson().dump();
  a.median_ms = v->timing && v->correct() ? v->timing->median_ms : 0;
  a.sol_percent = v->sol_percent;
  KF_RETURN_IF_ERROR(WriteFileAtomic(main.parent_path() / "verdict.json", v->ToJson().dump(1)));
  KF_RETURN_IF_ERROR(deps_.store->UpdateAttempt(a));
  KF_RETURN_IF_ERROR(Reload());
  Progress(a.phase, a, "attempt " + std::to_string(a.number) + ": " + a.status + (a.median_ms > 0 ? " " + std::to_string(a.median_ms) + " ms" : ""));
  // The tuner confirms its top configurations once its search is over (ConfirmTop).
  if (a.phase != "seed" && a.phase != "tune") KF_RETURN_IF_ERROR(Challenge(a.number, incumbent));
  return Status::Ok();
}

// The batch's candidates go to the compile farm (eval/compile_farm.h) before the first is
// judged: their builds run on every core while, on a GPU, the first judgements time; where the
// device may be the host CPU the judging waits until the builds are done.
Status ForgeRun::BuildAhead(const std::vector<AttemptRow>& batch) {
  const double t0 = Now();
  for (const AttemptRow& a : batch) ready_at_[a.number] = t0;
  if (batch.size() < 2) return Status::Ok();  // one candidate: its judgement builds it
  if (!farm_) farm_ = std::make_unique<CompileFarm>(*deps_.runner);
  EvalOptions eo = options_.eval;
  eo.backend = options_.backend;
  for (const AttemptRow& a : batch) {
    if (a.source.empty() || a.source == kNoCodeSource || a.state != "generating") continue;  // abandoned, or nothing to build
    fs::path main;
    KF_RETURN_IF_ERROR(WriteFiles(a, &main));
    farm_->Submit(problem_, main, eo);
  }
  if (MayJudgeWhileBuilding(options_.backend)) return Status::Ok();
  farm_->Wait();
  return deps_.store->AddStage({run_.id, -1, "build", Now() - t0});
}

void ForgeRun::JudgeAhead(const std::vector<AttemptRow>& batch) {
  int jobs = options_.judge_jobs > 0 ? options_.judge_jobs : MayJudgeWhileBuilding(options_.backend) ? options_.candidates : 1;
  struct Item {
    AttemptRow attempt;
    fs::path main;
    std::promise<AheadVerdict> done;
  };
  auto items = std::make_shared<std::vector<Item>>();
  for (const AttemptRow& a : batch) {
    fs::path main;
    if (a.source.empty() || a.state != "generating" || !WriteFiles(a, &main).ok()) continue;  // EvaluateAttempt says why
    items->push_back({a, main, {}});
  }
  jobs = std::min<int>(jobs, static_cast<int>(items->size()));
  if (jobs < 2) return;
  for (Item& item : *items) ahead_[item.attempt.number] = item.done.get_future().share();
  EvalOptions eo = options_.eval;
  eo.backend = options_.backend;
  auto next = std::make_shared<std::atomic<size_t>>(0);
  for (int j = 0; j < jobs; ++j)
    ahead_threads_.emplace_back([this, items, next, eo] {
      for (size_t i; (i = (*next)++) < items->size();) {
        AheadVerdict r;
        r.started = Now();
        r.verdict = Judge((*items)[i].attempt, (*items)[i].main, eo);
        r.ended = Now();
        (*items)[i].done.set_value(std::move(r));
      }
    });
}

// Every judgement started ahead has ended (the batch is recorded, or the run is ending early).
void ForgeRun::JoinAhead() {
  for (std::thread& t : ahead_threads_) t.join();
  ahead_threads_.clear();
  ahead_.clear();
}

// An earlier attempt of this run with the same source (a model often returns its parent, or
// the seed, verbatim): judged already, so the candidate is not judged again.
const AttemptRow* ForgeRun::SameSource(const AttemptRow& a) const {
  for (const AttemptRow& b : attempts_)
    if (b.number != a.number && b.state == "done" && b.source_hash == a.source_hash && b.status != "duplicate" &&
        b.status != "abandoned")
      return &b;
  return nullptr;
}

// A duplicate's verdict says which attempt it repeats and what that one was judged, so that a
// repair prompt tells the model to change the kernel rather than return it again.
Status ForgeRun::RecordDuplicate(AttemptRow& a, AttemptRow same, const fs::path& main) {
  char ms[48] = "";
  if (same.median_ms > 0) std::snprintf(ms, sizeof ms, ", %.4f ms", same.median_ms);
  const std::string judged = same.status + ms;
  json v = {{"status", "duplicate"},
            {"duplicate_of", same.number},
            {"message", "this candidate is identical to attempt " + std::to_string(same.number) + " (judged " + judged +
                            "), so it was not judged again: return a changed kernel"}};
  a.state = "done";
  a.status = "duplicate";
  a.verdict_json = v.dump();
  a.median_ms = 0;
  a.sol_percent = 0;
  KF_RETURN_IF_ERROR(WriteFileAtomic(main.parent_path() / "verdict.json", v.dump(1)));
  KF_RETURN_IF_ERROR(deps_.store->UpdateAttempt(a));
  KF_RETURN_IF_ERROR(Reload());
  Progress(a.phase, a, "attempt " + std::to_string(a.number) + ": identical to attempt " + std::to_string(same.number) + ", not judged again");
  return Status::Ok();
}

const AttemptRow* ForgeRun::SeedAttempt() const {
  for (const AttemptRow& a : attempts_)
    if (a.phase == "seed" && IsCorrect(a)) return &a;
  return nullptr;
}

// Re-times `kernels` interleaved. A kernel that fails in confirmation is recorded as failed
// (the seed is only left out) and the rest are confirmed again; `kernels` ends up holding the
// ones that were timed. nullopt when fewer than two remain.
Result<std::optional<InterleavedTimes>> ForgeRun::ConfirmAttempts(std::vector<AttemptRow>& kernels) {
  EvalOptions eo = options_.eval;
  eo.backend = options_.backend;
  while (kernels.size() >= 2) {
    std::vector<ConfirmSubject> subjects;
    std::string names;
    for (const AttemptRow& k : kernels) {
      fs::path main;
      KF_RETURN_IF_ERROR(WriteFiles(k, &main));  // the artifacts may have been cleaned since
      subjects.push_back({ConfirmLabel(k), main, ""});
      names += (names.empty() ? "" : ", ") + ConfirmLabel(k);
    }
    Progress("confirm", kernels[0], "confirming " + names);
    KF_ASSIGN_OR_RETURN(InterleavedTimes t, ConfirmInterleaved(problem_, subjects, eo, options_.confirm_options, *deps_.runner));
    KF_RETURN_IF_ERROR(deps_.store->AddStage({run_.id, kernels[0].number, "confirm", t.seconds}));
    if (t.failed < 0) return std::optional<InterleavedTimes>(std::move(t));
    const AttemptRow failed = kernels[static_cast<size_t>(t.failed)];
    Progress("confirm", failed, ConfirmLabel(failed) + " failed in confirmation: " + t.failure->message);
    if (failed.phase != "seed") {
      KF_RETURN_IF_ERROR(FailInConfirmation(failed.number, *t.failure));
    } else {
      KF_RETURN_IF_ERROR(NoteSeedFailure(failed.number, *t.failure));
    }
    kernels.erase(kernels.begin() + t.failed);
  }
  return std::optional<InterleavedTimes>();
}

// An attempt's verdict changed after its judgement: into the store and its verdict.json.
Status ForgeRun::SaveVerdict(AttemptRow& a, const json& v) {
  a.verdict_json = v.dump();
  fs::path main;
  KF_RETURN_IF_ERROR(WriteFiles(a, &main));
  KF_RETURN_IF_ERROR(WriteFileAtomic(main.parent_path() / "verdict.json", v.dump(1)));
  return deps_.store->UpdateAttempt(a);
}

// Appends confirmations to an attempt's verdict (store and verdict.json); `lost_to` marks it as
// beaten by that attempt; `pick` marks the tuner's confirmed choice.
Status ForgeRun::RecordConfirmation(int64_t number, const std::vector<Confirmation>& cs, int64_t lost_to, bool pick) {
  KF_ASSIGN_OR_RETURN(AttemptRow a, deps_.store->GetAttempt(run_.id, number));
  json v = VerdictOf(a);
  if (!v.contains("confirmed") || !v["confirmed"].is_array()) v["confirmed"] = json::array();
  for (const Confirmation& c : cs) v["confirmed"].push_back(c.ToJson());
  if (lost_to > 0) v["confirmation_lost_to"] = lost_to;
  if (pick) v["confirmed_pick"] = true;
  return SaveVerdict(a, v);
}

// The seed is the problem's own kernel: one that fails a confirmation job is left out of that
// confirmation and stays the baseline, and its verdict records what failed
// (`confirmation_failures`), so the run shows why it was confirmed against others.
Status ForgeRun::NoteSeedFailure(int64_t number, const Verdict& failure) {
  KF_ASSIGN_OR_RETURN(AttemptRow a, deps_.store->GetAttempt(run_.id, number));
  json v = VerdictOf(a);
  if (!v.contains("confirmation_failures") || !v["confirmation_failures"].is_array()) v["confirmation_failures"] = json::array();
  v["confirmation_failures"].push_back({{"status", VerdictStatusName(failure.status)}, {"gate", failure.gate}, {"message", failure.message}});
  KF_RETURN_IF_ERROR(SaveVerdict(a, v));
  return Reload();
}

// A correct kernel must stay correct in confirmation: the failing job's verdict becomes the
// attempt's (the judgement's verdict stays beside it, under "judged").
Status ForgeRun::FailInConfirmation(int64_t number, const Verdict& failure) {
  KF_ASSIGN_OR_RETURN(AttemptRow a, deps_.store->GetAttempt(run_.id, number));
  json judged = VerdictOf(a), v = failure.ToJson();
  v["message"] = "failed in confirmation: " + failure.message;
  v["judged"] = judged;
  a.status = VerdictStatusName(failure.status);
  a.median_ms = 0;
  KF_RETURN_IF_ERROR(SaveVerdict(a, v));
  return Reload();
}

// Attempt `number` measured faster than `incumbent`, the best before it: it becomes the best
// only if its confirmed ratio over the incumbent is above 1. Confirmed against the seed too.
Status ForgeRun::Challenge(int64_t number, int64_t incumbent) {
  if (!options_.confirm || !best_ || best_->number != number || incumbent <= 0 || incumbent == number) return Status::Ok();
  KF_ASSIGN_OR_RETURN(AttemptRow challenger, deps_.store->GetAttempt(run_.id, number));
  KF_ASSIGN_OR_RETURN(AttemptRow held, deps_.store->GetAttempt(run_.id, incumbent));
  std::vector<AttemptRow> kernels = {challenger, held};
  if (const AttemptRow* seed = SeedAttempt(); seed && seed->number != incumbent) kernels.push_back(*seed);
  KF_ASSIGN_OR_RETURN(std::optional<InterleavedTimes> t, ConfirmAttempts(kernels));
  if (!t) return Reload();
  auto index = [&](int64_t n) {
    for (size_t i = 0; i < kernels.size(); ++i)
      if (kernels[i].number == n) return static_cast<int>(i);
    return -1;
  };
  int c = index(number), h = index(incumbent), seed = -1;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].phase == "seed") seed = static_cast<int>(i);
  if (c < 0) return Reload();  // the challenger failed in confirmation
  std::vector<Confirmation> cs;
  int64_t lost_to = -1;
  if (h >= 0) {
    cs.push_back(t->Compare(static_cast<size_t>(c), static_cast<size_t>(h)));
    if (cs.back().ratio <= 1) lost_to = incumbent;
  }
  if (seed >= 0 && seed != h) cs.push_back(t->Compare(static_cast<size_t>(c), static_cast<size_t>(seed)));
  KF_RETURN_IF_ERROR(RecordConfirmation(number, cs, lost_to));
  KF_RETURN_IF_ERROR(Reload());
  if (!cs.empty())
    Progress("confirm", challenger, ConfirmLabel(challenger) + (lost_to > 0 ? " stays behind: " : " is the new best: ") + cs.front().Summary());
  return Status::Ok();
}

// The tuner's choice: its `confirm_top` fastest configurations (single measurements) are
// re-timed together with the seed, and the best confirmed ratio over the seed wins (over the
// fastest single measurement when there is no seed). Once per run: a resumed run that finds the
// pick keeps it.
Status ForgeRun::ConfirmTop() {
  if (!options_.confirm) return Status::Ok();
  std::vector<AttemptRow> top;
  for (const AttemptRow& a : attempts_) {
    if (a.phase != "tune") continue;
    if (VerdictOf(a).contains("confirmed_pick")) return Status::Ok();
    if (IsCorrect(a) && !LostConfirmation(a)) top.push_back(a);
  }
  std::stable_sort(top.begin(), top.end(), [](const AttemptRow& x, const AttemptRow& y) { return x.median_ms < y.median_ms; });
  if (top.size() > static_cast<size_t>(std::max(options_.confirm_top, 1))) top.resize(static_cast<size_t>(std::max(options_.confirm_top, 1)));
  std::vector<AttemptRow> kernels = top;
  if (const AttemptRow* seed = SeedAttempt()) kernels.insert(kernels.begin(), *seed);
  KF_ASSIGN_OR_RETURN(std::optional<InterleavedTimes> t, ConfirmAttempts(kernels));
  if (!t) return Reload();
  int seed = kernels[0].phase == "seed" ? 0 : -1;
  int winner = PickConfirmed(*t, 0, seed);
  if (winner < 0) return Reload();
  // The others first: a run killed in between finds no pick and confirms again.
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (static_cast<int>(i) == seed || static_cast<int>(i) == winner) continue;
    std::vector<Confirmation> cs;
    if (seed >= 0) cs.push_back(t->Compare(i, 0));
    cs.push_back(t->Compare(i, static_cast<size_t>(winner)));
    KF_RETURN_IF_ERROR(RecordConfirmation(kernels[i].number, cs, kernels[static_cast<size_t>(winner)].number));
  }
  std::vector<Confirmation> cs;
  const size_t w = static_cast<size_t>(winner);
  // A seed whose single measurement beat the pick, but which is confirmed slower, is not the best.
  if (seed >= 0 && t->Compare(w, 0).ratio > 1 && kernels[0].median_ms < kernels[w].median_ms)
    KF_RETURN_IF_ERROR(RecordConfirmation(kernels[0].number, {t->Compare(0, w)}, kernels[w].number));
  if (seed >= 0) cs.push_back(t->Compare(w, 0));
  for (size_t i = 0; i < kernels.size(); ++i)
    if (static_cast<int>(i) != seed && i != w) cs.push_back(t->Compare(w, i));
  KF_RETURN_IF_ERROR(RecordConfirmation(kernels[w].number, cs, -1, true));
  KF_RETURN_IF_ERROR(Reload());
  if (!cs.empty()) Progress("confirm", kernels[w], ConfirmLabel(kernels[w]) + " picked: " + cs.front().Summary());
  return Status::Ok();
}

// Before a speedup is reported: the best against the seed, unless that was confirmed already.
// A best that fails there hands over to the next one, which is confirmed in its turn.
Status ForgeRun::ConfirmBestAgainstSeed() {
  for (int tries = 0; options_.confirm && tries < 3 && best_; ++tries) {
    const AttemptRow* seed = SeedAttempt();
    if (!seed || seed->number == best_->number) return Status::Ok();
    for (const json& c : VerdictOf(*best_).value("confirmed", json::array()))
      if (c.value("against", "") == "seed") return Status::Ok();
    const int64_t best = best_->number;
    std::vector<AttemptRow> kernels = {*best_, *seed};
    KF_ASSIGN_OR_RETURN(std::optional<InterleavedTimes> t, ConfirmAttempts(kernels));
    if (t) {
      KF_RETURN_IF_ERROR(RecordConfirmation(best, {t->Compare(0, 1)}, -1));
      return Reload();
    }
    if (best_ && best_->number == best) return Status::Ok();  // the seed failed: nothing to confirm against
  }
  return Status::Ok();
}

Status ForgeRun::EnsureSeed() {
  for (const AttemptRow& a : attempts_)
    if (a.phase == "seed") return Status::Ok();
  auto it = problem_.seeds.find(options_.backend);
  if (it == problem_.seeds.end()) return Status::Ok();
  KF_ASSIGN_OR_RETURN(AttemptRow a, NewAttempt("seed", 0, -1));
  KF_ASSIGN_OR_RETURN(a.source, ReadFile(it->second));
  fs::path sib = it->second;
  sib.replace_extension(backend_->sibling_extension);
  if (backend_->sibling_program_source && fs::exists(sib)) {
    KF_ASSIGN_OR_RETURN(std::string program, ReadFile(sib));
    a.extra_files_json = json{{"program", program}}.dump();
  }
  KF_RETURN_IF_ERROR(EvaluateAttempt(a));
  if (IsCorrect(a)) {
    run_.seed_ms = a.median_ms;
    KF_RETURN_IF_ERROR(deps_.store->UpdateRun(run_));
  }
  return Status::Ok();
}

// A request that does not fit the model's context window is not sent: it is recorded with the
// [context_too_long] error and fails like a failed call.
Result<std::string> ForgeRun::CallModel(llm::LlmClient& client, const FittedRequest& fitted, const PromptLimits& limits,
                                        const std::string& agent, int64_t attempt, const json& details) {
  const llm::ChatRequest& req = fitted.request;
  double t0 = Now();
  Status fits = CheckFits(fitted, limits, client.Describe());
  llm::ChatRequest streamed = req;
  streamed.on_progress = [this, &agent, attempt](const llm::StreamProgress& p) { LiveProgress(agent, attempt, p); };
  Result<llm::ChatResponse> r = fits.ok() ? client.Complete(streamed) : Result<llm::ChatResponse>(fits);
  LlmCallRow row;
  row.run_id = run_.id;
  row.attempt = attempt;
  row.agent = agent;
  row.model = client.Describe();
  json prompt = RequestToJson(req);
  // The model the request went to (the client fills an unset one from its settings).
  if (prompt.value("model", "").empty()) prompt["model"] = r.ok() && !r->model.empty() ? r->model : ModelOfClient(client);
  row.prompt_json = prompt.dump();
  const PromptSize size = MeasurePrompt(req);
  row.prompt_chars = size.chars;
  row.prompt_tokens_estimate = size.estimated_tokens;
  row.prompt_shrunk = fitted.shrunk;
  if (r.ok()) {
    row.response_text = r->text;
    row.finish_reason = std::string(llm::FinishReasonName(r->finish_reason));
    row.input_tokens = r->usage.input_tokens;
    row.output_tokens = r->usage.output_tokens;
    row.cached_tokens = r->usage.cached_input_tokens;
    row.cost_usd = r->cost_usd.value_or(0);
    row.latency_ms = static_cast<double>(r->latency.count());
    row.request_id = r->request_id;
    json d = CallDetails(*r);
    d.update(details);
    row.details_json = d.dump();
  } else {
    row.error = r.status().message();
    row.details_json = details.dump();
  }
  KF_RETURN_IF_ERROR(deps_.store->AddLlmCall(row).status());
  KF_RETURN_IF_ERROR(deps_.store->AddStage({run_.id, attempt, agent == "analyst" ? "analyse" : "generate", Now() - t0}));
  {
    std::lock_guard<std::mutex> lock(reload_mu_);
    KF_RETURN_IF_ERROR(Reload());
  }
  if (!r.ok()) return r.status();
  std::string text = r->text;
  if (r->finish_reason == llm::FinishReason::kLength) text += kCutOffNote;
  if (r->finish_reason == llm::FinishReason::kRepetition) text += kRepetitionNote;
  return text;
}

// A streamed answer's progress, on the progress line: tokens so far and their rate.
void ForgeRun::LiveProgress(const std::string& agent, int64_t attempt, const llm::StreamProgress& p) {
  if (!deps_.progress) return;
  AttemptRow a;
  a.number = attempt;
  a.status = agent == "analyst" ? "analysing" : "generating";
  std::string event = agent + ": " + std::to_string(p.tokens) + " tokens";
  if (p.TokensPerSecond() > 0) event += fmt::format(" at {:.1f} tokens/s", p.TokensPerSecond());
  event += fmt::format(" (first after {:.1f} s)", std::chrono::duration<double>(p.first_token).count());
  std::lock_guard<std::mutex> lock(reload_mu_);
  ProgressState s = State(agent == "analyst" ? "optimize" : "generate", a);
  deps_.progress->Tick(s, event);
}

GenerationContext ForgeRun::BaseContext(const std::string& task, int64_t repairing) {
  GenerationContext c;
  c.problem = &problem_;
  c.backend = options_.backend;
  c.task = task;
  c.memory = Memory(repairing);
  c.instructions = options_.instructions;
  c.deny = options_.deny;
  for (const std::string& f : options_.context_files) {
    Result<std::string> text = ReadFile(f);
    if (text.ok()) c.context += "### " + f + "\n```\n" + *text + "\n```\n";
  }
  c.transfer = transfer_text_;
  if (!transfer_text_.empty()) c.transfer_backend = options_.transfer_backend;
  return c;
}

}  // namespace

// One line on why an attempt failed, for the memory of failed approaches: the first line of the
// verdict's message that names an error (else its first line), with temporary folders taken off
// paths (".../kforge-job-x1y2/candidate.cc:12:5" reads "candidate.cc:12:5"), cut at a word
// boundary.
std::string FailureSummary(const std::string& message, size_t max_chars) {
  std::vector<std::string> lines;
  for (size_t start = 0; start <= message.size();) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    std::string line = message.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  if (lines.empty()) return "";
  // A compiler's "error:" line first, then any line naming an error, then the first line.
  std::string pick;
  for (const char* word : {"error:", "error"}) {
    for (const std::string& l : lines) {
      std::string lower = l;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (lower.find(word) != std::string::npos) {
        pick = l;
        break;
      }
    }
    if (!pick.empty()) break;
  }
  if (pick.empty()) pick = lines.front();
  // Paths: keep the file name (and what follows it: line and column).
  std::string out;
  for (size_t i = 0; i < pick.size();) {
    if (pick[i] == '/' && (i == 0 || pick[i - 1] == ' ' || pick[i - 1] == '(' || pick[i - 1] == '\'' || pick[i - 1] == '"')) {
      size_t end = pick.find_first_of(" :'\")", i);
      if (end == std::string::npos) end = pick.size();
      std::string path = pick.substr(i, end - i);
      out += path.substr(path.rfind('/') + 1);
      i = end;
    } else {
      out += pick[i++];
    }
  }
  size_t first = out.find_first_not_of(" \t");
  out = first == std::string::npos ? "" : out.substr(first);
  if (out.size() <= max_chars) return out;
  size_t cut = out.rfind(' ', max_chars);
  if (cut == std::string::npos || cut < max_chars / 2) cut = max_chars;
  return out.substr(0, cut) + " ...";
}

namespace {

// Failed approaches, most recent last: one line per distinct failure of the last six failed
// attempts, naming the attempts it stands for. The attempt being repaired is left out: its
// whole verdict is in the prompt.
std::string ForgeRun::Memory(int64_t repairing) const {
  std::vector<std::pair<std::string, std::vector<int64_t>>> lines;  // oldest first
  int n = 0;
  for (auto it = attempts_.rbegin(); it != attempts_.rend() && n < 6; ++it) {
    if (it->state != "done" || it->status == "correct" || it->status == "abandoned" || it->phase == "seed") continue;
    if (it->number == repairing) continue;
    ++n;
    json v = json::parse(it->verdict_json.empty() ? "{}" : it->verdict_json, nullptr, false);
    std::string why = it->phase + ": " + it->status;
    // A compile error's line is the compiler's first "error:" line, when it printed one.
    std::string text = v.is_object() ? v.value("message", "") : "";
    if (v.is_object() && v.contains("compiler_output") && v["compiler_output"].is_string())
      text += "\n" + v["compiler_output"].get<std::string>();
    if (std::string s = FailureSummary(text, 240); !s.empty()) why += ": " + s;
    auto same = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == why; });
    if (same != lines.end()) {
      same->second.insert(same->second.begin(), it->number);
    } else {
      lines.insert(lines.begin(), {why, {it->number}});
    }
  }
  std::string m;
  for (const auto& [why, numbers] : lines) {
    std::string which;
    for (int64_t k : numbers) which += (which.empty() ? "" : ", ") + std::to_string(k);
    m += "- attempt" + std::string(numbers.size() > 1 ? "s " : " ") + which + " (" + why + ")\n";
  }
  return m;
}

// A role's sampling settings onto its request; unset ones leave the client's defaults.
void ApplyRole(const llm::RoleSettings& role, llm::ChatOptions* options) {
  if (role.temperature) options->temperature = role.temperature;
  if (role.max_output_tokens) options->max_output_tokens = role.max_output_tokens;
  if (role.seed) options->seed = role.seed;
}

json RoleToJson(const llm::RoleSettings& role) {
  json j = json::object();
  if (role.temperature) j["temperature"] = *role.temperature;
  if (role.max_output_tokens) j["max_output_tokens"] = *role.max_output_tokens;
  if (role.seed) j["seed"] = *role.seed;
  return j;
}

llm::RoleSettings RoleFromJson(const json& j) {
  llm::RoleSettings role;
  if (!j.is_object()) return role;
  if (j.contains("temperature")) role.temperature = j["temperature"].get<double>();
  if (j.contains("max_output_tokens")) role.max_output_tokens = j["max_output_tokens"].get<int>();
  if (j.contains("seed")) role.seed = j["seed"].get<int64_t>();
  return role;
}

// A candidate as the models see it: its main file, and its sibling kernel source when it has
// one, each in a fenced block labelled with the backend's code-block languages
// (backend/registry.h), the labels its answer format asks for.
std::string CandidateText(const AttemptRow& a, const BackendSpec& backend) {
  const std::string main = backend.code_languages.empty() ? "" : backend.code_languages[0];
  const std::string program =
      backend.sibling_code_languages.empty() ? "" : backend.sibling_code_languages[0];
  std::string s = FencedBlock(main, a.source);
  json extra = json::parse(a.extra_files_json.empty() ? "{}" : a.extra_files_json, nullptr, false);
  if (extra.is_object() && extra.contains("program"))
    s += FencedBlock(program, extra["program"].get<std::string>());
  return s;
}

// Asks the model, extracts the candidate (asking once more when the answer was cut off, stopped
// for repeating itself, or had no code) and fills `a`'s source. The attempt stays "generating" until it is evaluated.
Status ForgeRun::GenerateInto(AttemptRow& a, GenerationContext ctx) {
  llm::ChatOptions options;
  ApplyRole(options_.generator_llm, &options);
  KF_ASSIGN_OR_RETURN(const FittedRequest first, FitGenerationRequest(ctx, options, options_.generator_prompt));
  FittedRequest req = first;
  for (int round = 0; round < 2; ++round) {
    KF_ASSIGN_OR_RETURN(std::string answer, CallModel(*deps_.generator, req, options_.generator_prompt, "generator", a.number));
    Result<ExtractedCandidate> c = ExtractCandidate(answer, options_.backend);
    bool cut = HasNote(answer, kCutOffNote);
    if (c.ok() && !c->truncated && !cut) {
      a.source = c->main;
      a.extra_files_json = c->program.empty() ? "" : json{{"program", c->program}}.dump();
      return Status::Ok();
    }
    const char* task = HasNote(answer, kRepetitionNote) ? "task_repetition.md" : "task_truncated.md";
    KF_ASSIGN_OR_RETURN(std::string again, RenderPrompt(task, {}));
    req = FitFollowUp(first, answer, c.ok() ? again : c.status().message(), options_.generator_prompt);
  }
  a.source = kNoCodeSource;  // not judged: Judge gives its verdict
  return Status::Ok();
}

// Generates until a correct kernel exists or the attempts run out. With `start`, repairs that
// candidate; without, writes one from scratch (or from the seed's verdict). `made` generations
// of this chain were made already (by an earlier session of a resumed run).
Result<bool> ForgeRun::Functional(int64_t iteration, const AttemptRow* start, int made) {
  AttemptRow previous = start ? *start : AttemptRow{};
  for (int k = made; k < options_.functional_attempts; ++k) {
    std::string why;
    if (OverBudget(&why)) return false;
    GenerationContext ctx = BaseContext(previous.number > 0 ? "repair" : "first", previous.number);
    if (previous.number > 0) {
      ctx.previous = CandidateText(previous, *backend_);
      ctx.previous_files = CandidateFiles(previous, options_.backend, *backend_);
      json v = json::parse(previous.verdict_json, nullptr, false);
      ctx.verdict_status = previous.status;
      ctx.verdict_feedback = v.is_object() ? VerdictFeedback(v) : "";
    }
    KF_ASSIGN_OR_RETURN(AttemptRow a, NewAttempt("functional", iteration, previous.number > 0 ? previous.number : -1));
    KF_RETURN_IF_ERROR(GenerateInto(a, ctx));
    KF_RETURN_IF_ERROR(EvaluateAttempt(a));
    if (IsCorrect(a)) return true;
    previous = a;
  }
  return false;
}

// `best` is a copy: CallModel reloads the attempts, which would leave a reference dangling.
Result<Recommendation> ForgeRun::Analyse(AttemptRow best) {
  json verdict = json::parse(best.verdict_json, nullptr, false);
  Verdict v;
  // Rebuild what BuildProfile reads from the stored verdict JSON.
  v.problem = problem_.name;
  v.backend = options_.backend;
  v.sizes = verdict.value("sizes", std::map<std::string, int64_t>{});
  if (verdict.contains("timing")) v.timing = TimingStats{verdict["timing"].value("runs", 0), verdict["timing"].value("median_ms", 0.0),
                                                          verdict["timing"].value("min_ms", 0.0), verdict["timing"].value("mean_ms", 0.0),
                                                          verdict["timing"].value("stdev_ms", 0.0), verdict["timing"].value("cv", 0.0),
                                                          verdict["timing"].value("host_median_ms", 0.0)};
  json roof = verdict.value("roofline", json::object());
  v.flops = roof.value("flops", 0.0);
  v.bytes = roof.value("bytes", 0.0);
  v.floor_ms = roof.value("floor_ms", 0.0);
  v.achievable_floor_ms = roof.value("achievable_floor_ms", 0.0);
  v.sol_percent = roof.value("sol_percent", 0.0);
  v.fingerprint = verdict.value("fingerprint", json::object());
  json profile = BuildProfile(v);
  Recommendation rec = RuleAnalyst(profile);
  if (deps_.analyst) {
    llm::ChatOptions options;
    ApplyRole(options_.analyst_llm, &options);
    const PromptLimits& limits = options_.analyst_prompt;
    KF_ASSIGN_OR_RETURN(FittedRequest first,
                        FitAnalystRequest({problem_.name, options_.backend, CandidateText(best, *backend_), profile}, options, limits));
    KF_ASSIGN_OR_RETURN(const json images, AttachProfileImages(best, verdict, &first.request));
    FittedRequest req = first;
    req.request.files = CandidateFiles(best, options_.backend, *backend_);
    // An answer that does not parse (cut off at the cap, prose, broken JSON) is re-asked once
    // with the reason; then the rules' recommendation is used, and the progress line says so.
    // A failed call (the server gone, an error answer) costs the run its analyst advice for
    // this pass, not the run: the rules advise instead, and the progress line says why. The
    // failed call is recorded like any other.
    for (int round = 0; round < 2; ++round) {
      Result<std::string> called = CallModel(*deps_.analyst, req, limits, "analyst", best.number, images);
      if (!called.ok()) {
        Progress("optimize", best, "analyst: the model call failed (" + FailureSummary(called.status().message(), 300) +
                                       "); using the rules' recommendation");
        break;
      }
      const std::string& answer = *called;
      Result<Recommendation> parsed = ParseRecommendation(answer);
      if (parsed.ok()) { rec = *parsed; break; }
      if (round == 1) { Progress("optimize", best, "analyst: its answer could not be read twice (" + parsed.status().message() + "); using the rules' recommendation"); break; }
      KF_ASSIGN_OR_RETURN(std::string again, RenderPrompt("analyst_retry.md", {{"error", parsed.status().message()}}));
      req = FitFollowUp(first, answer, again, limits);
    }
  }
  KF_RETURN_IF_ERROR(deps_.store->AddRecommendation({run_.id, best.number, rec.source, rec.ToJson().dump()}));
  return rec;
}

// Profile images (docs/loop.md, "Profile images"), for an analyst whose model takes images: the
// roofline of this run's correct attempts and the best's time per kernel, rendered by gnuplot
// into the best's attempt folder and added to the request's first message after a caption.
// Returns what the call's details record: the images sent with their hashes, and what was left
// out and why. Without gnuplot the analyst gets text only and the progress line says so, once.
Result<json> ForgeRun::AttachProfileImages(const AttemptRow& best, const json& verdict, llm::ChatRequest* request) {
  if (!deps_.analyst->AcceptsImages() || !deps_.runner || request->messages.empty()) return json::object();
  auto point = [](const AttemptRow& a) {
    json roof = VerdictOf(a).value("roofline", json::object());
    return AttemptPoint{a.number, a.phase == "seed", a.median_ms, roof.value("flops", 0.0), roof.value("bytes", 0.0)};
  };
  ProfileImageInput in{problem_.name + " (" + options_.backend + ")", point(best), verdict, {}};
  for (const AttemptRow& a : attempts_)
    if (IsCorrect(a)) in.attempts.push_back(point(a));
  // One set of files per analysis: a best analysed again in a later pass keeps its earlier images.
  KF_ASSIGN_OR_RETURN(std::vector<RecommendationRow> recs, deps_.store->Recommendations(run_.id));
  const std::string prefix = "analysis-" + std::to_string(recs.size() + 1) + "-";
  ProfileImages images = MakeProfileImages(in, dir_ / ("attempt-" + std::to_string(best.number)), prefix, *deps_.runner);
  KF_RETURN_IF_ERROR(deps_.store->AddStage({run_.id, best.number, "render images", images.seconds}));
  if (images.images.empty() && !images_warned_) {
    images_warned_ = true;
    Progress("optimize", best, "warning: no profile images for the analyst (" +
                                   (images.left_out.empty() ? std::string("none drawn") : images.left_out.front()) + "); it reads text only");
  }
  if (images.images.empty()) return images.ToJson(dir_);
  std::map<std::string, std::string> vars;
  for (const ProfileImage& i : images.images) vars[i.name] = "1";
  KF_ASSIGN_OR_RETURN(std::string caption, RenderPrompt("analyst_images.md", vars));
  llm::Message& message = request->messages.front();
  message.parts.push_back(llm::ContentPart::Text(caption));
  for (const ProfileImage& i : images.images) message.parts.push_back(llm::ContentPart::Image("image/png", i.png));
  return images.ToJson(dir_);
}

Status ForgeRun::Optimize() {
  // A pass is done once one of its candidates was generated: a pass whose every candidate was
  // abandoned (the run was killed, or the model failed, while generating) is made again.
  int64_t done_passes = 0, no_gain = 0;
  for (const AttemptRow& a : attempts_)
    if (a.phase == "optimize" && a.status != "abandoned") done_passes = std::max(done_passes, a.iteration);
  for (int64_t pass = done_passes + 1; pass <= options_.iterations; ++pass) {
    std::string why;
    if (OverBudget(&why) || !best_) break;
    AttemptRow best = *best_;
    double before = best.median_ms;
    KF_ASSIGN_OR_RETURN(Recommendation rec, Analyse(best));
    Progress("optimize", best, std::string(rec.source == "rules" ? "rules analyst: " : "analyst: ") + rec.bottleneck);
    std::vector<AttemptRow> batch;
    for (int k = 0; k < options_.candidates; ++k) {
      KF_ASSIGN_OR_RETURN(AttemptRow a, NewAttempt("optimize", pass, best.number));
      batch.push_back(a);
    }
    GenerationContext ctx = BaseContext("optimize", best.number);
    ctx.previous = CandidateText(best, *backend_);
    ctx.previous_files = CandidateFiles(best, options_.backend, *backend_);
    ctx.verdict_status = best.status;
    json bv = json::parse(best.verdict_json, nullptr, false);
    ctx.verdict_feedback = bv.is_object() ? VerdictFeedback(bv) : "";
    ctx.recommendation = rec.ToText();
    std::vector<std::future<Status>> gens;  // samples generated in parallel
    for (AttemptRow& a : batch) gens.push_back(std::async(std::launch::async, [this, &a, ctx] { return GenerateInto(a, ctx); }));
    for (auto& g : gens) KF_RETURN_IF_ERROR(g.get());
    KF_RETURN_IF_ERROR(BuildAhead(batch));
    JudgeAhead(batch);
    for (AttemptRow& a : batch) KF_RETURN_IF_ERROR(EvaluateAttempt(a));
    JoinAhead();
    for (AttemptRow& a : batch)
      if (!IsCorrect(a)) KF_RETURN_IF_ERROR(Functional(pass, &a).status());
    no_gain = best_ && best_->median_ms < before * 0.98 ? 0 : no_gain + 1;
    if (no_gain >= options_.patience) break;
  }
  return Status::Ok();
}

// Offline mode: the rule-based analyst and the tuner over the first kernel of the problem that
// declares kforge:tune parameters.
Status ForgeRun::Tune() {
  std::vector<fs::path> kernels;
  if (problem_.candidates.count(options_.backend)) kernels = problem_.candidates.at(options_.backend);
  if (problem_.seeds.count(options_.backend)) kernels.push_back(problem_.seeds.at(options_.backend));
  for (const fs::path& k : kernels) {
    KF_ASSIGN_OR_RETURN(std::string main, ReadFile(k));
    fs::path sib = k;
    sib.replace_extension(backend_->sibling_extension);
    std::string program = backend_->sibling_program_source && fs::exists(sib) ? ReadFile(sib).value() : "";
    KF_ASSIGN_OR_RETURN(std::vector<TunableParam> params, FindTunables({main, program}));
    if (params.empty()) continue;
    CoordinateSearch search(params);
    exhaustive_ = search.space_size();
    int evals = 0;
    for (const AttemptRow& a : attempts_) {
      if (a.phase != "tune" || a.state != "done") continue;
      json cfg = json::parse(a.params_json, nullptr, false);
      if (cfg.is_object()) search.Restore(cfg.get<TuneConfig>(), IsCorrect(a) ? std::optional<double>(a.median_ms) : std::nullopt);
      ++evals;
    }
    while (evals < options_.max_evaluations) {
      std::string why;
      if (OverBudget(&why)) break;
      std::optional<TuneConfig> cfg = search.Next();
      if (!cfg) break;
      AttemptRow init;
      init.source = ApplyTuneConfig(main, *cfg);
      if (!program.empty()) init.extra_files_json = json{{"program", ApplyTuneConfig(program, *cfg)}}.dump();
      init.params_json = json(*cfg).dump();
      KF_ASSIGN_OR_RETURN(AttemptRow a, NewAttempt("tune", ++evals, -1, init));
      KF_RETURN_IF_ERROR(EvaluateAttempt(a));
      search.Report(*cfg, IsCorrect(a) ? std::optional<double>(a.median_ms) : std::nullopt);
    }
    KF_RETURN_IF_ERROR(ConfirmTop());
    if (best_) KF_RETURN_IF_ERROR(Analyse(*best_).status());
    return Status::Ok();
  }
  if (best_) KF_RETURN_IF_ERROR(Analyse(*best_).status());
  return Status::Ok();
}

// Resume: an attempt killed while evaluating is evaluated again (its source is recorded); one
// killed while generating takes its recorded answer if the model call completed, and is
// otherwise abandoned (its call was never recorded, so nothing was counted).
Status ForgeRun::FinishPending() {
  KF_ASSIGN_OR_RETURN(std::vector<LlmCallRow> calls, deps_.store->LlmCalls(run_.id));
  for (AttemptRow a : std::vector<AttemptRow>(attempts_)) {
    if (a.state == "evaluating" || (a.state == "generating" && !a.source.empty())) {
      KF_RETURN_IF_ERROR(EvaluateAttempt(a));
      continue;
    }
    if (a.state != "generating") continue;
    for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
      if (it->attempt != a.number || it->agent != "generator" || !it->error.empty()) continue;
      Result<ExtractedCandidate> c = ExtractCandidate(it->response_text, options_.backend);
      if (c.ok() && !c->truncated) {
        a.source = c->main;
        a.extra_files_json = c->program.empty() ? "" : json{{"program", c->program}}.dump();
        KF_RETURN_IF_ERROR(EvaluateAttempt(a));
      }
      break;
    }
    if (a.state == "generating") {
      a.state = "done";
      a.status = "abandoned";
      KF_RETURN_IF_ERROR(deps_.store->UpdateAttempt(a));
    }
  }
  return Reload();
}

Result<ForgeSummary> ForgeRun::Finalize(const std::string& status, const std::string& reason) {
  KF_RETURN_IF_ERROR(Reload());
  KF_RETURN_IF_ERROR(ConfirmBestAgainstSeed());
  ForgeSummary s;
  s.run_id = run_.id;
  s.status = status;
  s.stop_reason = reason;
  s.seed_ms = run_.seed_ms;
  s.attempts = static_cast<int64_t>(attempts_.size());
  s.evaluations_exhaustive = static_cast<int64_t>(exhaustive_);
  for (const AttemptRow& a : attempts_) s.tune_evaluations += a.phase == "tune";
  KF_ASSIGN_OR_RETURN(std::vector<StageRow> stages, deps_.store->Stages(run_.id));
  for (const StageRow& st : stages) s.confirm_seconds += st.stage == "confirm" ? st.seconds : 0;
  if (best_) {
    for (const json& c : VerdictOf(*best_).value("confirmed", json::array())) s.confirmed.push_back(Confirmation::FromJson(c));
    s.best_attempt = best_->number;
    s.best_ms = best_->median_ms;
    s.sol_percent = best_->sol_percent;
    fs::path best_dir = dir_ / "best";
    fs::remove_all(best_dir);
    fs::copy(dir_ / ("attempt-" + std::to_string(best_->number)), best_dir, fs::copy_options::recursive);
    s.best_path = best_dir / ("candidate" + MainExtension(options_.backend));
    run_.best_attempt = best_->number;
    run_.best_ms = best_->median_ms;
  }
  run_.status = status;
  run_.stop_reason = reason;
  KF_RETURN_IF_ERROR(deps_.store->UpdateRun(run_));
  KF_ASSIGN_OR_RETURN(s.totals, deps_.store->Totals(run_.id));
  if (deps_.progress) deps_.progress->Finish();
  return s;
}

// A run that stops on an error says so in the store ("failed", with the error as its stop
// reason) rather than staying "running"; what it recorded stays, and `kforge resume` continues it
// once the cause is fixed.
Result<ForgeSummary> ForgeRun::Run() {
  Result<ForgeSummary> s = RunSteps();
  if (s.ok()) return s;
  run_.status = "failed";
  run_.stop_reason = s.status().message();
  Status recorded = deps_.store->UpdateRun(run_);
  if (!recorded.ok()) return s.status().WithContext("run " + std::to_string(run_.id) + " (not marked failed in the store: " + recorded.message() + ")");
  return s;
}

Result<ForgeSummary> ForgeRun::RunSteps() {
  KF_RETURN_IF_ERROR(Prepare());
  seconds_before_ = totals_.wall_seconds;
  run_.status = "running";
  KF_RETURN_IF_ERROR(deps_.store->UpdateRun(run_));
  KF_RETURN_IF_ERROR(FinishPending());
  KF_RETURN_IF_ERROR(EnsureSeed());
  if (!deps_.generator) {
    KF_RETURN_IF_ERROR(Tune());
    std::string why;
    return Finalize("done", OverBudget(&why) ? why : "offline tuner finished its search");
  }
  if (!best_) {
    // Continue the chain where an earlier session stopped: repair the last judged attempt
    // (else the seed's), counting the generations already made against functional_attempts.
    const AttemptRow* start = nullptr;
    int made = 0;
    for (const AttemptRow& a : attempts_) {
      if (a.state != "done" || a.status == "abandoned") continue;
      if (a.phase == "seed" && !start) start = &a;
      if (a.phase == "functional" && a.iteration == 0) { start = &a; ++made; }
    }
    KF_ASSIGN_OR_RETURN(bool ok, Functional(0, start, made));
    if (!ok) {
      std::string why;
      return Finalize("done", OverBudget(&why) ? why : "no correct kernel within the functional attempts");
    }
  }
  KF_RETURN_IF_ERROR(Optimize());
  std::string why;
  return Finalize("done", OverBudget(&why) ? why : "optimization passes finished");
}

}  // namespace

json ForgeOptions::ToJson() const {
  return {{"problem", problem}, {"backend", backend}, {"model", model}, {"analyst_model", analyst_model},
          {"generator_llm", RoleToJson(generator_llm)}, {"analyst_llm", RoleToJson(analyst_llm)},
          {"generator_prompt", generator_prompt.ToJson()}, {"analyst_prompt", analyst_prompt.ToJson()},
          {"iterations", iterations}, {"candidates", candidates}, {"judge_jobs", judge_jobs}, {"functional_attempts", functional_attempts},
          {"max_evaluations", max_evaluations}, {"max_tokens", max_tokens}, {"max_cost_usd", max_cost_usd},
          {"max_seconds", max_seconds}, {"sol_target", sol_target}, {"patience", patience},
          {"instructions", instructions}, {"context_files", context_files}, {"deny", deny},
          {"transfer_file", transfer_file}, {"transfer_backend", transfer_backend},
          {"confirm", {{"enabled", confirm}, {"top", confirm_top}, {"rounds", confirm_options.rounds},
                       {"budget_ms", confirm_options.budget_ms}, {"min_runs", confirm_options.min_runs}}},
          {"eval", {{"sizes", eval.sizes}, {"quick", eval.quick}, {"seeds", eval.seeds}, {"budget_ms", eval.budget_ms},
                    {"precision_target", eval.precision_target}, {"timeout_seconds", eval.timeout_seconds}, {"device", eval.device}, {"baselines", eval.baselines},
                    {"min_runs", eval.min_runs}, {"max_runs", eval.max_runs},
                    {"precision", eval.precision ? PrecisionPolicyName(*eval.precision) : ""}}}};
}

ForgeOptions ForgeOptions::FromJson(const json& j) {
  ForgeOptions o;
  o.problem = j.value("problem", "");
  o.backend = j.value("backend", "cpp");
  o.model = j.value("model", "");
  o.analyst_model = j.value("analyst_model", "");
  o.generator_llm = RoleFromJson(j.value("generator_llm", json::object()));
  o.analyst_llm = RoleFromJson(j.value("analyst_llm", json::object()));
  // Runs recorded before prompt limits existed: full prompts, nothing checked (as they ran).
  o.generator_prompt = PromptLimits::FromJson(j.value("generator_prompt", json::object()));
  o.analyst_prompt = PromptLimits::FromJson(j.value("analyst_prompt", json::object()));
  o.iterations = j.value("iterations", o.iterations);
  o.candidates = j.value("candidates", o.candidates);
  o.judge_jobs = j.value("judge_jobs", o.judge_jobs);
  o.functional_attempts = j.value("functional_attempts", o.functional_attempts);
  o.max_evaluations = j.value("max_evaluations", o.max_evaluations);
  o.max_tokens = j.value("max_tokens", o.max_tokens);
  o.max_cost_usd = j.value("max_cost_usd", o.max_cost_usd);
  o.max_seconds = j.value("max_seconds", o.max_seconds);
  o.sol_target = j.value("sol_target", o.sol_target);
  o.patience = j.value("patience", o.patience);
  o.instructions = j.value("instructions", "");
  o.context_files = j.value("context_files", std::vector<std::string>{});
  o.deny = j.value("deny", std::vector<std::string>{});
  o.transfer_file = j.value("transfer_file", "");
  o.transfer_backend = j.value("transfer_backend", "");
  json c = j.value("confirm", json::object());
  o.confirm = c.value("enabled", o.confirm);
  o.confirm_top = c.value("top", o.confirm_top);
  o.confirm_options.rounds = c.value("rounds", o.confirm_options.rounds);
  o.confirm_options.budget_ms = c.value("budget_ms", o.confirm_options.budget_ms);
  o.confirm_options.min_runs = c.value("min_runs", o.confirm_options.min_runs);
  json e = j.value("eval", json::object());
  o.eval.sizes = e.value("sizes", std::map<std::string, int64_t>{});
  o.eval.quick = e.value("quick", false);
  o.eval.seeds = e.value("seeds", o.eval.seeds);
  o.eval.budget_ms = e.value("budget_ms", o.eval.budget_ms);
  o.eval.precision_target = e.value("precision_target", o.eval.precision_target);
  o.eval.timeout_seconds = e.value("timeout_seconds", o.eval.timeout_seconds);
  o.eval.device = e.value("device", 0);
  o.eval.baselines = e.value("baselines", true);
  o.eval.min_runs = e.value("min_runs", o.eval.min_runs);
  o.eval.max_runs = e.value("max_runs", o.eval.max_runs);
  // Empty (runs recorded before policies existed): unset, the problem's policy.
  Result<PrecisionPolicy> precision = ParsePrecisionPolicy(e.value("precision", ""));
  if (precision.ok()) o.eval.precision = *precision;
  return o;
}

namespace {

// --transfer checked before the run exists: its backend named right or inferred, its files
// readable. The run records the backend and the file's absolute path, so that a resume from
// another folder reads the same kernel.
Status ResolveTransfer(ForgeOptions* options) {
  if (options->transfer_file.empty()) {
    if (!options->transfer_backend.empty())
      return Status::InvalidArgument(
          "--transfer-backend " + options->transfer_backend +
          " names the backend of a --transfer kernel, and no --transfer was given");
    return Status::Ok();
  }
  KF_ASSIGN_OR_RETURN(TransferKernel k,
                      LoadTransferKernel(options->transfer_file, options->transfer_backend));
  options->transfer_backend = k.source->name;
  std::error_code ec;
  fs::path absolute = fs::absolute(options->transfer_file, ec);
  if (!ec) options->transfer_file = absolute.lexically_normal().string();
  return Status::Ok();
}

}  // namespace

fs::path WorkspaceDir() {
  const char* env = std::getenv("KFORGE_WORKSPACE");
  if (env && *env) return env;
  return fs::current_path() / ".kforge";
}

Result<ForgeSummary> StartRun(const ForgeOptions& requested, ForgeDeps& deps) {
  KF_ASSIGN_OR_RETURN(fs::path file, FindProblem(requested.problem));
  KF_ASSIGN_OR_RETURN(Problem p, LoadProblem(file));
  KF_RETURN_IF_ERROR(Bind(p, requested.eval.sizes, false).status());  // --size checked before the run exists
  // The run records the policy it uses, so that `kforge show` and a resume see it even when it
  // came from the problem file.
  ForgeOptions options = requested;
  KF_RETURN_IF_ERROR(ResolveTransfer(&options));
  KF_ASSIGN_OR_RETURN(PrecisionPolicy policy, p.ChoosePrecision(requested.eval.precision));
  options.eval.precision = policy;
  RunRow run;
  run.problem = p.name;
  run.problem_path = file.string();
  run.backend = options.backend;
  run.model = options.model.empty() ? "offline" : options.model;
  run.status = "running";
  run.config_json = options.ToJson().dump();
  KF_ASSIGN_OR_RETURN(run.id, deps.store->CreateRun(run));
  return ForgeRun(options, deps, run).Run();
}

Result<ForgeSummary> ResumeRun(int64_t run_id, ForgeDeps& deps) {
  KF_ASSIGN_OR_RETURN(RunRow run, deps.store->GetRun(run_id));
  json config = json::parse(run.config_json, nullptr, false);
  if (config.is_discarded()) return Status::InvalidArgument("run " + std::to_string(run_id) + " has an unreadable configuration");
  return ForgeRun(ForgeOptions::FromJson(config), deps, run).Run();
}

}  // namespace kforge
