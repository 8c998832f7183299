// `kforge bench`: a suite of problems; per problem a candidate judged (--candidates), an
// optimize run (--optimize) or only the baselines (--baselines-only); then the share correct,
// fast_p and geometric-mean speedups (src/report/bench_report.h), as a table, as JSON and as an
// HTML page (--html, src/report/bench_html.h).
#include <algorithm>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <regex>
#include <thread>

#include "base/files.h"
#include "base/subprocess.h"
#include "backend/registry.h"
#include "cli/commands.h"
#include "eval/compile_farm.h"
#include "eval/python_zygote.h"
#include "kforge/eval.h"
#include "kforge/problem.h"
#include "report/bench_html.h"
#include "report/bench_report.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct BenchFlags {
  std::string suite, candidates, kernelbench, published, json_out, llm_config;
  std::string html_out;             // --html: the page to write ("" = none)
  std::optional<ReportAssets> assets;  // loaded before the suite runs when --html is given
  std::vector<std::string> sizes;
  std::vector<std::string> precision;     // --precision as given: names, comma-separated lists
  std::vector<PrecisionPolicy> policies;  // parsed from `precision`; empty: each problem's own
  bool baselines_only = false, optimize = false, no_baselines = false, skip_missing = false,
       no_confirm = false;
  int jobs = 1, iterations = 3;
  std::string model;
  EvalOptions options;
  ConfirmOptions confirm;
};

// Problem key: the file stem ("12_Gemm_Multiply_LeakyReLU") or a bundled problem's folder name.
std::string ProblemKey(const fs::path& file) {
  return file.filename() == "problem.toml" ? file.parent_path().filename().string() : file.stem().string();
}

// A candidate for `problem` in `dir`: <key>.<ext>, else a file starting "<N>_" or containing
// "problem_<N>_" / "problem_<N>." (KernelBench's generation names), N the key's leading number.
// Extensions the backend takes come first.
fs::path FindCandidate(const fs::path& dir, const fs::path& problem, const std::string& backend) {
  const std::string key = ProblemKey(problem);
  std::smatch m;
  std::string number = std::regex_search(key, m, std::regex("^([0-9]+)_")) ? m[1].str() : "";
  const BackendSpec* spec = FindBackend(backend);
  std::vector<std::string> exts = spec ? spec->extensions : std::vector<std::string>{};
  if (std::find(exts.begin(), exts.end(), ".py") == exts.end()) exts.push_back(".py");  // KernelBench's ModelNew
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const std::string& ext : exts) {
    for (const fs::path& f : files)
      if (f.extension() == ext && f.stem() == key) return f;
    if (number.empty()) continue;
    std::regex loose("^" + number + "_|problem_" + number + "([_.]|$)");
    for (const fs::path& f : files)
      if (f.extension() == ext && std::regex_search(f.filename().string(), loose)) return f;
  }
  return {};
}

BenchRow RowFromVerdict(const std::string& key, const Verdict& v) {
  BenchRow r;
  r.problem = key;
  r.precision = v.precision.value("policy", "");
  r.candidate = v.candidate;
  r.status = VerdictStatusName(v.status);
  r.message = v.message;
  r.ms = v.timing ? v.timing->median_ms : 0;
  for (const auto& [name, t] : v.baselines) r.baseline_ms[name] = t.median_ms;
  r.compile_first_call_s = v.stages.value("torch_compile_first_call", 0.0);
  if (!v.confirmed.empty()) r.confirmed = v.confirmed[0].ToJson();
  r.verdict = v.ToJson();
  return r;
}

// What a judged candidate is confirmed against: on a PyTorch problem torch_best, that is the
// faster of eager and torch.compile in the judgement; otherwise the problem's seed for the
// backend. Empty (with the reason in *why) when there is none.
ConfirmSubject Contender(const Problem& p, const Verdict& v, const std::string& backend, std::string* why) {
  if (p.format == ProblemFormat::kPyTorch) {
    auto eager = v.baselines.find("torch_eager"), compiled = v.baselines.find("torch_compile");
    if (eager == v.baselines.end() && compiled == v.baselines.end()) { *why = "no PyTorch baseline was timed"; return {}; }
    bool compile_wins = compiled != v.baselines.end() && (eager == v.baselines.end() || compiled->second.median_ms < eager->second.median_ms);
    std::string name = compile_wins ? "torch_compile" : "torch_eager";
    return {"torch_best (" + name + ")", "", name};
  }
  auto seed = p.seeds.find(backend);
  if (seed == p.seeds.end()) { *why = "the problem has no seed for " + backend; return {}; }
  Result<std::string> text = ReadFile(seed->second);
  if (text.ok() && HashHex(*text) == v.candidate_hash) { *why = "the candidate is the seed"; return {}; }
  return {"seed", seed->second, ""};
}

