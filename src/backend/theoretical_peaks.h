// Theoretical device peaks: upper bounds on the arithmetic rate and the memory bandwidth that
// any kernel can reach on a device, derived from what the device is (ISA, cores, clocks,
// per-architecture unit rates), never from a timing. The speed-of-light gate divides a
// problem's work by them to get a time no correct implementation can beat
// (docs/evaluation.md, section 4), so every unknown is resolved upward: the largest clock,
// core count, unit count or vector width the device could have. A bound that is too high only
// weakens the gate; one that is too low calls honest kernels impossible.
//
// The pure functions take the facts as arguments so that tests can feed fixed ones; the
// Read* functions gather them on the running machine (worker side: they touch /proc and /sys
// only, no driver). Thread-safety: values and pure functions.
#ifndef KFORGE_BACKEND_THEORETICAL_PEAKS_H_
#define KFORGE_BACKEND_THEORETICAL_PEAKS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/status.h"

namespace kforge {

// One kind of arithmetic unit of a device, all of them together.
struct ComputeUnit {
  std::string name;  // "fp32 simd", "amx_int8", "tensor int8", ...
  double gops = 0;   // dense operations per second / 1e9; a multiply-add counts 2
  // Significand bits one operand keeps in this unit's format (implicit bit included):
  // fp32 24, tf32 and fp16 11, bf16 8, int8 7 (plus sign), fp8 e4m3 4, int4 3, fp4 e2m1 2.
  int precision_bits = 24;
};

struct TheoreticalPeaks {
  std::vector<ComputeUnit> units;
  double bandwidth_gbs = 0;      // bytes per second / 1e9 between memory and the compute units
  std::string bandwidth_source;  // which bound: "dram: ..." or "load/store ports: ..."
  // Bytes the device's caches could still hold when the timer stops (written outputs not yet
  // in memory): traffic up to this many bytes may never cross the bandwidth above. 0 when the
  // bandwidth bound covers cache traffic too (load/store ports).
  double cache_resident_bytes = 0;
  nlohmann::json basis = nlohmann::json::object();  // the facts used and where each came from
};

nlohmann::json TheoreticalPeaksToJson(const TheoreticalPeaks& p);
// Fails (kInvalidArgument) when `j` lacks the units or the bandwidth.
Result<TheoreticalPeaks> TheoreticalPeaksFromJson(const nlohmann::json& j);

// ---- CPUs ---------------------------------------------------------------------------------

// What the OS says about the host CPU.
struct CpuFacts {
  std::string cpuinfo;         // the text of /proc/cpuinfo (online CPUs only)
  double cpufreq_max_khz = 0;  // largest cpu*/cpufreq/cpuinfo_max_freq; 0 when there is none
  std::string cpufreq_driver;  // cpu0/cpufreq/scaling_driver ("intel_pstate", ...), or ""
};

// Reads /proc/cpuinfo and /sys/devices/system/cpu/cpu*/cpufreq/ of this machine.
CpuFacts ReadHostCpuFacts();

// Cores x max clock x per-core rate for each unit the ISA flags name, and the load/store-port
// bandwidth of all cores' L1 (a CPU offers no reliable DRAM figure; no kernel moves more bytes
// than its load and store instructions carry). Unknowns resolve upward:
//  - cores: physical cores from (physical id, core id) on bare metal; logical CPUs in a
//    virtual machine (the vCPU topology is not trusted) or when the ids are missing;
//  - clock: cpuinfo_max_freq from a driver that reports the boost clock (intel_pstate,
//    amd-pstate, cppc), else min(5 x nominal, 6.2 GHz) with the nominal clock from the model
//    name ("@ 2.30GHz") or another driver's maximum, else 6.2 GHz (the highest boost clock
//    any CPU ships with);
//  - per core and cycle: 2 FMA and 2 FP-add pipes of the widest vector (6 flops per fp32
//    lane), dot-product and matrix units (VNNI, AVX512-BF16/FP16, AMX) at their full rates,
//    4 loads and 2 stores of the widest vector;
//  - an ISA kforge does not model (Arm, RISC-V, ...): 512-bit vectors and an AMX-class
//    matrix unit.
TheoreticalPeaks CpuTheoreticalPeaks(const CpuFacts& facts);

// ---- NVIDIA GPUs --------------------------------------------------------------------------

// Driver attributes (CUDA, or OpenCL's cl_nv_device_attribute_query where the memory ones
// are missing: leave them 0).
struct NvidiaGpuFacts {
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  double clock_mhz = 0;         // maximum (boost) SM clock; 0 when unknown
  double memory_clock_mhz = 0;  // peak memory clock; 0 when unknown
  int memory_bus_bits = 0;      // 0 when unknown
  int64_t l2_bytes = 0;
};

// Dense operations per clock of one SM, per format (0: no such unit).
struct SmRates {
  int major = 0, minor = 0;
  const char* family = "";
  double fp32 = 0;                                                            // CUDA cores, FFMA
  double tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0, int8 = 0, int4 = 0, fp4 = 0;  // tensor cores
};

// The table row for sm_<major><minor>. An architecture not in the table gets twice the
// largest rate of any row per format (`*exact` false), an upward extrapolation.
SmRates LookUpSmRates(int major, int minor, bool* exact);

// SMs x max clock x per-SM rates; memory: bus width x memory clock x 2 (DDR), with the L2
// as cache-resident bytes; without memory attributes, 512 bytes per clock per SM (above
// any SM's L1 and shared-memory bandwidth). An unknown clock is taken as 3.5 GHz.
TheoreticalPeaks NvidiaTheoreticalPeaks(const NvidiaGpuFacts& facts);

// ---- Other accelerators -------------------------------------------------------------------

// An OpenCL GPU or accelerator kforge has no table for: per compute unit and clock, 512 fp32
// flops, 8192 16-bit and 16384 8-bit matrix operations, 32768 4-bit ones, and 512 bytes of
// loads and stores (above every GPU compute unit kforge knows of, NVIDIA, AMD and Intel).
TheoreticalPeaks GenericAcceleratorTheoreticalPeaks(int compute_units, double clock_mhz);

// ---- Choosing the unit --------------------------------------------------------------------

// How many products of `unit_bits`-bit operands a split-precision scheme needs to deliver
// `required_bits` of precision: 1 when the format is precise enough; otherwise each operand
// is split into k slices of unit_bits + 1 bits (the sign of a rounded remainder adds one) and
// the products i + j <= k + 1 of the slices are summed, k(k+1)/2 of them (3 for tf32x3 or
// bf16x3). Fewer products cannot keep the low bits of both operands.
int EmulationProducts(int unit_bits, int required_bits);

struct FlopCeiling {
  double gflops = 0;  // the unit's rate divided by its products
  std::string unit;   // its name
  int products = 1;
};

// The fastest unit for a result that needs `required_bits` of precision: the largest of
// gops / EmulationProducts over the units. Zero gflops when there are no units. The units may
// be theoretical (the gate's floor) or measured (the achievable floor: SOL%).
FlopCeiling FastestUnit(const std::vector<ComputeUnit>& units, int required_bits);
inline FlopCeiling FastestUnit(const TheoreticalPeaks& peaks, int required_bits) {
  return FastestUnit(peaks.units, required_bits);
}

}  // namespace kforge

#endif  // KFORGE_BACKEND_THEORETICAL_PEAKS_H_
