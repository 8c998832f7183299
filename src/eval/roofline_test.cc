// Specifications of the speed-of-light floors: the precision a problem demands, the
// theoretical floor (the gate) and the achievable one (SOL%).
#include "eval/roofline.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

Problem WithTensors(DType in, DType out, Distribution::Kind kind = Distribution::Kind::kNormal) {
  Problem p;
  TensorDecl x{"x", {"n"}, in, {}};
  x.dist.kind = kind;
  p.inputs = {x};
  p.outputs = {TensorDecl{"y", {"n"}, out, {}}};
  return p;
}

TEST(RequiredPrecisionBitsTest, GivenAStrictFp32ProblemItNeeds14Bits) {
  EXPECT_EQ(RequiredPrecisionBits(WithTensors(DType::kFloat32, DType::kFloat32)),
            14);  // 2^-14 <= 1e-4
}

TEST(RequiredPrecisionBitsTest, GivenHalfPrecisionTheLooserToleranceAndTheInputsSetIt) {
  EXPECT_EQ(RequiredPrecisionBits(WithTensors(DType::kFloat16, DType::kFloat16)), 7);  // 1e-2
  EXPECT_EQ(RequiredPrecisionBits(WithTensors(DType::kBFloat16, DType::kFloat32)),
            8);  // bf16 inputs are exact in bf16
}

TEST(RequiredPrecisionBitsTest, GivenIntegerValuedInputsNoSplitIsNeeded) {
  EXPECT_EQ(RequiredPrecisionBits(
                WithTensors(DType::kFloat32, DType::kFloat32, Distribution::Kind::kIntegers)),
            0);
}

TEST(RequiredPrecisionBitsTest, GivenALooserOverrideItNeedsFewerBits) {
  Problem p = WithTensors(DType::kFloat32, DType::kFloat32);
  p.has_tolerance_override = true;
  p.tolerance_override = {1e-3, 1e-3, 1e-3};
  EXPECT_EQ(RequiredPrecisionBits(p), 10);
  p.tolerance_override = {0, 0, 0};  // exact: still at most fp32's 24 bits
  EXPECT_EQ(RequiredPrecisionBits(p), 24);
}

TheoreticalPeaks H100() {
  NvidiaGpuFacts f;
  f.cc_major = 9, f.sm_count = 132, f.clock_mhz = 1980, f.memory_clock_mhz = 2619,
  f.memory_bus_bits = 5120;
  f.l2_bytes = 50 << 20;
  return NvidiaTheoreticalPeaks(f);
}

TEST(TheoreticalFloorTest, GivenAStrictFp32MatmulOnAnH100ItIsComputeBoundOnInt8TensorCores) {
  double n = 4096, flops = 2 * n * n * n, bytes = 3 * 4 * n * n;
  TheoreticalFloor f = ComputeTheoreticalFloor(H100(), flops, bytes, 14);
  EXPECT_EQ(f.bound, "compute");
  EXPECT_EQ(f.compute.unit, "tensor int8");
  EXPECT_EQ(f.compute.products, 3);
  EXPECT_NEAR(f.ms, 1e3 * flops / (132 * 1.98e9 * 8192 / 3), 1e-9);  // 0.193 ms
  // The 201 MB of traffic less the 50 MiB an L2 could still hold, at 3352 GB/s.
  EXPECT_NEAR(f.memory_ms, 1e3 * (bytes - (50 << 20)) / 3352.32e9, 1e-6);
  nlohmann::json j = f.ToJson();
  EXPECT_EQ(j["unit"], "tensor int8");
  EXPECT_EQ(j["required_bits"], 14);
}

TEST(TheoreticalFloorTest, GivenTrafficThatFitsInL2TheMemoryTermIsZero) {
  TheoreticalFloor f = ComputeTheoreticalFloor(H100(), 0, 1 << 20, 14);
  EXPECT_EQ(f.memory_ms, 0);
  EXPECT_EQ(f.ms, 0);
}

TEST(TheoreticalFloorTest, GivenACpuTheMemoryTermUsesTheLoadStorePorts) {
  TheoreticalPeaks cpu = CpuTheoreticalPeaks({"", 0, ""});  // nothing known: 1 core, 6.2 GHz
  TheoreticalFloor f = ComputeTheoreticalFloor(cpu, 0, 1e9, 14);
  EXPECT_EQ(f.bound, "memory");
  EXPECT_NEAR(f.ms, 1e3 * 1e9 / (6.2e9 * 6 * 64), 1e-9);
  EXPECT_NE(f.bandwidth_source.find("load/store ports"), std::string::npos);
}

TEST(AchievableFloorTest, GivenMeasuredPeaksItIsTheLargerTerm) {
  const std::vector<ComputeUnit> fp32 = {{"fp32 (measured)", 100, 24}};
  Floor f = ComputeAchievableFloor(fp32, 10, 1e9, 1e9, 24);  // 10 ms of flops, 100 ms of bytes
  EXPECT_EQ(f.bound, "memory");
  EXPECT_NEAR(f.ms, 100, 1e-9);
  EXPECT_EQ(ComputeAchievableFloor({}, 0, 1e9, 1e9, 24).ms, 0);
  EXPECT_EQ(ComputeAchievableFloor({{"fp32 (measured)", 0, 24}}, 0, 1e9, 1e9, 24).ms, 0);
}

// A measured tensor-core rate holds a problem to the units its precision allows, as the
// theoretical floor does: bf16 itself for 8 bits or fewer, three bf16 products (bf16x3) when
// that beats fp32 for 14 bits, fp32 for full fp32 precision.
TEST(AchievableFloorTest, GivenAMeasuredTensorRateTheRequiredBitsPickTheUnit) {
  const std::vector<ComputeUnit> h100 = {{"fp32 (measured)", 60000, 24}, {"tensor bf16 (measured)", 600000, 8}};
  AchievableFloor loose = ComputeAchievableFloor(h100, 3000, 6e11, 1e6, 7);
  EXPECT_EQ(loose.compute.unit, "tensor bf16 (measured)");
  EXPECT_EQ(loose.compute.products, 1);
  EXPECT_NEAR(loose.compute_ms, 1.0, 1e-9);
  EXPECT_EQ(loose.bound, "compute");
  AchievableFloor strict = ComputeAchievableFloor(h100, 3000, 6e11, 1e6, 14);
  EXPECT_EQ(strict.compute.products, 3);
  EXPECT_NEAR(strict.compute.gflops, 200000, 1e-6);
  AchievableFloor full = ComputeAchievableFloor(h100, 3000, 6e11, 1e6, 24);  // split products still win
  EXPECT_EQ(full.compute.products, EmulationProducts(8, 24));
  EXPECT_NEAR(full.compute.gflops, 600000.0 / EmulationProducts(8, 24), 1e-6);
  // Without a measured tensor rate (a CPU, a CUDA build without nvcc) fp32 is the rate.
  AchievableFloor cpu = ComputeAchievableFloor({{"fp32 (measured)", 60000, 24}}, 3000, 6e11, 1e6, 7);
  EXPECT_EQ(cpu.compute.unit, "fp32 (measured)");
  EXPECT_NEAR(cpu.compute_ms, 10.0, 1e-9);
  // A tensor rate too slow to pay for its products leaves fp32 in charge.
  AchievableFloor slow = ComputeAchievableFloor({{"fp32 (measured)", 60000, 24}, {"tensor bf16 (measured)", 90000, 8}},
                                                3000, 6e11, 1e6, 14);
  EXPECT_EQ(slow.compute.unit, "fp32 (measured)");
}

}  // namespace
}  // namespace kforge
