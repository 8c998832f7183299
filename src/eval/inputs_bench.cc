// kforge_inputs_bench: how fast fresh inputs are drawn (every timed run draws its own). Prints
// numbers; asserts nothing.
//
//   kforge_inputs_bench [elements (default 2^21)] [repeats (default 9)]
//
// For 1, 2, 4 and 8 threads ($KFORGE_INPUT_THREADS) and each distribution, the median of
// `repeats` GenerateBytes calls of float32 elements, in ms and in ns per element.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "eval/inputs.h"

static volatile unsigned sink = 0;

int main(int argc, char** argv) {
  using namespace kforge;
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t{1} << 21;
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 9;
  TensorShape shape{"x", DType::kFloat32, {n}};
  std::printf("%lld float32 elements, median of %d draws\n", static_cast<long long>(n), repeats);
  std::printf("%-9s %7s %10s %12s\n", "kind", "threads", "ms", "ns/element");
  for (Distribution::Kind kind : {Distribution::Kind::kNormal, Distribution::Kind::kUniform}) {
    Distribution d;
    d.kind = kind;
    d.a = 0;
    d.b = 1;
    for (const char* threads : {"1", "2", "4", "8"}) {
      setenv("KFORGE_INPUT_THREADS", threads, 1);
      std::vector<double> ms;
      for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        std::string bytes = GenerateBytes(shape, d, "bench/x", static_cast<uint64_t>(r + 1), 1.0);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        sink = sink + static_cast<unsigned char>(bytes[bytes.size() / 2]);  // the bytes are used
      }
      std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
      const double median = ms[ms.size() / 2];
      std::printf("%-9s %7s %10.2f %12.2f\n", kind == Distribution::Kind::kNormal ? "normal" : "uniform", threads,
                  median, median * 1e6 / static_cast<double>(n));
    }
  }
  return 0;
}
