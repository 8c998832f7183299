// The speed-of-light floors of one problem at one size (docs/evaluation.md, section 4):
//  - the theoretical floor, from the theoretical peaks: no correct implementation is faster,
//    so a time below it is impossible (the gate);
//  - the achievable floor, from the peaks measured on the device: SOL% = floor / median.
// Pure functions. Thread-safety: values.
#ifndef KFORGE_EVAL_ROOFLINE_H_
#define KFORGE_EVAL_ROOFLINE_H_

#include <nlohmann/json.hpp>
#include <string>

#include "backend/theoretical_peaks.h"
#include "kforge/problem.h"

namespace kforge {

// Significand bits a correct result must carry through the arithmetic: -log2 of the loosest
// relative tolerance (rtol or rms) of the floating outputs, rounded up, at most 24 (fp32
// units run any such problem in one pass; no tighter demand is modelled), and at most the
// precision of the inputs (0 for integer-valued ones, 11 for float16, 8 for bfloat16): inputs
// a narrow format holds exactly need no split. Every choice leans low, so the floor does too.
int RequiredPrecisionBits(const Problem& problem);
// What the default float32 tolerance (1e-4) needs: the "strict fp32" `kforge doctor` quotes.
inline constexpr int kStrictFp32Bits = 14;

struct Floor {
  double ms = 0;          // max(compute_ms, memory_ms)
  double compute_ms = 0;  // flops / rate
  double memory_ms = 0;   // bytes / bandwidth
  std::string bound;      // "compute" or "memory": the larger term
};

struct TheoreticalFloor : Floor {
  int required_bits = 0;
  FlopCeiling compute;      // the fastest unit that can deliver required_bits
  double memory_bytes = 0;  // bytes minus what caches may still hold at the end
  double bandwidth_gbs = 0;
  std::string bandwidth_source;
  nlohmann::json ToJson() const;
  // The larger term in words: "compute: 2.517e+08 flops at 8465.1 GFLOP/s, amx_int8 x3 for
  // 14-bit precision" or "memory: 3.3e+10 bytes at 4761.6 GB/s, load/store ports: ...".
  std::string Describe(double flops) const;
};

// flops / FastestUnit(peaks, required_bits) and max(0, bytes - cache-resident bytes) /
// bandwidth. A rate or bandwidth of 0 contributes no term.
TheoreticalFloor ComputeTheoreticalFloor(const TheoreticalPeaks& peaks, double flops, double bytes,
                                         int required_bits);

struct AchievableFloor : Floor {
  FlopCeiling compute;  // the fastest measured unit that can deliver the required bits
};

// flops / rate and bytes / bandwidth from measured peaks: the rate of the fastest measured
// unit that delivers `required_bits` (FastestUnit over `measured`: fp32 always, bf16 tensor
// cores where the backend measures them), so that a kernel on the units the problem's
// precision allows is held to those units, as the theoretical floor holds it. A 0 rate or
// bandwidth contributes no term.
AchievableFloor ComputeAchievableFloor(const std::vector<ComputeUnit>& measured, double bandwidth_gbs, double flops,
                                       double bytes, int required_bits);

}  // namespace kforge

#endif  // KFORGE_EVAL_ROOFLINE_H_
