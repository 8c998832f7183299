// `kforge eval`: judge one candidate, or with --all every bundled seed and candidate.
#include <unistd.h>

#include <fmt/format.h>

#include "base/subprocess.h"
#include "backend/registry.h"
#include "cli/commands.h"
#include "kforge/eval.h"
#include "kforge/problem.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

struct EvalFlags {
  std::string problem, candidate, precision;
  std::vector<std::string> sizes;
  bool json = false, all = false, no_baselines = false, no_static_check = false;
  std::vector<std::string> backends;
  EvalOptions options;
};


// `seed` and `candidate[N]` name the problem's own files; anything else is a path.
Result<fs::path> ResolveCandidate(const Problem& p, const std::string& backend, const std::string& arg) {
  if (arg == "seed") {
    auto it = p.seeds.find(backend);
    if (it == p.seeds.end()) return Status::NotFound("problem '" + p.name + "' has no seed for backend " + backend);
    return it->second;
  }
  if (!fs::exists(arg)) return Status::NotFound("candidate file " + arg + " does not exist");
  return fs::path(arg);
}

int ExitFor(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? kExitUsage : kExitEnvironment;
}

int EvalOne(EvalFlags& f) {
  Result<fs::path> file = FindProblem(f.problem);
  if (!file.ok()) { fmt::print(stderr, "kforge eval: {}\n", file.status().message()); return kExitUsage; }
  Result<Problem> problem = LoadProblem(*file);
  if (!problem.ok()) { fmt::print(stderr, "kforge eval: {}\n", problem.status().message()); return kExitUsage; }
  f.options.backend = f.backends.empty() ? "cpp" : f.backends[0];
  Result<fs::path> cand = ResolveCandidate(*problem, f.options.backend, f.candidate);
  if (!cand.ok()) { fmt::print(stderr, "kforge eval: {}\n", cand.status().message()); return kExitUsage; }
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  Result<Verdict> v = Evaluate(*problem, *cand, f.options, *runner);
  if (!v.ok()) { fmt::print(stderr, "kforge eval: {}\n", v.status().message()); return ExitFor(v.status()); }
  if (f.json) fmt::print("{}\n", v->ToJson().dump(2));
  else fmt::print("{}", v->Summary());
  return v->correct() ? kExitOk : kExitVerdict;
}

void PrintRow(const std::string& problem, const std::string& backend, const std::string& kind, const Verdict& v) {
  double ref = v.speedups.count("reference") ? v.speedups.at("reference") : 0;
  double seed = v.speedups.count("seed") ? v.speedups.at("seed") : 0;
  fmt::print("{:<26} {:<7} {:<28} {:<14} {:>10.4f} {:>6.1f} {:>7.1f} {:>8.2f} {:>8.2f}\n", problem, backend, kind,
             VerdictStatusName(v.status), v.timing ? v.timing->median_ms : 0.0, v.timing ? 100 * v.timing->cv : 0.0,
             v.sol_percent, ref, seed);
  if (!v.correct()) fmt::print("    {}\n", v.message.substr(0, 300));
}

int EvalAll(EvalFlags& f) {
  std::vector<std::string> backends = f.backends.empty() ? std::vector<std::string>{"cpp", "opencl"} : f.backends;
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  fmt::print("{:<26} {:<7} {:<28} {:<14} {:>10} {:>6} {:>7} {:>8} {:>8}\n", "problem", "backend", "candidate", "verdict",
             "median_ms", "cv%", "SOL%", "x_ref", "x_seed");
  int rc = kExitOk;
  for (const fs::path& file : ListBundledProblems()) {
    Result<Problem> p = LoadProblem(file);
    if (!p.ok()) { fmt::print(stderr, "{}\n", p.status().message()); rc = kExitUsage; continue; }
    for (const std::string& backend : backends) {
      std::vector<fs::path> cands;
      if (p->seeds.count(backend)) cands.push_back(p->seeds.at(backend));
      if (p->candidates.count(backend))
        for (const fs::path& c : p->candidates.at(backend)) cands.push_back(c);
      for (const fs::path& c : cands) {
        EvalOptions o = f.options;
        o.backend = backend;
        Result<Verdict> v = Evaluate(*p, c, o, *runner);
        std::string kind = fs::relative(c, p->dir).string();
        if (!v.ok()) { fmt::print("{:<26} {:<7} {:<28} error: {}\n", p->name, backend, kind, v.status().message()); rc = kExitEnvironment; continue; }
        PrintRow(p->name, backend, kind, *v);
        if (!v->correct() && rc == kExitOk) rc = kExitVerdict;
      }
    }
  }
  return rc;
}

}  // namespace

Result<std::map<std::string, int64_t>> ParseSizes(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> out;
  for (const std::string& item : items) {
    size_t eq = item.find('=');
    char* end = nullptr;
    long long v = eq == std::string::npos ? 0 : std::strtoll(item.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || !end || *end != '\0')
      return Status::InvalidArgument("--size expects name=integer, got '" + item + "'");
    out[item.substr(0, eq)] = v;
  }
  return out;
}

