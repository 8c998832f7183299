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
      {DType::kFloat32, Dist(K::kNormal, 0, 1), "scale/x", big, 1.0, 3000},
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

// Integers equal; narrower floats at most one unit in the last place of the dtype apart (a
// last-ulp difference of ln or cos moves an element only when it sits on a rounding boundary);
// float64 within a few ulps of the distribution's scale, since a + b * normal may cancel and so
// magnify the last-ulp difference of the normal relative to the element.
bool Close(const Case& c, const HostTensor& cpp, const std::string& py, size_t i,
           std::string* why) {
  const DType t = c.dtype;
  double a = cpp.values[i], b = 0;
  ToDouble(t, py.data() + i * DTypeSize(t), 1, &b);
  if (!IsFloating(t)) {
    if (a == b) return true;
  } else if (t == DType::kFloat64) {
    const double scale = (std::fabs(c.dist.a) + 8 * std::fabs(c.dist.b)) * c.magnitude;
    if (std::fabs(a - b) <= 8 * std::ldexp(scale, -52)) return true;
  } else {
    const int mant = t == DType::kFloat32 ? 23 : t == DType::kFloat16 ? 10 : 7;
    const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(a), 1e-30)) - mant);
    if (std::fabs(a - b) <= ulp) return true;
  }
  char text[128];
  std::snprintf(text, sizeof(text), "element %zu: C++ %.17g, Python %.17g", i, a, b);
  *why = text;
  return false;
}

TEST(InputsTest, GivenTheSameKeyHashAndSeedPythonDrawsWhatGenerateTensorDraws) {
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
      (dir / "cases.json").string() + " " + dir.string() + " 2>" + (dir / "err").string();
  if (std::system(cmd.c_str()) != 0) {
    Result<std::string> err = ReadFile(dir / "err");
    if (err.ok() && (err->find("No module named 'numpy'") != std::string::npos ||
                     err->find("not found") != std::string::npos))
      GTEST_SKIP() << PythonInterpreter()
                   << " has no numpy or is missing (scripts/setup installs the worker's Python): "
                   << *err;
    FAIL() << cmd << ":\n" << (err.ok() ? *err : "");
  }
  int k = 0;
  for (const Case& c : Cases()) {
    TensorShape shape{"t", c.dtype, {c.n}};
    HostTensor cpp = GenerateTensor(shape, c.dist, c.key, c.seed, c.magnitude);
    Result<std::string> py = ReadFile(dir / (std::to_string(k++) + ".bin"));
    ASSERT_TRUE(py.ok()) << py.status().ToString();
    ASSERT_EQ(py->size(), cpp.bytes.size()) << c.key;
    size_t differ = 0;
    for (size_t i = 0; i < cpp.values.size(); ++i) {
      std::string why;
      if (!Close(c, cpp, *py, i, &why))
        ADD_FAILURE() << c.key << " (" << DTypeName(c.dtype) << "): " << why;
      differ += std::memcmp(cpp.bytes.data() + i * DTypeSize(c.dtype),
                            py->data() + i * DTypeSize(c.dtype), DTypeSize(c.dtype)) != 0;
    }
    // ln and cos may differ in a float64's last ulp; after a cast to a narrower type that
    // changes an element only when it sits on a rounding boundary: rarely.
    if (c.dtype != DType::kFloat64) EXPECT_LE(differ, cpp.values.size() / 100 + 1) << c.key;
  }
  fs::remove_all(dir);
}

TEST(InputsTest, GivenOneKeyDifferentSeedsDrawDifferentValuesAndTheSameSeedTheSame) {
  TensorShape shape{"x", DType::kFloat32, {256}};
  Distribution d;
  HostTensor a = GenerateTensor(shape, d, "scale/x", 1, 1.0),
             b = GenerateTensor(shape, d, "scale/x", 2, 1.0);
  HostTensor again = GenerateTensor(shape, d, "scale/x", 1, 1.0),
             other = GenerateTensor(shape, d, "scale/y", 1, 1.0);
  EXPECT_NE(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, other.bytes);
  EXPECT_EQ(a.bytes, again.bytes);
}

}  // namespace
}  // namespace kforge
