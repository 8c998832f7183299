// Unit specifications of the comparison rules and the static check.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "eval/compare.h"
#include "eval/static_check.h"

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
