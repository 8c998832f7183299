// Specifications of the theoretical peaks: CPUs from fixed /proc/cpuinfo texts (testdata/
// cpuinfo/) and from this machine, NVIDIA GPUs from driver-like attributes checked against
// NVIDIA's published dense peaks, and the choice of the fastest unit for a precision.
#include "backend/theoretical_peaks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/cpp/cpu_peaks.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kCpuInfo = fs::path(KFORGE_BACKEND_TESTDATA) / "cpuinfo";

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const ComputeUnit* Unit(const TheoreticalPeaks& p, const std::string& name) {
  for (const ComputeUnit& u : p.units)
    if (u.name == name) return &u;
  return nullptr;
}

constexpr int kFp32Bits = 14;  // what a 1e-4 relative tolerance needs (2^-14 <= 1e-4)

TEST(EmulationProductsTest, GivenAFormatPreciseEnoughItIsOnePass) {
  EXPECT_EQ(EmulationProducts(24, kFp32Bits), 1);
  EXPECT_EQ(EmulationProducts(11, 7), 1);  // fp16 for a 1e-2 tolerance
  EXPECT_EQ(EmulationProducts(7, 7), 1);   // int8 too
}

TEST(EmulationProductsTest, GivenFp32AccuracyFromNarrowFormatsItCountsTheSplitProducts) {
  EXPECT_EQ(EmulationProducts(11, kFp32Bits), 3);  // tf32x3
  EXPECT_EQ(EmulationProducts(8, kFp32Bits), 3);   // bf16x3
  EXPECT_EQ(EmulationProducts(7, kFp32Bits), 3);   // two int8 slices per operand
  EXPECT_EQ(EmulationProducts(4, kFp32Bits), 6);   // three fp8 e4m3 slices
  EXPECT_EQ(EmulationProducts(2, kFp32Bits), 15);  // five fp4 slices
}

TEST(CpuTheoreticalPeaksTest,
     GivenAnAvx512XeonWithABoostReportingDriverItUsesPhysicalCoresAndTheBoostClock) {
  TheoreticalPeaks p =
      CpuTheoreticalPeaks({Read(kCpuInfo / "xeon_avx512.txt"), 4'800'000, "intel_pstate"});
  EXPECT_EQ(p.basis["cores"], 4) << p.basis.dump();  // 8 threads on 4 cores
  EXPECT_DOUBLE_EQ(p.basis["clock_ghz"].get<double>(), 4.8);
  EXPECT_EQ(p.basis["vector_bytes"], 64);
  ASSERT_NE(Unit(p, "fp32 simd"), nullptr);
  EXPECT_DOUBLE_EQ(Unit(p, "fp32 simd")->gops, 4 * 4.8 * 16 * 6);
  ASSERT_NE(Unit(p, "int8 dot (avx512_vnni)"), nullptr);
  EXPECT_DOUBLE_EQ(Unit(p, "int8 dot (avx512_vnni)")->gops, 4 * 4.8 * 256);
  EXPECT_EQ(Unit(p, "amx_int8"), nullptr);
  // VNNI int8 needs 3 products for fp32 accuracy: 1/3 of 256 per cycle is below fp32's 96.
  FlopCeiling c = FastestUnit(p, kFp32Bits);
  EXPECT_EQ(c.unit, "fp32 simd");
  EXPECT_GE(c.gflops, 4 * 4.8 * 2 * 16 * 2);  // the textbook peak: 2 FMA units of 16 lanes
  EXPECT_DOUBLE_EQ(p.bandwidth_gbs, 4 * 4.8 * 6 * 64);
  EXPECT_NE(p.bandwidth_source.find("load/store ports"), std::string::npos);
  EXPECT_EQ(p.cache_resident_bytes, 0);
}

TEST(CpuTheoreticalPeaksTest, GivenNoCpufreqTheNominalClockFromTheNameIsScaledAndCapped) {
  TheoreticalPeaks p = CpuTheoreticalPeaks({Read(kCpuInfo / "xeon_avx512.txt"), 0, ""});
  EXPECT_DOUBLE_EQ(p.basis["clock_ghz"].get<double>(), 6.2);  // min(5 x 4.1, 6.2)
  EXPECT_NE(p.basis["clock_source"].get<std::string>().find("model name"), std::string::npos);
}

