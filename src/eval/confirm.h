// The statistics of a confirmation (docs/evaluation.md, "Confirmed speedups"): per-round ratios
// of interleaved timings and a percentile-bootstrap interval of their median. Pure functions.
#ifndef KFORGE_EVAL_CONFIRM_H_
#define KFORGE_EVAL_CONFIRM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/eval.h"
#include "kforge/verdict.h"

namespace kforge {

// The median (the mean of the middle two for an even count); 0 for none.
double MedianOf(std::vector<double> x);

// Per round r: median(b[2r], b[2r+1]) / median(a[2r], a[2r+1]), over the rounds both complete.
// Above 1: A is faster.
std::vector<double> RoundRatios(const std::vector<double>& a_ms, const std::vector<double>& b_ms);

struct Interval {
  double low = 0, high = 0;
};

// Percentile bootstrap of the median of `x`: `resamples` resamples with replacement (a fixed
// pseudo-random sequence from `seed`, the same on every platform), the (1 - confidence) / 2 and
// (1 + confidence) / 2 quantiles of their medians. For one value, [x, x]; for none, [0, 0].
Interval BootstrapMedianInterval(const std::vector<double>& x, double confidence, int resamples, uint64_t seed);

// A confirmation of A against B from each side's job medians (two per round).
Confirmation Summarize(const std::string& a, const std::string& b, const std::vector<double>& a_ms,
                       const std::vector<double>& b_ms, const ConfirmOptions& options);

// The `method` line of a Confirmation made with `options`.
std::string ConfirmMethod(const ConfirmOptions& options);

}  // namespace kforge

#endif  // KFORGE_EVAL_CONFIRM_H_
