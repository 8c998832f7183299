// Comparing a candidate's output with the reference (EVALUATION.md section 2).
#ifndef KFORGE_EVAL_COMPARE_H_
#define KFORGE_EVAL_COMPARE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/problem.h"

namespace kforge {

struct Mismatch {
  int64_t index = 0;            // flat index
  std::vector<int64_t> coords;  // per dimension
  double got = 0, want = 0;
};

struct Comparison {
  bool pass = true;
  std::string reason;           // first failing rule, for people
  int64_t bad_count = 0;        // elements outside atol + atol_rms * RMS(ref) + rtol * |ref|
  int64_t unwritten = 0;        // elements still NaN where the reference is finite
  int64_t nonfinite = 0;        // NaN or Inf where the reference is finite
  double max_abs = 0, max_rel = 0;
  double rms_rel = 0;           // RMS(out - ref) / RMS(ref)
  double ref_rms = 0;
  std::vector<Mismatch> first;  // up to 5 mismatches, in index order
};

// `got` holds the output in its dtype; `want` the reference as double.
Comparison CompareOutput(const TensorShape& shape, const std::string& got,
                         const std::vector<double>& want, const Tolerance& tol);

nlohmann::json ComparisonToJson(const Comparison& c);

// True when the reference output is degenerate: near-constant or tiny relative to atol, so a
// constant fill could pass. `why` says which.
bool IsDegenerate(const std::vector<double>& ref, const Tolerance& tol, std::string* why);

}  // namespace kforge

#endif  // KFORGE_EVAL_COMPARE_H_
