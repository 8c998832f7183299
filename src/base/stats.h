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

}  // namespace kforge

#endif  // KFORGE_BASE_STATS_H_
