// Confirmed speedups: interleaved re-timing of kernels and the statistics of the ratio.
//
// Why interleave: on a shared machine the speed of everything drifts (other jobs, clocks,
// thermal state) over seconds, far more than two near-identical kernels differ. Timing A
// B B A puts both kernels at the same mean moment of every round, so a linear drift cancels
// within the round, and the per-round ratio compares like with like. Why one job per timing:
// a kernel never shares a process (or its warm caches and allocator state) with its rival.
#include "eval/confirm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

namespace kforge {

double MedianOf(std::vector<double> x) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

std::vector<double> RoundRatios(const std::vector<double>& a_ms, const std::vector<double>& b_ms) {
  std::vector<double> ratios;
  size_t rounds = std::min(a_ms.size(), b_ms.size()) / 2;
  for (size_t r = 0; r < rounds; ++r) {
    double a = MedianOf({a_ms[2 * r], a_ms[2 * r + 1]}), b = MedianOf({b_ms[2 * r], b_ms[2 * r + 1]});
    ratios.push_back(a > 0 ? b / a : 0);
  }
  return ratios;
}

Interval BootstrapMedianInterval(const std::vector<double>& x, double confidence, int resamples, uint64_t seed) {
  if (x.empty()) return {};
  if (x.size() == 1 || resamples < 1) return {MedianOf(x), MedianOf(x)};
  // mt19937_64's output sequence is fixed by the standard (its distributions are not), so
  // the draws, and with them the interval, are the same everywhere. The modulo bias is below
  // 1e-18 for a handful of rounds.
  std::mt19937_64 rng(seed);
  const size_t n = x.size(), b = static_cast<size_t>(resamples);
  std::vector<double> medians(b), draw(n);
  for (size_t k = 0; k < b; ++k) {
    for (size_t i = 0; i < n; ++i) draw[i] = x[rng() % n];
    medians[k] = MedianOf(draw);
  }
  std::sort(medians.begin(), medians.end());
  auto quantile = [&](double q) {  // nearest rank
    double rank = std::ceil(q * static_cast<double>(b) - 1e-9);
    return medians[static_cast<size_t>(std::clamp(rank - 1, 0.0, static_cast<double>(b - 1)))];
  };
  return {quantile((1 - confidence) / 2), quantile((1 + confidence) / 2)};
}

std::string ConfirmMethod(const ConfirmOptions& o) {
  return fmt::format("median over {} ABBA rounds of median(B's two jobs) / median(A's two jobs); {:.0f}% percentile "
                     "bootstrap of that median ({} resamples, seed {})",
                     o.rounds, 100 * o.confidence, o.resamples, o.seed);
}

Confirmation Summarize(const std::string& a, const std::string& b, const std::vector<double>& a_ms,
                       const std::vector<double>& b_ms, const ConfirmOptions& options) {
  Confirmation c;
  c.candidate = a;
  c.against = b;
  c.ratios = RoundRatios(a_ms, b_ms);
  c.rounds = static_cast<int>(c.ratios.size());
  for (int r = 0; r < c.rounds; ++r) {
    c.candidate_ms.push_back(MedianOf({a_ms[2 * r], a_ms[2 * r + 1]}));
    c.against_ms.push_back(MedianOf({b_ms[2 * r], b_ms[2 * r + 1]}));
  }
  c.ratio = MedianOf(c.ratios);
  Interval ci = BootstrapMedianInterval(c.ratios, options.confidence, options.resamples, options.seed);
  c.ci_low = ci.low;
  c.ci_high = ci.high;
  c.confidence = options.confidence;
  c.method = ConfirmMethod(options);
  return c;
}

Confirmation InterleavedTimes::Compare(size_t a, size_t b) const {
  Confirmation c = Summarize(labels.at(a), labels.at(b), job_ms.at(a), job_ms.at(b), options);
  c.seconds = seconds;
  if (failure && (failed == static_cast<int>(a) || failed == static_cast<int>(b))) {
    c.failed = labels[static_cast<size_t>(failed)];
    c.failure = failure->ToJson();
  }
  return c;
}

Result<InterleavedTimes> ConfirmInterleaved(const std::vector<ConfirmSubject>& subjects, const ConfirmOptions& confirm,
                                            const KernelTimerFactory& make) {
  if (subjects.size() < 2) return Status::InvalidArgument("a confirmation needs at least two kernels");
  auto t0 = std::chrono::steady_clock::now();
  InterleavedTimes out;
  out.options = confirm;
  out.job_ms.resize(subjects.size());
  std::vector<std::unique_ptr<KernelTimer>> timers;
  for (const ConfirmSubject& s : subjects) {
    out.labels.push_back(s.label);
    KF_ASSIGN_OR_RETURN(std::unique_ptr<KernelTimer> t, make(s));
    timers.push_back(std::move(t));
  }
  std::vector<size_t> order;  // forward, then backward: A B B A for two
  for (size_t i = 0; i < subjects.size(); ++i) order.push_back(i);
  for (size_t i = subjects.size(); i-- > 0;) order.push_back(i);
  for (int r = 0; r < confirm.rounds && out.failed < 0; ++r) {
    for (size_t i : order) {
      KF_ASSIGN_OR_RETURN(Verdict v, timers[i]->Time());
      if (!v.correct() || !v.timing) {
        out.failed = static_cast<int>(i);
        out.failure = std::move(v);
        break;
      }
      out.job_ms[i].push_back(v.timing->median_ms);
    }
    if (out.failed < 0) out.rounds = r + 1;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// Each job's budget, minimum runs and checked samples come from the confirmation: the
// judgement's larger budget buys a low CV inside one process, which is not where the noise of
// a ratio lies, and one checked sample per job still checks every job (ten per kernel over
// five rounds), at a third of the reference's cost.
Result<InterleavedTimes> ConfirmInterleaved(const Problem& problem, const std::vector<ConfirmSubject>& subjects,
                                            const EvalOptions& options, const ConfirmOptions& confirm,
                                            ProcessRunner& runner) {
  EvalOptions o = options;
  o.budget_ms = confirm.budget_ms;
  o.min_runs = confirm.min_runs;
  o.timed_checks = confirm.timed_checks;
  return ConfirmInterleaved(subjects, confirm, [&](const ConfirmSubject& s) { return NewKernelTimer(problem, s, o, runner); });
}

Result<Confirmation> Confirm(const Problem& problem, const ConfirmSubject& a, const ConfirmSubject& b,
                             const EvalOptions& options, const ConfirmOptions& confirm, ProcessRunner& runner) {
  KF_ASSIGN_OR_RETURN(InterleavedTimes t, ConfirmInterleaved(problem, {a, b}, options, confirm, runner));
  return t.Compare(0, 1);
}

}  // namespace kforge