// The judged candidate re-timed interleaved with its contender (docs/bench.md). A candidate that
// fails there takes the failure's verdict: fast_p counts only kernels that stay correct.
void ConfirmCandidate(const BenchFlags& f, const Problem& p, const fs::path& candidate, const EvalOptions& o,
                      ProcessRunner& runner, Verdict& v) {
  std::string why;
  ConfirmSubject against = Contender(p, v, o.backend, &why);
  if (against.label.empty()) { v.warnings.push_back("not confirmed: " + why); return; }
  Result<InterleavedTimes> t = ConfirmInterleaved(p, {{"candidate", candidate, ""}, against}, o, f.confirm, runner);
  if (!t.ok()) { v.warnings.push_back("not confirmed: " + t.status().message()); return; }
  v.confirmed.push_back(t->Compare(0, 1));
  v.stages["confirm"] = t->seconds;
  if (t->failed == 0) {
    v.status = t->failure->status;
    v.message = "failed in confirmation: " + t->failure->message;
    v.gate = t->failure->gate;
  }
}

// One problem under one policy (`precision` unset: the problem's own).
BenchRow BenchOne(const BenchFlags& f, const fs::path& file,
                  std::optional<PrecisionPolicy> precision, ProcessRunner& runner) {
  const std::string key = ProblemKey(file);
  BenchRow row;
  row.problem = key;
  Result<Problem> p = LoadProblem(file);
  if (!p.ok()) { row.status = "error"; row.message = p.status().message(); return row; }
  Result<PrecisionPolicy> policy = p->ChoosePrecision(precision);
  if (!policy.ok()) {
    row.status = "not_allowed";
    row.message = policy.status().message();
    return row;
  }
  row.precision = PrecisionPolicyName(*policy);
  EvalOptions o = f.options;
  o.precision = *policy;
  for (const auto& [name, value] : f.options.sizes) {  // a size applies where the problem has it
    bool has = false;
    for (const SizeParam& s : p->sizes) has |= s.name == name;
    if (!has) o.sizes.erase(name);
  }
  Result<Verdict> v = Status::Internal("nothing ran");
  if (f.baselines_only) {
    o.seeds = 1;  // the reference only describes the problem here; nothing is checked
    o.hidden_sizes = false;
    v = MeasureBaselines(*p, o, runner);
    if (v.ok()) v->status = VerdictStatus::kCorrect;
  } else {
    fs::path candidate;
    if (f.optimize) {
      ForgeOptions fo;
      fo.problem = file.string();
      fo.backend = o.backend;
      fo.model = f.model;
      fo.iterations = f.iterations;
      fo.eval = o;
      Result<ForgeSummary> s = OptimizeOne(fo, f.llm_config);
      if (!s.ok()) { row.status = "error"; row.message = "optimize: " + s.status().message(); return row; }
      if (s->best_path.empty()) { row.status = "no_kernel"; row.message = "optimize run " + std::to_string(s->run_id) + ": " + s->stop_reason; return row; }
      candidate = s->best_path;
    } else {
      candidate = FindCandidate(f.candidates, file, o.backend);
      if (candidate.empty()) { row.status = "missing"; row.message = "no candidate for " + key + " in " + f.candidates; }
    }
    if (!candidate.empty()) v = Evaluate(*p, candidate, o, runner);
    else if (p->format == ProblemFormat::kPyTorch && o.baselines) v = MeasureBaselines(*p, o, runner);
    else return row;
    if (candidate.empty() && v.ok()) {  // missing candidate: keep the baselines for the table
      BenchRow b = RowFromVerdict(key, *v);
      row.baseline_ms = b.baseline_ms;
      row.compile_first_call_s = b.compile_first_call_s;
      return row;
    }
  }
  if (!v.ok()) { row.status = "error"; row.message = v.status().message(); return row; }
  if (!f.baselines_only && !f.no_confirm && v->correct() && !v->candidate.empty())
    ConfirmCandidate(f, *p, v->candidate, o, runner, *v);
  row = RowFromVerdict(key, *v);
  if (f.baselines_only) row.status = "baselines";
  return row;
}