void AddTrustedStateFlags(CLI::App* cmd, EvalOptions* options) {
  cmd->add_flag("--rebaseline", options->rebaseline,
                "Time the baselines again instead of using the ones kept for this problem, device and software (docs/evaluation.md, \"Trusted state\")");
  cmd->add_option("--baseline-max-age", options->baseline_max_age_s,
                  "Kept baselines older than this many seconds are timed again (default 21600)");
  cmd->add_flag("!--no-trusted-cache", options->trusted_state,
                "Neither use nor keep the references and baselines computed for earlier judgements");
}

Result<std::optional<PrecisionPolicy>> ParsePrecisionFlag(const std::string& value) {
  if (value.empty()) return std::optional<PrecisionPolicy>();
  if (value.find(',') != std::string::npos)
    return Status::InvalidArgument("--precision takes one policy here (got '" + value +
                                   "'); expected one of " + PrecisionPolicyNames() +
                                   " (kforge bench takes a list)");
  Result<PrecisionPolicy> p = ParsePrecisionPolicy(value);
  if (!p.ok()) return Status::InvalidArgument("--precision: " + p.status().message());
  return std::optional<PrecisionPolicy>(*p);
}

void AddEvalCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand("eval", "Judge a candidate kernel against a problem");
  cmd->add_option("problem", f->problem, "Problem name (see `kforge problems`), folder or problem.toml");
  cmd->add_option("candidate", f->candidate, "Candidate source file, or `seed` for the problem's seed kernel");
  cmd->add_option("--backend,-b", f->backends, "Backend: " + BackendNames() + " (--all: several allowed)");
  cmd->add_option("--device", f->options.device, "Device index of the backend (see `kforge doctor`)");
  cmd->add_option("--size", f->sizes, "Override a size parameter: --size rows=64 (repeatable)");
  cmd->add_flag("--quick", f->options.quick, "Use the problem's quick (small) sizes");
  cmd->add_flag("--json", f->json, "Print the verdict as JSON (docs/verdict-schema.md)");
  cmd->add_flag("--all", f->all, "Evaluate every bundled problem's seed and candidates");
  cmd->add_flag("--no-baselines", f->no_baselines, "Do not time the reference and seed baselines");
  cmd->add_flag("--no-static-check", f->no_static_check,
                "Skip the static check of the candidate's source (to test the runtime gates alone)");
  cmd->add_flag("--profile", f->options.profile, "Add profiler metrics of one call (`profile` in the verdict; cuda: Nsight Compute, hip: rocprof)");
  cmd->add_flag("--sanitize", f->options.sanitize, "Add a compute-sanitizer memcheck report (`sanitizer` in the verdict; cuda)");
  cmd->add_flag("--racecheck", f->options.racecheck, "With --sanitize: run racecheck too");
  cmd->add_option("--seeds", f->options.seeds, "Trials at the timed size (default 5)");
  cmd->add_option("--budget-ms", f->options.budget_ms, "Timing budget per implementation in ms (default 2000)");
  cmd->add_option("--precision-target", f->options.precision_target,
                  "Timing also stops once the median is known within this fraction, 95% interval (default 0.03; 0: off)");
  AddTrustedStateFlags(cmd, &f->options);
  cmd->add_option("--timeout", f->options.timeout_seconds, "Wall-clock limit per worker run in seconds (default 120)");
  cmd->add_option("--timed-checks", f->options.timed_checks,
                  "Timed runs, picked at random after the fact, whose outputs are checked against a reference (default 3)");
  cmd->add_option("--precision", f->precision,
                  "Precision policy: strict, tf32, bf16, fp16 or kernelbench (default: the "
                  "problem's, else strict; docs/evaluation.md)");
  cmd->callback([f, exit_code] {
    Result<std::map<std::string, int64_t>> sizes = ParseSizes(f->sizes);
    if (!sizes.ok()) { fmt::print(stderr, "kforge eval: {}\n", sizes.status().message()); *exit_code = kExitUsage; return; }
    Result<std::optional<PrecisionPolicy>> precision = ParsePrecisionFlag(f->precision);
    if (!precision.ok()) {
      fmt::print(stderr, "kforge eval: {}\n", precision.status().message());
      *exit_code = kExitUsage;
      return;
    }
    f->options.precision = *precision;
    f->options.sizes = *sizes;
    f->options.baselines = !f->no_baselines;
    f->options.static_check = !f->no_static_check;
    if (f->all) { *exit_code = EvalAll(*f); return; }
    if (f->problem.empty() || f->candidate.empty()) {
      fmt::print(stderr, "kforge eval: give a problem and a candidate (or --all); see kforge eval --help\n");
      *exit_code = kExitUsage;
      return;
    }
    *exit_code = EvalOne(*f);
  });
}

}  // namespace kforge
