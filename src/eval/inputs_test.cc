// The input generator (eval/inputs.h) and its Python twin (python/kforge_inputs.py) draw the
// same values: the Python worker's child draws the fresh inputs of kforge problems' timed runs
// with the latter, and the orchestrator regenerates them with the former.
#include "eval/inputs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "eval/python_worker.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Case {
  DType dtype;
  Distribution dist;
  std::string key;
  uint64_t seed;
  double magnitude;
  int64_t n;
};

Distribution Dist(Distribution::Kind kind, double a, double b, bool positive = false) {
  Distribution d;
  d.kind = kind;
  d.a = a;
  d.b = b;
  d.positive = positive;
  return d;
}

std::vector<Case> Cases() {
  using K = Distribution::Kind;
  const uint64_t big = (1ull << 63) - 1;
  return {
      {DType::kFloat32, Dist(K::kNormal, 0, 1), "scale/x", 0, 1.0, 5000},
      {DType::kFloat32, Dist(K::kNormal, 0, 1), "scale/x", big, 1.0, 3001},  // an odd count: a lone cos
      {DType::kFloat32, Dist(K::kNormal, 0, 1), "big/x", 11, 1.0, (1 << 20) + 70001},  // past both chunk sizes
      {DType::kFloat32, Dist(K::kNormal, 0.5, 2, true), "p/var", 1234567890123ull, 1000.0, 3000},
      {DType::kFloat64, Dist(K::kNormal, -1, 0.25), "p/w", 7, 0.001, 3000},
      {DType::kFloat16, Dist(K::kNormal, 0, 1), "p/h", 99, 1.0, 3000},
      {DType::kBFloat16, Dist(K::kUniform, -3, 3), "p/bf", 5, 1.0, 3000},
      {DType::kFloat32, Dist(K::kUniform, 0, 1), "p/u", 8, 1000.0, 3000},
      {DType::kInt32, Dist(K::kIntegers, -5, 17), "p/i", 3, 1000.0, 3000},
      {DType::kInt64, Dist(K::kIntegers, 0, 1000000), "p/idx", 42, 1.0, 3000},
  };
}

const char* KindName(Distribution::Kind k) {
  return k == Distribution::Kind::kNormal    ? "normal"
         : k == Distribution::Kind::kUniform ? "uniform"
                                             : "integers";
}

// Runs kforge_inputs.py dump on every case (with `torch_device`, drawn by PyTorch there) and
// compares its bytes with GenerateTensor's.
void ExpectPythonDrawsWhatGenerateTensorDraws(const std::string& torch_device) {
  fs::path dir = MakeTempDir("inputs-test").value();
  json cases = json::array();
  for (const Case& c : Cases())
    cases.push_back({{"gen",
                      {{"kind", KindName(c.dist.kind)},
                       {"a", c.dist.a},
                       {"b", c.dist.b},
                       {"positive", c.dist.positive},
                       {"key_hash", KeyHash(c.key)}}},
                     {"dtype", DTypeName(c.dtype)},
                     {"dims", {c.n}},
                     {"seed", c.seed},
                     {"magnitude", c.magnitude}});
  const std::string text = cases.dump();
  ASSERT_TRUE(WriteFile(dir / "cases.json", text.data(), text.size()).ok());
  const std::string cmd =
      PythonInterpreter() + " " + (DataDir() / "python" / "kforge_inputs.py").string() + " dump " +
      (dir / "cases.json").string() + " " + dir.string() + (torch_device.empty() ? "" : " --torch " + torch_device) +
      " 2>" + (dir / "err").string();
  if (std::system(cmd.c_str()) != 0) {
    Result<std::string> err = ReadFile(dir / "err");
    if (err.ok() && (err->find("No module named 'numpy'") != std::string::npos ||
                     err->find("No module named 'torch'") != std::string::npos ||
                     err->find("not found") != std::string::npos))
      GTEST_SKIP() << PythonInterpreter()
                   << " has no numpy (or PyTorch) or is missing (scripts/setup installs the worker's Python): "
                   << *err;
    FAIL() << cmd << ":\n" << (err.ok() ? *err : "");
  }
  int k = 0;
  for (const Case& c : Cases()) {
    TensorShape shape{"t", c.dtype, {c.n}};
    HostTensor cpp = GenerateTensor(shape, c.dist, c.key, c.seed, c.magnitude);
    Result<std::string> py = ReadFile(dir / (std::to_string(k++) + ".bin"));
    ASSERT_TRUE(py.ok()) << py.status().ToString();
    ASSERT_EQ(py->size(), cpp.bytes().size()) << c.key;
    // Byte for byte: every operation of the generator rounds once, in both languages.
    size_t differ = 0, first = 0;
    const size_t width = DTypeSize(c.dtype);
    const std::vector<double> values = cpp.Values();
    for (size_t i = 0; i < values.size(); ++i)
      if (std::memcmp(cpp.bytes().data() + i * width, py->data() + i * width, width) != 0 && differ++ == 0) first = i;
    if (differ) {
      double a = values[first], b = 0;
      ToDouble(c.dtype, py->data() + first * width, 1, &b);
      ADD_FAILURE() << c.key << " (" << DTypeName(c.dtype) << (torch_device.empty() ? "" : ", PyTorch on " + torch_device)
                    << "): " << differ << " elements differ, the first " << first << ": C++ " << a << ", Python " << b;
    }
  }
  fs::remove_all(dir);
}