TEST(CpuTheoreticalPeaksTest, GivenAnAvx2DesktopWithAcpiCpufreqItsMaximumIsTakenAsNominal) {
  // acpi-cpufreq reports the 3.8 GHz nominal clock of a part that boosts to 4.7 GHz.
  TheoreticalPeaks p =
      CpuTheoreticalPeaks({Read(kCpuInfo / "desktop_avx2.txt"), 3'800'000, "acpi-cpufreq"});
  EXPECT_EQ(p.basis["cores"], 8);
  EXPECT_EQ(p.basis["isa"], "x86 avx2");
  EXPECT_DOUBLE_EQ(p.basis["clock_ghz"].get<double>(), 6.2);
  EXPECT_GE(p.basis["clock_ghz"].get<double>(), 4.7);
  EXPECT_DOUBLE_EQ(Unit(p, "fp32 simd")->gops, 8 * 6.2 * 8 * 6);
  EXPECT_EQ(p.units.size(), 1u);  // no VNNI, AVX512 or AMX units
  EXPECT_DOUBLE_EQ(p.bandwidth_gbs, 8 * 6.2 * 6 * 32);
}

TEST(CpuTheoreticalPeaksTest, GivenAnArmCpuTheBoundIsConservative) {
  TheoreticalPeaks p = CpuTheoreticalPeaks({Read(kCpuInfo / "arm.txt"), 0, ""});
  EXPECT_EQ(p.basis["cores"], 4);
  EXPECT_NE(p.basis["isa"].get<std::string>().find("not modelled"), std::string::npos);
  EXPECT_DOUBLE_EQ(p.basis["clock_ghz"].get<double>(), 6.2);
  // Above any 4-core Arm part: even four 128-bit FMA pipes at 4.5 GHz give 4 x 4.5 x 32.
  FlopCeiling c = FastestUnit(p, kFp32Bits);
  EXPECT_GE(c.gflops, 4 * 4.5 * 32 * 3);
  EXPECT_EQ(c.unit, "matrix unit (assumed)");
  EXPECT_DOUBLE_EQ(p.bandwidth_gbs, 4 * 6.2 * 6 * 64);
}

TEST(CpuTheoreticalPeaksTest, GivenAnEmptyCpuinfoItStillGivesAConservativeBound) {
  TheoreticalPeaks p = CpuTheoreticalPeaks({"", 0, ""});
  EXPECT_EQ(p.basis["cores"], 1);
  EXPECT_GT(FastestUnit(p, kFp32Bits).gflops, 0);
  EXPECT_GT(p.bandwidth_gbs, 0);
}

// This machine: the bound from its own /proc/cpuinfo must be above what its cores reach in
// kforge's own peak loops (the FMA chains and an in-cache copy, the fastest memory traffic).
TEST(CpuTheoreticalPeaksTest, GivenThisMachineTheTheoreticalPeaksAreAboveWhatItMeasures) {
  CpuFacts facts = ReadHostCpuFacts();
  ASSERT_FALSE(facts.cpuinfo.empty());
  TheoreticalPeaks p = CpuTheoreticalPeaks(facts);
  double fma = MeasureFmaGflops();
  double copy = MeasureCopyBandwidthGbs(16 << 20);
  FlopCeiling fp32 = FastestUnit(p, kFp32Bits);
  std::cout << "this machine: " << p.basis.dump() << "\n  theoretical " << fp32.gflops
            << " GFLOP/s (" << fp32.unit << ", " << fp32.products << " products), "
            << p.bandwidth_gbs << " GB/s; measured " << fma << " GFLOP/s fp32 FMA, " << copy
            << " GB/s copy in cache\n";
  EXPECT_GE(Unit(p, "fp32 simd")->gops, fma);
  EXPECT_GE(p.bandwidth_gbs, copy);
}

NvidiaGpuFacts H100Sxm() {
  // What the driver reports for an H100 SXM5 (an H200 has the same SMs and clock, a 6144-bit
  // HBM3e bus and 4.8 TB/s).
  NvidiaGpuFacts f;
  f.cc_major = 9, f.cc_minor = 0, f.sm_count = 132, f.clock_mhz = 1980, f.memory_clock_mhz = 2619;
  f.memory_bus_bits = 5120, f.l2_bytes = 50 << 20;
  return f;
}