// The policies to run: --precision's, in order, or one pass under each problem's own policy.
// Baselines do not depend on the policy, so --baselines-only runs one pass.
std::vector<std::optional<PrecisionPolicy>> PassPolicies(const BenchFlags& f) {
  std::vector<std::optional<PrecisionPolicy>> out;
  for (PrecisionPolicy p : f.policies) out.push_back(p);
  if (out.empty()) out.push_back(std::nullopt);
  if (f.baselines_only) out.resize(1);
  return out;
}

// A pass's label: its policy; without --precision, the policy its rows share, else
// "problem default".
std::string PassLabel(std::optional<PrecisionPolicy> requested, const std::vector<BenchRow>& rows) {
  if (requested) return PrecisionPolicyName(*requested);
  std::string shared;
  for (const BenchRow& r : rows) {
    if (r.precision.empty()) continue;
    if (!shared.empty() && r.precision != shared) return "problem default";
    shared = r.precision;
  }
  return shared.empty() ? "problem default" : shared;
}

std::string PolicyLabel(std::optional<PrecisionPolicy> policy) {
  return policy ? std::string(PrecisionPolicyName(*policy)) : "problem default";
}

// Every (problem, policy) pair, -j at a time; the policies of one problem run one after another.
std::vector<BenchPass> RunPasses(const BenchFlags& f, const std::vector<fs::path>& files) {
  const std::vector<std::optional<PrecisionPolicy>> policies = PassPolicies(f);
  const size_t n = files.size(), np = policies.size();
  std::vector<std::vector<BenchRow>> rows(np, std::vector<BenchRow>(n));
  std::atomic<size_t> next{0};
  std::mutex print_mu;
  size_t done = 0;  // under print_mu
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto work = [&] {
    std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
    for (size_t job; (job = next++) < n * np;) {
      size_t i = job / np, k = job % np;
      {
        std::lock_guard<std::mutex> lock(print_mu);
        fmt::print(stderr, "kforge bench: [{}/{}] {}{}: started ({})\n", i + 1, n, ProblemKey(files[i]),
                   np > 1 ? " [" + PolicyLabel(policies[k]) + "]" : "", BenchProgress(done, n * np, elapsed()));
      }
      BenchRow& row = rows[k][i];
      row = BenchOne(f, files[i], policies[k], *runner);
      if (!f.published.empty() && files[i].extension() == ".py")
        row.published_ms = PublishedTimes(f.published, files[i].parent_path().filename().string(),
                                          files[i].filename().string());
      std::lock_guard<std::mutex> lock(print_mu);
      std::string times;
      for (const auto& [name, ms] : row.baseline_ms)
        times += fmt::format(" {} {:.4f} ms", name, ms);
      ++done;
      fmt::print(stderr, "kforge bench: [{}/{}] {}{} {}{}{} ({})\n", i + 1, n, row.problem,
                 np > 1 || !row.precision.empty() ? " [" + row.precision + "]" : "", row.status,
                 row.ms > 0 ? fmt::format(" {:.4f} ms", row.ms) : "", times, BenchProgress(done, n * np, elapsed()));
    }
  };
  // Every candidate's build starts now, on every core (eval/compile_farm.h); where the device
  // may be the host CPU the judging waits for them.
  std::unique_ptr<ProcessRunner> farm_runner = NewSandboxRunner();
  CompileFarm farm(*farm_runner);
  if (!f.optimize && !f.baselines_only) {
    for (const fs::path& file : files) {
      Result<Problem> p = LoadProblem(file);
      fs::path candidate = p.ok() ? FindCandidate(f.candidates, file, f.options.backend) : fs::path();
      if (!candidate.empty()) farm.Submit(*p, candidate, f.options);
    }
    if (!MayJudgeWhileBuilding(f.options.backend)) {
      farm.Wait();
      if (farm.builds_started() > 0)
        fmt::print(stderr, "kforge bench: {} builds on {} cores in {:.1f} s before judging\n", farm.builds_started(), farm.jobs(), elapsed());
    }
  }
  std::vector<std::thread> threads;
  SetWarmPythonWorkersPerKind(f.jobs);  // one warm worker per problem in flight
  for (int j = 0; j < std::max(1, f.jobs); ++j) threads.emplace_back(work);
  for (std::thread& t : threads) t.join();
  std::vector<BenchPass> passes;
  for (size_t k = 0; k < np; ++k) {
    BenchSummary summary = Summarize(rows[k]);
    passes.push_back({PassLabel(policies[k], rows[k]), std::move(rows[k]), summary});
  }
  return passes;
}

