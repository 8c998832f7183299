// kforge_judge_bench: how fast the judge is (issue "A fast judge"). Prints numbers; asserts
// nothing.
//
//   kforge_judge_bench <problem dir or file> [--backend B] [--candidate FILE] [--distinct N]
//                      [--jobs J] [--warm N] [--budget-ms MS] [--precision-target F] [--no-baselines]
//                      [--json FILE]
//
// With the problem's seed for the backend (or --candidate), three measurements of
// source-to-verdict time, each a full Evaluate as `kforge eval` runs it, in a fresh private
// cache (KFORGE_CACHE_DIR):
//   cold     the first judgement: nothing compiled, no peaks measured;
//   warm     the same candidate again, --warm times (default 3): compile and peaks cached;
//   distinct N candidates that differ only by a comment (each one compiles anew: the
//            compile cache is keyed by content): verdicts per minute. --jobs J judges J at
//            once, as `kforge bench -j` does (each in its own sandboxed processes; timed runs
//            still take the device one at a time), after handing every build to the compile
//            farm (eval/compile_farm.h).
// Each line shows the stage seconds the verdicts report (stages_seconds), so where the time
// goes is visible beside the total. The worker: $KFORGE_WORKER, else next to this program.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/stats.h"
#include "base/subprocess.h"
#include "eval/compile_farm.h"
#include "eval/gates.h"
#include "eval/python_zygote.h"
#include "kforge/eval.h"
#include "kforge/problem.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Flags {
  std::string problem, backend = "cpp", candidate, json_out;
  int distinct = 5, warm = 3, jobs = 1;
  double budget_ms = 2000;
  double precision_target = 0.03;
  bool baselines = true;
};

struct Judgement {
  double seconds = 0;
  std::string status;
  json stages = json::object();
  json phases = json::object();  // the candidate job's worker phases (ms), where it reported them
  int runs = 0;                  // timed runs, and how well they pinned the median down
  double median_precision = 1;
  double cv = 0;                 // per-set coefficient of variation (the other stopping rule)
  double median_ms = 0;
  bool wall_bounded = false;     // the median is the supervisor's wall-clock bound, not the device's
  std::string rejudged;          // the gate of a first job that a load-sensitive gate sent back, if one did
  std::string rejudged_why;      // and that first job's message
  // A Python job's gate untimed_work: the largest share of its allowance (UntimedWorkAllowanceMs)
  // that preparing or collecting a timed run used, as a median against the null runs; 1 or more
  // trips the gate (below 0: faster than the null runs). None for other jobs.
  std::optional<double> untimed_use;
};

// How the timed runs ended: the median's precision when it is known, and the spread. With fewer
// than 6 runs per set (a CV stop at min_runs, two sets) the order-statistics interval is not
// defined and the precision is reported as 1: said as unknown, not as +-100%.
std::string TimingText(const Judgement& j) {
  std::string median = j.median_precision < 1 ? fmt::format("median +-{:.1f}%", 100 * j.median_precision)
                                              : std::string("median's interval unknown: under 6 runs per set");
  return fmt::format("{} timed runs, cv {:.1f}%, {}, {:.4g} ms{}", j.runs, 100 * j.cv, median, j.median_ms,
                     j.wall_bounded ? " (the wall-clock bound)" : "");
}

