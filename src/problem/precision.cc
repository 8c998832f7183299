// Precision policies and their tolerance rules (include/kforge/precision.h).
//
// Why the reduced-precision rules scale with RMS(ref) rather than with a reduction length: a
// kernel that rounds its operands to a format with unit roundoff u and accumulates in float32
// computes sum_i t_i (1 + d_i) for a reference sum_i t_i, with |d_i| <= 2u (two rounded
// operands). With round-to-nearest the error sum_i t_i d_i has a standard deviation of about
// 0.6 u sqrt(sum_i t_i^2) (0.55u measured in src/eval/compare_test.cc). When the terms have
// random signs (normal inputs, KernelBench's torch.randn) the reference itself has RMS
// sqrt(sum_i t_i^2), so the error is about 0.6 u RMS(ref) whatever the length K: an absolute
// bound of 8u RMS(ref) is over ten standard deviations, enough for millions of outputs. When
// the terms share a sign, |ref| exceeds sqrt(sum_i t_i^2) and rtol = 8u covers the error,
// biased rounding (truncation, about 2u |ref|) included. A rule in K would also need the size
// of the terms, which a PyTorch problem does not declare and each trial's input magnitude
// changes; RMS(ref) carries both. The RMS bound of 4u is about seven times the expected 0.6u,
// room for an epilogue that amplifies the error a little, and still below what bf16 operands
// give (0.6 x 8 = 4.7 tf32 units), so tf32 tells them apart. float32 accumulation adds about
// 2^-24 sqrt(K) RMS(ref), below 8u for any K a kernel meets.
#include "kforge/precision.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"

namespace kforge {

namespace {

constexpr PrecisionPolicy kAllPolicies[] = {PrecisionPolicy::kStrict, PrecisionPolicy::kTf32,
                                            PrecisionPolicy::kBf16, PrecisionPolicy::kFp16,
                                            PrecisionPolicy::kKernelBench};

constexpr double kElementFactor = 8.0;          // rtol and atol_rms, in units of u
constexpr double kRmsFactor = 4.0;              // the RMS-relative bound, in units of u
constexpr double kKernelBenchTolerance = 1e-2;  // KernelBench's atol = rtol

}  // namespace

const char* PrecisionPolicyName(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kStrict:
      return "strict";
    case PrecisionPolicy::kTf32:
      return "tf32";
    case PrecisionPolicy::kBf16:
      return "bf16";
    case PrecisionPolicy::kFp16:
      return "fp16";
    case PrecisionPolicy::kKernelBench:
      return "kernelbench";
  }
  return "unknown";
}

std::string PrecisionPolicyNames() {
  std::string names;
  for (PrecisionPolicy p : kAllPolicies)
    names += (names.empty() ? "" : ", ") + std::string(PrecisionPolicyName(p));
  return names;
}

Result<PrecisionPolicy> ParsePrecisionPolicy(std::string_view name) {
  for (PrecisionPolicy p : kAllPolicies)
    if (name == PrecisionPolicyName(p)) return p;
  return Status::InvalidArgument(fmt::format("unknown precision policy '{}'; expected one of {}",
                                             name, PrecisionPolicyNames()));
}

Result<std::vector<PrecisionPolicy>> ParsePrecisionPolicies(const std::vector<std::string>& items) {
  std::vector<PrecisionPolicy> out;
  for (const std::string& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      size_t comma = std::min(item.find(',', start), item.size());
      KF_ASSIGN_OR_RETURN(PrecisionPolicy p, ParsePrecisionPolicy(std::string_view(item).substr(
                                                 start, comma - start)));
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
      start = comma + 1;
    }
  }
  if (out.empty())
    return Status::InvalidArgument("no precision policy given; expected one or more of " +
                                   PrecisionPolicyNames());
  return out;
}

double PolicyUnitRoundoff(PrecisionPolicy policy) {
  switch (policy) {
    case PrecisionPolicy::kStrict:
      return std::ldexp(1.0, -24);
    case PrecisionPolicy::kTf32:
    case PrecisionPolicy::kFp16:
      return std::ldexp(1.0, -11);
    case PrecisionPolicy::kBf16:
      return std::ldexp(1.0, -8);
    case PrecisionPolicy::kKernelBench:
      break;
  }
  return 0.0;
}

Tolerance PolicyTolerance(const Tolerance& strict, PrecisionPolicy policy) {
  if (policy == PrecisionPolicy::kStrict) return strict;
  if (policy == PrecisionPolicy::kKernelBench)
    return {kKernelBenchTolerance, kKernelBenchTolerance, 0.0, 0.0};
  double u = PolicyUnitRoundoff(policy);
  Tolerance t = strict;
  t.rtol = std::max(t.rtol, kElementFactor * u);
  t.atol_rms = std::max(t.atol_rms, kElementFactor * u);
  // A strict tolerance without an RMS bound (rms = 0) stays without one: the policy loosens.
  if (t.rms > 0) t.rms = std::max(t.rms, kRmsFactor * u);
  return t;
}

bool PolicyAllowsFastMath(PrecisionPolicy policy) { return policy != PrecisionPolicy::kStrict; }

std::string DescribeTolerance(const Tolerance& tol) {
  std::string s = fmt::format("|out - ref| <= {:.3g}", tol.atol);
  if (tol.atol_rms > 0) s += fmt::format(" + {:.3g}*RMS(ref)", tol.atol_rms);
  s += fmt::format(" + {:.3g}*|ref|", tol.rtol);
  if (tol.rms > 0) s += fmt::format("; RMS(out - ref)/RMS(ref) <= {:.3g}", tol.rms);
  return s;
}

}  // namespace kforge
