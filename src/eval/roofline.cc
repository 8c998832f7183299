#include "eval/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kforge {

namespace {

constexpr int kFp32Bits = 24;

// Significand bits of a value of `t` drawn from `dist`: what a format must hold to store it
// exactly.
int InputBits(DType t, const Distribution& dist) {
  if (!IsFloating(t) || dist.kind == Distribution::Kind::kIntegers) return 0;
  switch (t) {
    case DType::kFloat16:
      return 11;
    case DType::kBFloat16:
      return 8;
    case DType::kFloat64:
      return 53;
    default:
      return kFp32Bits;
  }
}

Floor Combine(double compute_s, double memory_s) {
  Floor f;
  f.compute_ms = 1e3 * compute_s;
  f.memory_ms = 1e3 * memory_s;
  f.ms = std::max(f.compute_ms, f.memory_ms);
  f.bound = f.compute_ms >= f.memory_ms ? "compute" : "memory";
  return f;
}

}  // namespace

int RequiredPrecisionBits(const Problem& problem) {
  double tol = 0;
  for (const TensorDecl& o : problem.outputs) {
    if (!IsFloating(o.dtype)) continue;
    Tolerance t = problem.ToleranceFor(o.dtype);
    tol = std::max({tol, t.rtol, t.rms});
  }
  int bits = tol > 0 ? static_cast<int>(std::ceil(-std::log2(tol))) : kFp32Bits;
  bits = std::clamp(bits, 0, kFp32Bits);
  for (const TensorDecl& in : problem.inputs) bits = std::min(bits, InputBits(in.dtype, in.dist));
  return bits;
}

nlohmann::json TheoreticalFloor::ToJson() const {
  return {{"floor_ms", ms},
          {"bound", bound},
          {"compute_ms", compute_ms},
          {"memory_ms", memory_ms},
          {"required_bits", required_bits},
          {"gflops", compute.gflops},
          {"unit", compute.unit},
          {"products", compute.products},
          {"bandwidth_gbs", bandwidth_gbs},
          {"bandwidth_source", bandwidth_source},
          {"memory_bytes", memory_bytes}};
}

std::string TheoreticalFloor::Describe(double flops) const {
  if (bound == "compute")
    return fmt::format("compute: {:.4g} flops at {:.1f} GFLOP/s, {} x{} for {}-bit precision",
                       flops, compute.gflops, compute.unit, compute.products, required_bits);
  return fmt::format("memory: {:.4g} bytes at {:.1f} GB/s, {}", memory_bytes, bandwidth_gbs,
                     bandwidth_source);
}

TheoreticalFloor ComputeTheoreticalFloor(const TheoreticalPeaks& peaks, double flops, double bytes,
                                         int required_bits) {
  TheoreticalFloor f;
  f.required_bits = required_bits;
  f.compute = FastestUnit(peaks, required_bits);
  f.memory_bytes = std::max(0.0, bytes - peaks.cache_resident_bytes);
  f.bandwidth_gbs = peaks.bandwidth_gbs;
  f.bandwidth_source = peaks.bandwidth_source;
  double compute_s = f.compute.gflops > 0 ? flops / (f.compute.gflops * 1e9) : 0;
  double memory_s = peaks.bandwidth_gbs > 0 ? f.memory_bytes / (peaks.bandwidth_gbs * 1e9) : 0;
  static_cast<Floor&>(f) = Combine(compute_s, memory_s);
  return f;
}

AchievableFloor ComputeAchievableFloor(const std::vector<ComputeUnit>& measured, double bandwidth_gbs, double flops,
                                       double bytes, int required_bits) {
  AchievableFloor f;
  f.compute = FastestUnit(measured, required_bits);
  static_cast<Floor&>(f) = Combine(f.compute.gflops > 0 ? flops / (f.compute.gflops * 1e9) : 0,
                                   bandwidth_gbs > 0 ? bytes / (bandwidth_gbs * 1e9) : 0);
  return f;
}

}  // namespace kforge
