// Unit specifications of the comparison rules and the static check.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "eval/compare.h"
#include "eval/static_check.h"
#include "kforge/problem.h"

namespace kforge {
namespace {

std::string F32(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}
TensorShape Shape(int64_t n) { return {"y", DType::kFloat32, {n}}; }
const Tolerance kTol{1e-4, 1e-4, 1e-4};

TEST(CompareTest, GivenEqualValuesItPasses) {
  Comparison c = CompareOutput(Shape(3), F32({1, 2, 3}), {1, 2, 3}, kTol);
  EXPECT_TRUE(c.pass);
  EXPECT_EQ(c.max_abs, 0);
}

TEST(CompareTest, GivenOneValueOutsideToleranceItReportsIndexAndCoords) {
  TensorShape s{"y", DType::kFloat32, {2, 2}};
  Comparison c = CompareOutput(s, F32({1, 2, 3, 4.01f}), {1, 2, 3, 4}, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.bad_count, 1);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].index, 3);
  EXPECT_EQ(c.first[0].coords, (std::vector<int64_t>{1, 1}));
}

TEST(CompareTest, GivenAnOutputShorterThanItsShapeItFailsWithoutReadingPastIt) {
  Comparison c = CompareOutput(Shape(3), F32({1, 2}), {1, 2, 3}, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_NE(c.reason.find("8 bytes, 12 expected"), std::string::npos) << c.reason;
}

// The comparison widens the output a chunk at a time: an output of several chunks, with errors
// in the first, a middle and the last one, reports them in order, and the largest relative
// error is the one at its own element.
TEST(CompareTest, GivenErrorsAcrossChunksTheyAreFoundInOrderWithTheLargestRelativeError) {
  const int64_t n = 3 * 4096 + 17;
  std::vector<float> got(n);
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) got[i] = static_cast<float>(want[i] = 1.0 + static_cast<double>(i % 7));
  got[5] = 1.5f * static_cast<float>(want[5]);          // relative error 0.5
  got[4096 + 3] = static_cast<float>(want[4096 + 3]) + 0.01f;
  got[n - 1] = 3.0f * static_cast<float>(want[n - 1]);  // relative error 2, the largest
  Comparison c = CompareOutput(Shape(n), F32(got), want, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.bad_count, 3);
  ASSERT_EQ(c.first.size(), 3u);
  EXPECT_EQ(c.first[0].index, 5);
  EXPECT_EQ(c.first[1].index, 4096 + 3);
  EXPECT_EQ(c.first[2].index, n - 1);
  EXPECT_NEAR(c.max_rel, 2.0, 1e-9);
  EXPECT_NEAR(c.max_abs, 2.0 * want[n - 1], 1e-6);
}

TEST(CompareTest, GivenNanWhereTheReferenceIsFiniteItCountsItAsUnwritten) {
  Comparison c = CompareOutput(Shape(2), F32({1, NAN}), {1, 2}, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_NE(c.reason.find("poison"), std::string::npos);
}

TEST(CompareTest, GivenInfWhereTheReferenceIsFiniteItFails) {
  Comparison c = CompareOutput(Shape(1), F32({INFINITY}), {1e30}, kTol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.nonfinite, 1);
}

TEST(CompareTest, GivenZerosForTinyOutputsTheElementwiseTestPassesButRmsFails) {
  Comparison c = CompareOutput(Shape(3), F32({0, 0, 0}), {1e-5, -2e-5, 3e-5}, kTol);
  EXPECT_EQ(c.bad_count, 0);
  EXPECT_FALSE(c.pass);
  EXPECT_NE(c.reason.find("RMS"), std::string::npos);
}

TEST(CompareTest, GivenATinyReferenceItIsDegenerate) {
  std::string why;
  EXPECT_TRUE(IsDegenerate({1e-6, 2e-6, -1e-6}, kTol, &why));
  EXPECT_TRUE(IsDegenerate({5, 5, 5, 5}, kTol, &why));
  EXPECT_NE(why.find("constant"), std::string::npos);
  EXPECT_FALSE(IsDegenerate({1, -2, 3}, kTol, &why));
}

TEST(CompareTest, GivenAnAtolInUnitsOfTheReferenceRmsItScalesWithTheOutput) {
  Tolerance tol{0, 0, 0, 0.01};  // |out - ref| <= 0.01 * RMS(ref)
  // RMS of {3, -4, 0, 0} is 2.5, so errors up to 0.025 pass, whatever the element's own size.
  EXPECT_TRUE(CompareOutput(Shape(4), F32({3, -4, 0.02f, -0.02f}), {3, -4, 0, 0}, tol).pass);
  Comparison c = CompareOutput(Shape(4), F32({3, -4, 0.03f, 0}), {3, -4, 0, 0}, tol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.bad_count, 1);
  EXPECT_NE(c.reason.find("atol_rms*RMS(ref)"), std::string::npos) << c.reason;
}

// --- A long reduction in reduced precision against each policy's rule. ----------------------

// Rounds to `bits` explicit mantissa bits, to nearest even: TF32 keeps 10, bfloat16 7.
float RoundMantissa(float x, int bits) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const int drop = 23 - bits;
  if (drop == 0) return x;
  u = (u + ((1u << (drop - 1)) - 1) + ((u >> drop) & 1)) & ~((1u << drop) - 1);
  std::memcpy(&x, &u, 4);
  return x;
}

