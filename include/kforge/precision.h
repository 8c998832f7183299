// Precision policies: which arithmetic a run accepts from candidates, and so which tolerance their
// outputs are held to (docs/evaluation.md, "Precision policy").
//
//   strict       float32 math as the reference; the problem's own tolerance (the dtype defaults
//                or its [tolerance] table). TF32, bf16 and fp16 arithmetic fail it on any long
//                reduction.
//   tf32, fp16   operands rounded to 10 explicit mantissa bits, float32 accumulation
//   bf16         operands rounded to 7 explicit mantissa bits, float32 accumulation
//   kernelbench  KernelBench's own rule, atol = rtol = 1e-2 and no RMS bound, for comparisons
//                with published KernelBench results
//
// The policy changes the tolerance and the precision gate only; every other gate applies
// unchanged. Thread-safety: plain values and pure functions.
#ifndef KFORGE_PRECISION_H_
#define KFORGE_PRECISION_H_

#include <string>
#include <string_view>
#include <vector>

#include "kforge/status.h"

namespace kforge {

// An output passes when every element satisfies
//   |out - ref| <= atol + atol_rms * RMS(ref) + rtol * |ref|
// and, for floating outputs, RMS(out - ref) / RMS(ref) <= rms (0: no RMS bound). RMS(ref) is
// the root mean square of the reference output of the same trial.
struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
  double rms = 0.0;       // max allowed RMS(out - ref) / RMS(ref); 0 = not checked
  double atol_rms = 0.0;  // absolute tolerance in units of RMS(ref)
};

enum class PrecisionPolicy { kStrict, kTf32, kBf16, kFp16, kKernelBench };

// "strict", "tf32", "bf16", "fp16", "kernelbench".
const char* PrecisionPolicyName(PrecisionPolicy policy);
// Every policy name, comma-separated, in the order above: for messages.
std::string PrecisionPolicyNames();
// Parses one name (exact, lowercase). An unknown name is InvalidArgument:
// "unknown precision policy 'x'; expected one of strict, tf32, bf16, fp16, kernelbench".
Result<PrecisionPolicy> ParsePrecisionPolicy(std::string_view name);
// Parses names given as list items, each of which may itself be comma-separated
// ("strict,kernelbench"); duplicates are dropped, the first occurrence's order kept. Fails on
// the first unknown name (as ParsePrecisionPolicy) or on an empty list.
Result<std::vector<PrecisionPolicy>> ParsePrecisionPolicies(const std::vector<std::string>& items);

// The unit roundoff of the operand format a policy allows: 2^-24 for strict (float32), 2^-11
// for tf32 and fp16, 2^-8 for bf16; 0 for kernelbench, whose rule is fixed.
double PolicyUnitRoundoff(PrecisionPolicy policy);

// The tolerance under `policy` for a floating-point output whose strict tolerance is `strict`
// (Problem::ToleranceFor applies it to floating outputs only; integers always match exactly):
//   strict       `strict` unchanged
//   tf32/fp16/bf16, with u = PolicyUnitRoundoff: each bound at least the rule's,
//                rtol >= 8u, atol_rms >= 8u, rms >= 4u; atol as in `strict`
//   kernelbench  atol = rtol = 1e-2, no RMS bound, whatever `strict` says
Tolerance PolicyTolerance(const Tolerance& strict, PrecisionPolicy policy);

// Whether the precision gate accepts relaxed-math build options and precision switches
// (OpenCL -cl-fast-relaxed-math and friends, PyTorch's TF32 switches) whatever the problem's
// allow_fast_math says: true for every policy but strict, where the tolerance alone judges.
bool PolicyAllowsFastMath(PrecisionPolicy policy);

// One line for people, e.g.
// "|out - ref| <= 0.0001 + 0.0039*RMS(ref) + 0.0039*|ref|; RMS(out - ref)/RMS(ref) <= 0.002".
std::string DescribeTolerance(const Tolerance& tol);

}  // namespace kforge

#endif  // KFORGE_PRECISION_H_
