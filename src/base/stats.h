// Small statistics shared by the workers and the orchestrator.
#ifndef KFORGE_BASE_STATS_H_
#define KFORGE_BASE_STATS_H_

#include <algorithm>
#include <cmath>
#include <vector>

namespace kforge {

// The median (the mean of the two middle values for an even count); 0 for none.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The nearest-rank value with at least a fraction q of `v` at or below it (q in (0, 1]): for
// q = 0.25 and 8 values the 2nd smallest. 0 for none.
inline double LowerQuantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
  return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

// Sample standard deviation over mean; 1 for fewer than two values or a mean of 0.
inline double CoefficientOfVariation(const std::vector<double>& xs) {
  if (xs.size() < 2) return 1.0;
  double mean = 0, var = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  for (double x : xs) var += (x - mean) * (x - mean);
  var /= static_cast<double>(xs.size() - 1);
  return mean > 0 ? std::sqrt(var) / mean : 1.0;
}

// Timed runs alternate between input sets whose speeds may differ (gelu's magnitude-4 set takes
// twice as long as its magnitude-1 set on the CPU), so pooling them makes a two-humped sample:
// its median jumps between the humps and its spread never meets a stopping target. These
// group the runs by set (`sets[i]` is run i's) and combine per set. Without a set per value
// they fall back to the pooled statistic.
inline std::vector<std::vector<double>> BySet(const std::vector<double>& xs, const std::vector<int>& sets) {
  std::vector<std::vector<double>> groups;
  if (sets.size() != xs.size()) return {xs};
  std::vector<int> ids;
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t g = static_cast<size_t>(std::find(ids.begin(), ids.end(), sets[i]) - ids.begin());
    if (g == ids.size()) ids.push_back(sets[i]), groups.emplace_back();
    groups[g].push_back(xs[i]);
  }
  return groups;
}

// The mean over the sets of each set's median: every set weighs the same.
inline double SetMedian(const std::vector<double>& xs, const std::vector<int>& sets) {
  std::vector<std::vector<double>> groups = BySet(xs, sets);
  if (groups.empty() || groups.front().empty()) return 0;
  double sum = 0;
  for (const std::vector<double>& g : groups) sum += Median(g);
  return sum / static_cast<double>(groups.size());
}

// The root mean square over the sets of `stat` of each set's runs.
template <typename Stat>
double RootMeanSquareBySet(const std::vector<std::vector<double>>& groups, Stat stat) {
  double sq = 0;
  for (const std::vector<double>& g : groups) {
    const double v = stat(g);
    sq += v * v;
  }
  return std::sqrt(sq / static_cast<double>(groups.size()));
}

// The root mean square of the sets' coefficients of variation (sets of one run count as 1: not
// yet known); the stopping rule of both workers and the verdict's `cv`.
inline double SetCoefficientOfVariation(const std::vector<double>& xs, const std::vector<int>& sets) {
  std::vector<std::vector<double>> groups = BySet(xs, sets);
  if (groups.empty() || xs.size() < 2) return 1.0;
  return RootMeanSquareBySet(groups, [](const std::vector<double>& g) { return CoefficientOfVariation(g); });
}

// How well `v`'s median is known: half the width of its 95% confidence interval over the median.
// The interval is distribution-free (order statistics: the count of values below the true median
// is binomial(n, 1/2), taken as normal): from the value of rank round(n/2 - 0.98 sqrt(n)) to the
// one of rank round(1 + n/2 + 0.98 sqrt(n)), 1-based. Timings have long right tails (a
// preempted run, a page fault) that inflate the coefficient of variation however many runs are
// taken, while the median they are judged by is already pinned down: this is the stopping rule
// that sees that. 1 when the interval's ranks fall outside the sample (fewer than 6 values; at 6
// and 7 it is the whole sample) or the median is not positive. It may exceed 1 (a wide sample).
inline double MedianPrecision(std::vector<double> v) {
  const double n = static_cast<double>(v.size());
  const long lo = std::lround(n / 2 - 0.98 * std::sqrt(n)), hi = std::lround(1 + n / 2 + 0.98 * std::sqrt(n));
  if (lo < 1 || hi > static_cast<long>(v.size())) return 1.0;
  std::sort(v.begin(), v.end());
  const double median = Median(v);
  if (!(median > 0)) return 1.0;
  return (v[static_cast<size_t>(hi - 1)] - v[static_cast<size_t>(lo - 1)]) / (2 * median);
}

// The root mean square of the sets' MedianPrecision (SetCoefficientOfVariation's grouping): the
// workers' second stopping rule, and the verdict's `median_precision`.
inline double SetMedianPrecision(const std::vector<double>& xs, const std::vector<int>& sets) {
  std::vector<std::vector<double>> groups = BySet(xs, sets);
  if (groups.empty() || xs.empty()) return 1.0;
  return RootMeanSquareBySet(groups, [](const std::vector<double>& g) { return MedianPrecision(g); });
}

}  // namespace kforge

#endif  // KFORGE_BASE_STATS_H_
