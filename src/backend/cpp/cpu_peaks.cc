// Peak kernels for the host CPU. Compiled with -O3 -march=native -fopenmp (see CMakeLists) so
// the FMA loop uses the widest vector unit this machine has.
#include "backend/cpp/cpu_peaks.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace kforge {

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Twelve independent vector accumulators: enough chains to hide FMA latency on two FMA units,
// and few enough to stay in registers (a spill halves the rate).
#if defined(__AVX512F__)
constexpr int kLanes = 16 * 12;
#else
constexpr int kLanes = 8 * 12;
#endif
constexpr long kIters = 1 << 22;

float FmaChains(float a, float b) {
  alignas(64) float acc[kLanes];
  for (int k = 0; k < kLanes; ++k) acc[k] = static_cast<float>(k) * 1e-3f;
  for (long it = 0; it < kIters; ++it) {
#pragma omp simd
    for (int k = 0; k < kLanes; ++k) acc[k] = acc[k] * a + b;
  }
  float sum = 0;
  for (int k = 0; k < kLanes; ++k) sum += acc[k];
  return sum;
}

}  // namespace

double MeasureCopyBandwidthGbs(size_t bytes) {
  size_t n = bytes / sizeof(double);
  double* src = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  double* dst = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < n; ++k) src[k] = dst[k] = static_cast<double>(k);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = Seconds();
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < n; ++k) dst[k] = src[k];
    double t = Seconds() - t0;
    best = std::max(best, 2.0 * n * sizeof(double) / t / 1e9);
  }
  // A read-only stream too: copies pay a read-for-ownership on the destination that kernels
  // which mostly read do not, so copy bandwidth alone understates what a reduction can reach.
  for (int rep = 0; rep < 5; ++rep) {
    double sum = 0;
    double t0 = Seconds();
    // Eight partial sums per thread: a single chain would measure add latency, not memory.
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (size_t k = 0; k < n / 8 * 8; k += 8) {
      double p[8];
      for (int j = 0; j < 8; ++j) p[j] = src[k + j];
      sum += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
    double t = Seconds() - t0;
    volatile double sink = sum;
    (void)sink;
    best = std::max(best, 1.0 * n * sizeof(double) / t / 1e9);
  }
  std::free(src);
  std::free(dst);
  return best;
}

double MeasureFmaGflops() {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    volatile float sink = 0;
    int threads = 1;
    double t0 = Seconds();
#pragma omp parallel reduction(+ : sink)
    {
#pragma omp single
      threads = omp_get_num_threads();
      sink = sink + FmaChains(0.999999f, 1e-7f);
    }
    double t = Seconds() - t0;
    best = std::max(best, 2.0 * kLanes * kIters * threads / t / 1e9);
  }
  return best;
}

}  // namespace kforge
