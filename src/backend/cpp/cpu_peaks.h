// Host CPU peak measurements (kforge's own kernels, built -O3 -march=native -fopenmp).
#ifndef KFORGE_BACKEND_CPP_CPU_PEAKS_H_
#define KFORGE_BACKEND_CPP_CPU_PEAKS_H_

#include <cstddef>

namespace kforge {

// Best-of-several GB/s of a parallel copy of `bytes` bytes (read + write counted).
double MeasureCopyBandwidthGbs(size_t bytes);
// Best-of-several GFLOP/s of independent FMA chains on every core (2 flops per FMA).
double MeasureFmaGflops();

}  // namespace kforge

#endif  // KFORGE_BACKEND_CPP_CPU_PEAKS_H_