// y[r] = sum_k a[r][k] * b[k] with normal inputs (random signs, as torch.randn): the reference in
// float64 from the float32 inputs, the candidate with its operands rounded to `bits` mantissa
// bits (23 = float32) and float32 accumulation, as TF32 and bf16 tensor cores do.
struct DotCase {
  std::vector<double> ref;
  std::vector<float> got;
};
DotCase LongDot(int rows, int k, int bits) {
  std::mt19937_64 rng(42);
  auto normal = [&] {  // Box-Muller on the fully specified engine: the same numbers everywhere
    double u1 = (rng() >> 11) * 0x1.0p-53 + 0x1.0p-54, u2 = (rng() >> 11) * 0x1.0p-53;
    return static_cast<float>(std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
  };
  std::vector<float> b(k);
  for (float& v : b) v = normal();
  DotCase out;
  for (int r = 0; r < rows; ++r) {
    double exact = 0;
    float acc = 0;
    for (int i = 0; i < k; ++i) {
      float a = normal();
      exact += static_cast<double>(a) * b[i];
      acc += RoundMantissa(a, bits) * RoundMantissa(b[i], bits);
    }
    out.ref.push_back(exact);
    out.got.push_back(acc);
  }
  return out;
}

Comparison Judge(const DotCase& d, PrecisionPolicy policy) {
  Problem problem;  // no [tolerance]: the float32 defaults under strict
  Tolerance tol = problem.ToleranceFor(DType::kFloat32, policy);
  Comparison c = CompareOutput(Shape(static_cast<int64_t>(d.ref.size())), F32(d.got), d.ref, tol);
  std::printf("  %-11s max_abs %.3g rms_rel %.3g (ref RMS %.3g) bad %lld of %zu: %s\n",
              PrecisionPolicyName(policy), c.max_abs, c.rms_rel, c.ref_rms,
              static_cast<long long>(c.bad_count), d.ref.size(), DescribeTolerance(tol).c_str());
  return c;
}

constexpr int kRows = 512, kK = 4096;

TEST(PrecisionRuleTest, GivenFloat32MathAK4096DotPassesStrict) {
  DotCase d = LongDot(kRows, kK, 23);
  EXPECT_TRUE(Judge(d, PrecisionPolicy::kStrict).pass);
}

TEST(PrecisionRuleTest, GivenTf32OperandsAK4096DotFailsStrictAndPassesTf32) {
  DotCase d = LongDot(kRows, kK, 10);
  Comparison strict = Judge(d, PrecisionPolicy::kStrict);
  EXPECT_FALSE(strict.pass);
  EXPECT_GT(strict.bad_count, kRows / 4) << "most outputs miss the float32 tolerance, not a few";
  EXPECT_TRUE(Judge(d, PrecisionPolicy::kTf32).pass);
  EXPECT_TRUE(Judge(d, PrecisionPolicy::kFp16).pass);  // the same 10-bit operands
  EXPECT_TRUE(Judge(d, PrecisionPolicy::kBf16).pass);
  // KernelBench's fixed 1e-2 is not scale-aware: outputs near zero (cancelling sums) miss it.
  EXPECT_FALSE(Judge(d, PrecisionPolicy::kKernelBench).pass);
}

TEST(PrecisionRuleTest, GivenBf16OperandsAK4096DotFailsTf32AndPassesBf16) {
  DotCase d = LongDot(kRows, kK, 7);
  EXPECT_FALSE(Judge(d, PrecisionPolicy::kStrict).pass);
  EXPECT_FALSE(Judge(d, PrecisionPolicy::kTf32).pass);
  EXPECT_TRUE(Judge(d, PrecisionPolicy::kBf16).pass);
  Judge(d, PrecisionPolicy::kKernelBench);  // printed for comparison
}

TEST(PrecisionRuleTest, GivenAMagnitudeFourTrialTheReducedRulesScaleWithTheOutput) {
  DotCase d = LongDot(kRows, kK, 10);
  for (double& v : d.ref) v *= 16;  // both operands x4 (exact in binary), as in magnitude-4 trials
  for (float& v : d.got) v *= 16;
  EXPECT_FALSE(Judge(d, PrecisionPolicy::kStrict).pass);
  EXPECT_TRUE(Judge(d, PrecisionPolicy::kTf32).pass);
}

TEST(StaticCheckTest, GivenCommentsTheyAreIgnoredButCodeIsNot) {
  std::vector<DenyRule> rules = {{R"(\bsystem\s*\()", "starts processes"}};
  EXPECT_TRUE(StaticCheck("// system(\"x\")\n/* system( */ int a;", rules).empty());
  std::vector<std::string> f = StaticCheck("int a;\n\n  system(\"rm\");", rules);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].find("line 3"), std::string::npos);
}

TEST(StaticCheckTest, GivenTheCppRulesTheyCatchThreadsClocksAndFastMath) {
  const auto& rules = FindBackend("cpp")->deny;
  EXPECT_FALSE(StaticCheck("std::thread t(f);", rules).empty());
  EXPECT_FALSE(StaticCheck("auto t = std::chrono::steady_clock::now();", rules).empty());
  EXPECT_FALSE(StaticCheck("#pragma GCC optimize(\"fast-math\")", rules).empty());
  EXPECT_TRUE(StaticCheck("#pragma omp parallel for\nfor (int i = 0; i < n; ++i) y[i] = x[i];", rules).empty());
}

TEST(StaticCheckTest, GivenTheOpenClRulesTheyRefuseOwnQueues) {
  const auto& rules = FindBackend("opencl")->deny;
  EXPECT_FALSE(StaticCheck("q = clCreateCommandQueueWithProperties(c, d, 0, &e);", rules).empty());
  EXPECT_TRUE(StaticCheck("clEnqueueNDRangeKernel(a->queue, k, 1, 0, &g, 0, 0, 0, 0);", rules).empty());
}

}  // namespace
}  // namespace kforge