Result<Judgement> Judge(const Problem& p, const fs::path& candidate, const EvalOptions& o, ProcessRunner& runner) {
  auto t0 = std::chrono::steady_clock::now();
  KF_ASSIGN_OR_RETURN(Verdict v, Evaluate(p, candidate, o, runner));
  Judgement j;
  j.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  j.status = VerdictStatusName(v.status);
  // A verdict other than correct says which gate and why: a benchmark of an honest candidate
  // that is not judged correct is measuring something else.
  if (!v.correct()) j.status += " [" + (v.gate.empty() ? std::string("-") : v.gate) + "] " + v.message.substr(0, 240);
  j.stages = v.stages;
  j.phases = v.worker_phases;
  // Evaluation::JudgeCandidate's record of a first job that a load-sensitive gate sent back.
  if (const json f = v.fingerprint.value("first_job", json::object()); f.is_object() && !f.empty()) {
    j.rejudged = f.value("gate", std::string("?"));
    j.rejudged_why = f.value("message", std::string());
  }
  // A Python job's timed runs, one by one (its phases are stages): the medians of each step.
  if (const json* t = v.fingerprint.contains("timing") ? &v.fingerprint["timing"] : nullptr; t && t->is_object())
    for (const char* k : {"prepare_median_ms", "collect_median_ms", "copy_median_ms", "scan_median_ms", "step_median_ms", "wall_median_ms",
                          "device_median_ms", "overhead_ms", "lock_wait_s"})
      if (t->contains(k) && (*t)[k].is_number()) j.phases[std::string("per_run_") + k] = (*t)[k];
  if (v.timing) {
    j.runs = v.timing->runs, j.median_precision = v.timing->median_precision, j.cv = v.timing->cv;
    j.median_ms = v.timing->median_ms, j.wall_bounded = v.timing->wall_bounded;
  }
  if (const json* t = v.fingerprint.contains("timing") ? &v.fingerprint["timing"] : nullptr; v.timing && t && t->contains("calibration")) {
    const json& c = (*t)["calibration"];
    const bool cpu = v.fingerprint.value("torch_device", std::string()) == "cpu";
    for (const auto& [median, calibrated] : {std::pair{"prepare_median_ms", "prepare_ms"}, std::pair{"collect_median_ms", "collect_ms"}})
      if (t->contains(median) && (*t)[median].is_number() && c.is_object() && c.contains(calibrated) && c[calibrated].is_number()) {
        const double cal = c[calibrated].get<double>();
        const double share = ((*t)[median].get<double>() - cal) / UntimedWorkAllowanceMs(v.timing->median_ms, cal, cpu);
        j.untimed_use = std::max(j.untimed_use.value_or(share), share);
      }
  }
  return j;
}

// "compile 1.23  reference 0.40  run 2.10 ..." in the order the verdict recorded them, then
// "other": what no stage accounts for (peaks measured or read, toolchain probes, set-up).
// Dotted names ("python_candidate.start") are parts of a stage and not summed again.
// Inside "run": the candidate jobs' phases by the worker supervisor's clock, mean ms (a Python
// job's per-run medians, per_run_*, and its lock waits in seconds).
json MeanPhases(const std::vector<Judgement>& judgements) {
  json phases = json::object();
  for (const Judgement& w : judgements)
    for (const auto& [name, ms] : w.phases.items())
      if (ms.is_number()) phases[name] = phases.value(name, 0.0) + ms.get<double>() / static_cast<double>(judgements.size());
  return phases;
}

// Microseconds show where a Python job's per-run steps are under a millisecond.
std::string PhasesText(const json& phases) {
  std::string line;
  for (const auto& [name, ms] : phases.items())
    line += ms.get<double>() < 10 ? fmt::format("  {} {:.3f}", name, ms.get<double>()) : fmt::format("  {} {:.0f}", name, ms.get<double>());
  return line;
}

std::string StageText(const json& stages, double total) {
  std::string s;
  double sum = 0;
  for (const auto& [name, secs] : stages.items())
    if (secs.is_number()) {
      s += fmt::format("  {} {:.2f}", name, secs.get<double>());
      if (name.find('.') == std::string::npos) sum += secs.get<double>();
    }
  return s + fmt::format("  other {:.2f}", total - sum);
}

json SumStages(const std::vector<Judgement>& js) {
  std::map<std::string, double> sum;
  for (const Judgement& j : js)
    for (const auto& [name, secs] : j.stages.items())
      if (secs.is_number()) sum[name] += secs.get<double>();
  json out = json::object();
  for (const auto& [name, secs] : sum) out[name] = secs / static_cast<double>(js.size());
  return out;
}

