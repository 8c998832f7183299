// Small statistics shared by the workers and the orchestrator.
#ifndef KFORGE_BASE_STATS_H_
#define KFORGE_BASE_STATS_H_

#include <algorithm>
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

}  // namespace kforge

#endif  // KFORGE_BASE_STATS_H_