// The bench as a page (bench_html.h), beside or instead of the JSON.
int WriteHtml(const BenchFlags& f, const json& bench) {
  Result<std::string> page = RenderBenchReport(bench, *f.assets);
  Status written = page.ok() ? WriteFileAtomic(f.html_out, *page) : page.status();
  if (!written.ok()) {
    fmt::print(stderr, "kforge bench: --html {}: {}\n", f.html_out, written.message());
    return kExitEnvironment;
  }
  fmt::print(stderr, "kforge bench: wrote {} ({} KiB)\n", fs::absolute(f.html_out).string(), (page->size() + 1023) / 1024);
  return kExitOk;
}

int RunBench(BenchFlags& f) {
  Result<std::vector<fs::path>> suite = ResolveSuite(f.suite, f.kernelbench);
  if (!suite.ok()) { fmt::print(stderr, "kforge bench: {}\n", suite.status().message()); return kExitUsage; }
  if (!f.baselines_only && !f.optimize && f.candidates.empty()) {
    fmt::print(stderr, "kforge bench: say what to run: --candidates <folder> (one candidate per problem), --optimize, or --baselines-only\n");
    return kExitUsage;
  }
  if (!f.candidates.empty() && !fs::is_directory(f.candidates)) {
    fmt::print(stderr, "kforge bench: --candidates {} is not a folder\n", f.candidates);
    return kExitUsage;
  }
  std::vector<fs::path> files = *suite;
  if (f.skip_missing && !f.candidates.empty()) {
    std::erase_if(files, [&](const fs::path& p) { return FindCandidate(f.candidates, p, f.options.backend).empty(); });
    if (files.empty()) { fmt::print(stderr, "kforge bench: no problem of the suite has a candidate in {}\n", f.candidates); return kExitUsage; }
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<BenchPass> passes = RunPasses(f, files);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{}", BenchTable(passes));
  fmt::print("wall time {:.1f} s\n", seconds);
  if (!f.json_out.empty() || !f.html_out.empty()) {
    json precision = json::array();
    for (const BenchPass& p : passes) precision.push_back(p.precision);
    json meta = {{"suite", f.suite},
                 {"backend", f.options.backend},
                 {"candidates", f.candidates},
                 {"mode", f.baselines_only ? "baselines"
                          : f.optimize     ? "optimize"
                                           : "candidates"},
                 {"quick", f.options.quick},
                 {"sizes", f.options.sizes},
                 {"published", f.published},
                 {"precision", precision},
                 {"confirm", f.no_confirm || f.baselines_only
                                 ? json(false)
                                 : json({{"rounds", f.confirm.rounds}, {"budget_ms", f.confirm.budget_ms}})},
                 {"wall_seconds", seconds},
                 {"kforge", "0.1.0"}};
    const json bench = BenchToJson(passes, meta);
    if (f.json_out == "-") {
      fmt::print("{}\n", bench.dump(1));
    } else if (!f.json_out.empty()) {
      std::ofstream out(f.json_out);
      out << bench.dump(1) << "\n";
      if (!out) { fmt::print(stderr, "kforge bench: cannot write {}\n", f.json_out); return kExitEnvironment; }
    }
    if (!f.html_out.empty() && WriteHtml(f, bench) != kExitOk) return kExitEnvironment;
  }
  bool all_correct = true;
  for (const BenchPass& p : passes) {
    for (const BenchRow& r : p.rows)
      if (r.status == "error") return kExitEnvironment;
    all_correct &= p.summary.correct == p.summary.problems;
  }
  return all_correct || f.baselines_only ? kExitOk : kExitVerdict;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<BenchFlags>();
  f->options.backend = "pytorch";
  CLI::App* cmd = app.add_subcommand("bench", "Run a suite: judge a folder of candidates, optimize each problem, or time the PyTorch baselines");
  cmd->add_option("suite", f->suite, "A folder of problems, kernelbench-l1/-l2/-l3, kernelbench-l2-gemm, or bundled")->required();
  cmd->add_option("--backend,-b", f->options.backend, "Backend the candidates are for: " + BackendNames() + " (default pytorch)");
  cmd->add_option("--candidates", f->candidates, "Folder with one candidate per problem (named after the problem, or <N>_*, or *problem_<N>_*)");
  cmd->add_flag("--skip-missing", f->skip_missing, "With --candidates: leave out problems without a candidate (else they count as not correct)");
  cmd->add_flag("--baselines-only", f->baselines_only, "Only run the references and time PyTorch eager and torch.compile");
  cmd->add_flag("--optimize", f->optimize, "Run `kforge optimize` on each problem and judge its best kernel");
  cmd->add_option("--llm", f->model, "With --optimize: the model (else KFORGE_LLM or the config; offline without)");
  cmd->add_option("--llm-config", f->llm_config, "With --optimize: the LLM config file (docs/llm.md)");
  cmd->add_option("--iterations", f->iterations, "With --optimize: optimization passes per problem (default 3)");
  cmd->add_option("--kernelbench", f->kernelbench, "KernelBench copy for kernelbench-* suites (else $KFORGE_KERNELBENCH)");
  cmd->add_option("--published", f->published, "Folder of KernelBench's published baseline times to compare with (e.g. baseline_times/H100_Modal)");
  cmd->add_option("--json", f->json_out, "Write the results as JSON to this file (- for stdout)");
  CLI::Option* html = cmd->add_option("--html", f->html_out, "Write the results as a self-contained HTML page (default bench.html; docs/report.md)")
                          ->expected(0, 1);
  cmd->add_option("--jobs,-j", f->jobs, "Problems in flight at once (timed runs still take the device one at a time)");
  cmd->add_option("--device", f->options.device, "Device index");
  cmd->add_option("--size", f->sizes, "Override a size constant where a problem has it: --size batch_size=64");
  cmd->add_flag("--quick", f->options.quick, "Small sizes (PyTorch problems: integer constants >= 256 divided by 16)");
  cmd->add_flag("--no-baselines", f->no_baselines, "Do not time baselines (speedups and fast_p need them)");
  cmd->add_flag("--no-confirm", f->no_confirm, "Do not confirm each correct candidate against its baseline (quick runs)");
  cmd->add_option("--confirm-rounds", f->confirm.rounds, "Confirmation: ABBA rounds per problem (default 5)");
  cmd->add_option("--seeds", f->options.seeds, "Trials at the timed size (default 5)");
  cmd->add_option("--budget-ms", f->options.budget_ms, "Timing budget per implementation in ms (default 2000)");
  cmd->add_option("--precision-target", f->options.precision_target,
                  "Timing also stops once the median is known within this fraction, 95% interval (default 0.03; 0: off)");
  AddTrustedStateFlags(cmd, &f->options);
  cmd->add_option("--timeout", f->options.timeout_seconds, "Wall-clock limit per worker run in seconds (default 120)");
  cmd->add_option("--precision", f->precision,
                  "Precision policies, each a pass with its own columns: strict, tf32, bf16, fp16, "
                  "kernelbench, e.g. strict,kernelbench (default: each problem's, else strict)")
      ->delimiter(',');
  cmd->callback([f, exit_code, html] {
    if (html->count() > 0) {  // the libraries are checked before the suite runs, not after
      if (f->html_out.empty()) f->html_out = "bench.html";
      Result<ReportAssets> assets = LoadReportAssets();
      if (!assets.ok()) { fmt::print(stderr, "kforge bench: --html: {}\n", assets.status().message()); *exit_code = kExitEnvironment; return; }
      f->assets = std::move(*assets);
    }
    Result<std::map<std::string, int64_t>> sizes = ParseSizes(f->sizes);
    if (!sizes.ok()) { fmt::print(stderr, "kforge bench: {}\n", sizes.status().message()); *exit_code = kExitUsage; return; }
    if (!f->precision.empty()) {
      Result<std::vector<PrecisionPolicy>> policies = ParsePrecisionPolicies(f->precision);
      if (!policies.ok()) {
        fmt::print(stderr, "kforge bench: --precision: {}\n", policies.status().message());
        *exit_code = kExitUsage;
        return;
      }
      f->policies = *policies;
    }
    f->options.sizes = *sizes;
    f->options.baselines = !f->no_baselines;
    *exit_code = RunBench(*f);
  });
}

}  // namespace kforge