TEST(InputsTest, GivenTheSameKeyHashAndSeedPythonDrawsWhatGenerateTensorDraws) {
  ExpectPythonDrawsWhatGenerateTensorDraws("");
}

// The child draws a timed run's inputs with PyTorch where they live (torch_values): on the CPU
// here, on the GPU where KFORGE_TORCH_DEVICE says (scripts/gpu-check).
TEST(InputsTest, GivenTheSameKeyHashAndSeedPyTorchDrawsWhatGenerateTensorDraws) {
  const char* device = std::getenv("KFORGE_TORCH_DEVICE");
  ExpectPythonDrawsWhatGenerateTensorDraws(device && *device ? device : "cpu");
}

// The polynomial Box-Muller is a normal distribution: moments, tails and the share within one
// standard deviation of a million draws, each well inside what chance allows.
TEST(InputsTest, GivenANormalDistributionTheDrawsHaveItsMomentsAndTails) {
  const int64_t n = 1 << 20;
  TensorShape shape{"x", DType::kFloat64, {n}};
  HostTensor t = GenerateTensor(shape, Dist(Distribution::Kind::kNormal, 0, 1), "stats/x", 3, 1.0);
  double sum = 0, sq = 0, quad = 0;
  int64_t within1 = 0, beyond4 = 0;
  const std::vector<double> values = t.Values();
  for (double x : values) {
    sum += x, sq += x * x, quad += x * x * x * x;
    within1 += std::fabs(x) < 1;
    beyond4 += std::fabs(x) > 4;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0, 0.005);
  EXPECT_NEAR(var, 1, 0.01);
  EXPECT_NEAR(quad / n, 3, 0.05);                                      // kurtosis of a normal
  EXPECT_NEAR(static_cast<double>(within1) / n, 0.682689, 0.003);
  EXPECT_NEAR(static_cast<double>(beyond4), 6.334e-5 * n, 25);        // about 66 expected
  double lo = 0, hi = 0;
  for (double x : values) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_LT(lo, -4);
  EXPECT_GT(hi, 4);
}

TEST(InputsTest, GivenOneKeyDifferentSeedsDrawDifferentValuesAndTheSameSeedTheSame) {
  TensorShape shape{"x", DType::kFloat32, {256}};
  Distribution d;
  HostTensor a = GenerateTensor(shape, d, "scale/x", 1, 1.0),
             b = GenerateTensor(shape, d, "scale/x", 2, 1.0);
  HostTensor again = GenerateTensor(shape, d, "scale/x", 1, 1.0),
             other = GenerateTensor(shape, d, "scale/y", 1, 1.0);
  EXPECT_NE(a.bytes(), b.bytes());
  EXPECT_NE(a.bytes(), other.bytes());
  EXPECT_EQ(a.bytes(), again.bytes());
}

// The threads split a tensor by chunks of 2^16 elements; an odd count with a partial last
// chunk, every kind and two widths come out byte for byte as one thread draws them.
TEST(InputsTest, GivenAnyNumberOfThreadsTheBytesAreTheSame) {
  const int64_t n = 5 * (1 << 16) + 12345;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (Distribution::Kind kind : {Distribution::Kind::kNormal, Distribution::Kind::kUniform, Distribution::Kind::kIntegers}) {
      TensorShape shape{"x", dtype, {n}};
      const Distribution d = Dist(kind, kind == Distribution::Kind::kIntegers ? -3 : 0, kind == Distribution::Kind::kIntegers ? 9 : 1);
      setenv("KFORGE_INPUT_THREADS", "1", 1);
      const std::string one = GenerateBytes(shape, d, "threads/x", 7, 1.5);
      for (const char* threads : {"2", "3", "8"}) {
        setenv("KFORGE_INPUT_THREADS", threads, 1);
        EXPECT_EQ(GenerateBytes(shape, d, "threads/x", 7, 1.5), one) << threads << " threads";
      }
      unsetenv("KFORGE_INPUT_THREADS");
    }
  }
}

}  // namespace
}  // namespace kforge