TEST(NvidiaTheoreticalPeaksTest, GivenAnH100TheRatesAreAtLeastNvidiasDenseDatasheetPeaks) {
  TheoreticalPeaks p = NvidiaTheoreticalPeaks(H100Sxm());
  EXPECT_TRUE(p.basis["table_row"].get<bool>());
  // FP32 66.9 TFLOPS is quoted at the 1980 MHz boost clock; the tensor figures (TF32 494.7,
  // BF16 989.4, FP8 and INT8 1978.9 dense) at 1830 MHz, so the bound at 1980 MHz is above them.
  EXPECT_NEAR(Unit(p, "fp32 cuda cores")->gops, 66'900, 50);
  EXPECT_NEAR(Unit(p, "tensor tf32")->gops, 494'700 * 1980.0 / 1830, 500);
  EXPECT_NEAR(Unit(p, "tensor bf16")->gops, 989'400 * 1980.0 / 1830, 1000);
  EXPECT_NEAR(Unit(p, "tensor int8")->gops, 1'978'900 * 1980.0 / 1830, 2000);
  EXPECT_EQ(Unit(p, "tensor int4"), nullptr);  // Hopper has no int4 tensor math
  EXPECT_NEAR(p.bandwidth_gbs, 3352.3,
              0.1);  // 5120 / 8 x 2619 MHz x 2: the 3.35 TB/s datasheet figure
  EXPECT_EQ(p.cache_resident_bytes, 50 << 20);
  EXPECT_NE(p.bandwidth_source.find("dram"), std::string::npos);
}

TEST(NvidiaTheoreticalPeaksTest,
     GivenStrictFp32OnAnH100TheFloorUsesInt8TensorCoresAtThreeProducts) {
  TheoreticalPeaks p = NvidiaTheoreticalPeaks(H100Sxm());
  FlopCeiling strict = FastestUnit(p, kFp32Bits);
  EXPECT_EQ(strict.unit, "tensor int8");
  EXPECT_EQ(strict.products, 3);
  EXPECT_NEAR(strict.gflops, 132 * 1.98 * 8192 / 3, 1);  // 713.6 TFLOP/s
  // tf32x3 (what Triton's fp32 dots do) is slower than that, so it can never look impossible.
  EXPECT_GT(strict.gflops, Unit(p, "tensor tf32")->gops / 3);
  FlopCeiling half = FastestUnit(p, 7);  // a 1e-2 tolerance: one pass of 8-bit math
  EXPECT_EQ(half.products, 1);
  EXPECT_NEAR(half.gflops, 132 * 1.98 * 8192, 1);
}

TEST(NvidiaTheoreticalPeaksTest, GivenAnA100TheRatesMatchTheDatasheet) {
  NvidiaGpuFacts f;
  f.cc_major = 8, f.sm_count = 108, f.clock_mhz = 1410, f.memory_clock_mhz = 1593,
  f.memory_bus_bits = 5120;
  TheoreticalPeaks p = NvidiaTheoreticalPeaks(f);
  // Dense peaks: FP32 19.5, TF32 156, BF16 312, INT8 624 TOPS; 2039 GB/s (A100 80GB SXM).
  EXPECT_NEAR(Unit(p, "fp32 cuda cores")->gops, 19'500, 20);
  EXPECT_NEAR(Unit(p, "tensor tf32")->gops, 156'000, 200);
  EXPECT_NEAR(Unit(p, "tensor bf16")->gops, 312'000, 300);
  EXPECT_NEAR(Unit(p, "tensor int8")->gops, 624'000, 600);
  EXPECT_EQ(Unit(p, "tensor fp8"), nullptr);
  EXPECT_NEAR(p.bandwidth_gbs, 2039, 1);
}

TEST(NvidiaTheoreticalPeaksTest, GivenAnArchitectureNotInTheTableItExtrapolatesUpward) {
  bool exact = true;
  SmRates x = LookUpSmRates(99, 0, &exact);
  EXPECT_FALSE(exact);
  for (auto [major, minor] :
       {std::pair{7, 0}, {7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {12, 0}}) {
    SmRates r = LookUpSmRates(major, minor, &exact);
    EXPECT_TRUE(exact) << major << minor;
    EXPECT_GT(x.fp32, r.fp32);
    EXPECT_GT(x.int8, r.int8);
    EXPECT_GE(x.fp4, r.fp4);
  }
}

TEST(NvidiaTheoreticalPeaksTest, GivenNoMemoryAttributesTheBandwidthBoundIsThePorts) {
  NvidiaGpuFacts f = H100Sxm();
  f.memory_bus_bits = 0;
  f.memory_clock_mhz = 0;
  TheoreticalPeaks p = NvidiaTheoreticalPeaks(f);
  EXPECT_NEAR(p.bandwidth_gbs, 132 * 1.98 * 512, 1);
  EXPECT_EQ(p.cache_resident_bytes, 0);
  EXPECT_NE(p.bandwidth_source.find("ports"), std::string::npos);
}

TEST(TheoreticalPeaksJsonTest, GivenPeaksTheyRoundTripThroughJson) {
  TheoreticalPeaks p = NvidiaTheoreticalPeaks(H100Sxm());
  Result<TheoreticalPeaks> q = TheoreticalPeaksFromJson(TheoreticalPeaksToJson(p));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->units.size(), p.units.size());
  EXPECT_EQ(FastestUnit(*q, kFp32Bits).gflops, FastestUnit(p, kFp32Bits).gflops);
  EXPECT_EQ(q->bandwidth_gbs, p.bandwidth_gbs);
  EXPECT_EQ(q->cache_resident_bytes, p.cache_resident_bytes);
  EXPECT_FALSE(TheoreticalPeaksFromJson(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace kforge