int Usage(const char* why) {
  fmt::print(stderr, "kforge_judge_bench: {}\nusage: kforge_judge_bench <problem> [--backend B] [--candidate FILE] "
                     "[--distinct N] [--jobs J] [--warm N] [--budget-ms MS] [--precision-target F] [--no-baselines] [--json FILE]\n", why);
  return 2;
}

int Main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--backend") f.backend = value();
    else if (a == "--candidate") f.candidate = value();
    else if (a == "--distinct") f.distinct = std::atoi(value().c_str());
    else if (a == "--jobs") f.jobs = std::atoi(value().c_str());
    else if (a == "--warm") f.warm = std::max(1, std::atoi(value().c_str()));
    else if (a == "--budget-ms") f.budget_ms = std::atof(value().c_str());
    else if (a == "--precision-target") f.precision_target = std::atof(value().c_str());
    else if (a == "--no-baselines") f.baselines = false;
    else if (a == "--json") f.json_out = value();
    else if (!a.empty() && a[0] == '-') return Usage(("unknown option " + a).c_str());
    else f.problem = a;
  }
  if (f.problem.empty()) return Usage("say which problem");
  if (f.jobs < 1 || f.jobs > 64) return Usage("--jobs takes 1 to 64");
  SetWarmPythonWorkersPerKind(f.jobs);
  fs::path file = f.problem;
  if (fs::is_directory(file)) file /= "problem.toml";
  Result<Problem> p = LoadProblem(file);
  if (!p.ok()) return Usage(p.status().message().c_str());
  fs::path candidate = f.candidate;
  if (candidate.empty()) {
    auto seed = p->seeds.find(f.backend);
    if (seed == p->seeds.end()) return Usage(("the problem has no seed for " + f.backend + "; give --candidate").c_str());
    candidate = seed->second;
  }
  Result<std::string> source = ReadFile(candidate);
  if (!source.ok()) return Usage(source.status().message().c_str());
  if (!std::getenv("KFORGE_WORKER")) {
    fs::path here = fs::canonical("/proc/self/exe").parent_path();
    for (const fs::path& w : {here / "kforge-worker", here / "../worker/kforge-worker", here / "../../bin/kforge-worker"})
      if (fs::exists(w)) {
        setenv("KFORGE_WORKER", fs::canonical(w).c_str(), 1);
        break;
      }
  }
  Result<fs::path> cache = MakeTempDir("judge-bench-cache");
  Result<fs::path> variants = MakeTempDir("judge-bench-variants");
  if (!cache.ok() || !variants.ok()) return Usage("cannot make a temporary folder");
  chmod(cache->c_str(), 0755);
  chmod(variants->c_str(), 0755);
  setenv("KFORGE_CACHE_DIR", cache->c_str(), 1);

  EvalOptions o;
  o.backend = f.backend;
  o.budget_ms = f.budget_ms;
  o.precision_target = f.precision_target;
  o.baselines = f.baselines;
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  fmt::print("kforge_judge_bench: {} [{}] {}, budget {} ms, precision target {}, baselines {}\n", p->name, f.backend,
             candidate.string(), f.budget_ms, f.precision_target, f.baselines ? "on" : "off");
  json out = {{"problem", p->name}, {"backend", f.backend}, {"candidate", candidate.string()}, {"budget_ms", f.budget_ms},
              {"baselines", f.baselines}};

  Result<Judgement> cold = Judge(*p, candidate, o, *runner);
  if (!cold.ok()) { fmt::print(stderr, "kforge_judge_bench: {}\n", cold.status().message()); return 3; }
  fmt::print("cold      {:8.2f} s  {}{}\n", cold->seconds, cold->status, StageText(cold->stages, cold->seconds));
  out["cold"] = {{"seconds", cold->seconds}, {"status", cold->status}, {"stages", cold->stages}};

  std::vector<Judgement> warm;
  std::vector<double> warm_s;
  for (int i = 0; i < f.warm; ++i) {
    Result<Judgement> w = Judge(*p, candidate, o, *runner);
    if (!w.ok()) { fmt::print(stderr, "kforge_judge_bench: {}\n", w.status().message()); return 3; }
    fmt::print("warm {:<3}  {:8.2f} s  {} ({}){}\n", i + 1, w->seconds, w->status, TimingText(*w), StageText(w->stages, w->seconds));
    warm_s.push_back(w->seconds);
    warm.push_back(*w);
  }
  double warm_mean = 0;
  for (double x : warm_s) warm_mean += x / static_cast<double>(warm_s.size());
  fmt::print("warm      median {:.2f} s over {}; mean stages:{}\n", Median(warm_s), warm.size(), StageText(SumStages(warm), warm_mean));
  out["warm"] = {{"median_seconds", Median(warm_s)}, {"seconds", warm_s}, {"mean_stages", SumStages(warm)}};
  if (json phases = MeanPhases(warm); !phases.empty()) {
    fmt::print("warm      run's worker phases, mean ms:{}\n", PhasesText(phases));
    out["warm"]["mean_worker_phases_ms"] = phases;
  }

  if (f.distinct > 0) {
    const std::string comment = candidate.extension() == ".py" ? "#" : "//";
    // A nonce per bench run: the variants of an earlier run in the same cache would find their
    // builds and Triton caches kept, and be judged warm.
    const auto nonce = std::chrono::system_clock::now().time_since_epoch().count() ^ (static_cast<int64_t>(getpid()) << 40);
    std::vector<fs::path> files;
    for (int i = 0; i < f.distinct; ++i) {
      fs::path v = *variants / fmt::format("variant_{}{}", i, candidate.extension().string());
      if (Status s = WriteFileAtomic(v, *source + fmt::format("\n{} kforge_judge_bench variant {} of run {:x}\n", comment, i, nonce)); !s.ok()) {
        fmt::print(stderr, "kforge_judge_bench: {}\n", s.message());
        return 3;
      }
      files.push_back(v);
    }
    std::vector<Result<Judgement>> results(files.size(), Status::Internal("not judged"));
    auto t0 = std::chrono::steady_clock::now();
    {
      // As `kforge bench -j`: every build handed to the farm at once (native candidates; a
      // Python one builds in its own job), then J judging threads, each with its own runner.
      std::unique_ptr<ProcessRunner> farm_runner = NewSandboxRunner();
      CompileFarm farm(*farm_runner);
      for (const fs::path& v : files) farm.Submit(*p, v, o);
      if (!MayJudgeWhileBuilding(f.backend)) farm.Wait();
      std::atomic<size_t> next{0};
      auto work = [&] {
        std::unique_ptr<ProcessRunner> own = f.jobs > 1 ? NewSandboxRunner() : nullptr;
        for (size_t i; (i = next++) < files.size();) results[i] = Judge(*p, files[i], o, own ? *own : *runner);
      };
      std::vector<std::thread> threads;
      for (int j = 0; j < f.jobs; ++j) threads.emplace_back(work);
      for (std::thread& t : threads) t.join();
    }
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<Judgement> distinct;
    std::map<std::string, int> statuses;
    for (Result<Judgement>& d : results) {
      if (!d.ok()) { fmt::print(stderr, "kforge_judge_bench: {}\n", d.status().message()); return 3; }
      ++statuses[d->status];
      distinct.push_back(*d);
    }
    std::vector<double> each, runs, precision, medians;
    double each_mean = 0;
    int bounded = 0;
    std::map<std::string, int> rejudged;  // gate -> candidates judged twice because of it
    for (const Judgement& d : distinct) {
      each.push_back(d.seconds), each_mean += d.seconds / static_cast<double>(distinct.size());
      runs.push_back(d.runs), precision.push_back(d.median_precision), medians.push_back(d.median_ms);
      bounded += d.wall_bounded;
      if (!d.rejudged.empty()) ++rejudged[d.rejudged];
    }
    std::string st;
    for (const auto& [s, n] : statuses) st += fmt::format(" {} {}", n, s);
    fmt::print("distinct  {} candidates, {} at once, in {:.2f} s: {:.1f} verdicts/min ({}); each {:.2f} s median; mean stages:{}\n",
               f.distinct, f.jobs, wall, 60 * f.distinct / wall, st.substr(1), Median(each),
               StageText(SumStages(distinct), each_mean));
    out["distinct"] = {{"candidates", f.distinct}, {"jobs", f.jobs}, {"seconds", wall}, {"verdicts_per_minute", 60 * f.distinct / wall},
                       {"median_seconds_each", Median(each)}, {"statuses", statuses}, {"mean_stages", SumStages(distinct)}};
    // How their timed runs ended: one candidate's medians over the others' (each differs from
    // the others by a comment only).
    fmt::print("distinct  timed runs median {:.0f}, median known to +-{:.1f}% (median), medians {:.4g} ms (median), "
               "{:.4g}-{:.4g} ms (range); {} of {} the wall-clock bound\n",
               Median(runs), 100 * Median(precision), Median(medians), *std::min_element(medians.begin(), medians.end()),
               *std::max_element(medians.begin(), medians.end()), bounded, distinct.size());
    // A load-sensitive gate that tripped on a first job costs that job's whole time again.
    std::string twice;
    int twice_n = 0;
    for (const auto& [gate, n] : rejudged) twice += fmt::format("{}{} by {}", twice.empty() ? "" : ", ", n, gate), twice_n += n;
    fmt::print("distinct  {} of {} judged twice{}\n", twice_n, distinct.size(), twice.empty() ? "" : " (" + twice + ")");
    // How close the verdicts' jobs came to the untimed_work gate (a Python job's; the second job
    // where there were two): what an honest crowd uses of the allowance.
    std::vector<double> use;
    for (const Judgement& d : distinct)
      if (d.untimed_use) use.push_back(*d.untimed_use);
    if (!use.empty()) {
      fmt::print("distinct  untimed_work: share of the allowance used, median {:.2f}, 90th percentile {:.2f}, max {:.2f} (1 trips the gate)\n",
                 Median(use), LowerQuantile(use, 0.9), *std::max_element(use.begin(), use.end()));
      out["distinct"]["untimed_work_allowance_used"] = use;
    }
    // Why, for the first few: which step of which gate a loaded machine tripped.
    int shown = 0;
    for (const Judgement& d : distinct)
      if (!d.rejudged.empty() && shown++ < 5) fmt::print("distinct    first job: {}: {}\n", d.rejudged, d.rejudged_why);
    out["distinct"]["judged_twice"] = rejudged;
    out["distinct"]["each"] = json::array();
    for (const Judgement& d : distinct)
      out["distinct"]["each"].push_back({{"seconds", d.seconds}, {"status", d.status}, {"stages", d.stages}, {"phases", d.phases},
                                         {"runs", d.runs}, {"median_ms", d.median_ms}, {"judged_twice_by", d.rejudged},
                                         {"first_job", d.rejudged_why}});
    out["distinct"]["timed_runs_median"] = Median(runs);
    out["distinct"]["median_ms"] = medians;
    out["distinct"]["wall_bounded"] = bounded;
    if (json phases = MeanPhases(distinct); !phases.empty()) {
      fmt::print("distinct  run's worker phases, mean ms:{}\n", PhasesText(phases));
      out["distinct"]["mean_worker_phases_ms"] = phases;
    }
  }
  std::error_code ec;
  fs::remove_all(*variants, ec);
  fs::remove_all(*cache, ec);
  if (!f.json_out.empty()) {
    if (Status s = WriteFileAtomic(f.json_out, out.dump(1)); !s.ok()) {
      fmt::print(stderr, "kforge_judge_bench: {}\n", s.message());
      return 3;
    }
  }
  return 0;
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  kforge::TuneHeapForTensors();
  return kforge::Main(argc, argv);
}
