// Specifications of the precision policies: names, the tolerance rule of each policy, and how a
// problem's declarations pick the policy of a run. The numeric case (a TF32 dot product against
// each rule) is in src/eval/compare_test.cc, beside CompareOutput.
#include "kforge/precision.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kforge/problem.h"

namespace kforge {
namespace {

const Tolerance kStrict{1e-4, 1e-4, 1e-4};

TEST(PrecisionPolicyTest, GivenEachNameItParsesBackToIt) {
  for (PrecisionPolicy p :
       {PrecisionPolicy::kStrict, PrecisionPolicy::kTf32, PrecisionPolicy::kBf16,
        PrecisionPolicy::kFp16, PrecisionPolicy::kKernelBench}) {
    Result<PrecisionPolicy> parsed = ParsePrecisionPolicy(PrecisionPolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
}

TEST(PrecisionPolicyTest, GivenAnUnknownNameTheErrorListsTheValidOnes) {
  Result<PrecisionPolicy> p = ParsePrecisionPolicy("TF32");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      p.status().message(),
      "unknown precision policy 'TF32'; expected one of strict, tf32, bf16, fp16, kernelbench");
}

TEST(PrecisionPolicyTest, GivenAListItSplitsCommasKeepsOrderAndDropsDuplicates) {
  Result<std::vector<PrecisionPolicy>> list =
      ParsePrecisionPolicies({"strict,kernelbench", "tf32", "strict"});
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(*list,
            (std::vector<PrecisionPolicy>{PrecisionPolicy::kStrict, PrecisionPolicy::kKernelBench,
                                          PrecisionPolicy::kTf32}));
  Result<std::vector<PrecisionPolicy>> bad = ParsePrecisionPolicies({"strict,"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown precision policy ''"), std::string::npos);
  EXPECT_FALSE(ParsePrecisionPolicies({}).ok());
}

TEST(PolicyToleranceTest, GivenStrictItIsTheProblemsOwnTolerance) {
  Tolerance t = PolicyTolerance(kStrict, PrecisionPolicy::kStrict);
  EXPECT_EQ(t.atol, 1e-4);
  EXPECT_EQ(t.rtol, 1e-4);
  EXPECT_EQ(t.rms, 1e-4);
  EXPECT_EQ(t.atol_rms, 0.0);
}

TEST(PolicyToleranceTest, GivenAReducedPolicyTheBoundsAreMultiplesOfItsUnitRoundoff) {
  struct Case {
    PrecisionPolicy policy;
    double u;
  } cases[] = {{PrecisionPolicy::kTf32, std::ldexp(1.0, -11)},
               {PrecisionPolicy::kFp16, std::ldexp(1.0, -11)},
               {PrecisionPolicy::kBf16, std::ldexp(1.0, -8)}};
  for (const Case& c : cases) {
    EXPECT_EQ(PolicyUnitRoundoff(c.policy), c.u);
    Tolerance t = PolicyTolerance(kStrict, c.policy);
    EXPECT_EQ(t.atol, 1e-4) << PrecisionPolicyName(c.policy);  // the absolute floor stays
    EXPECT_DOUBLE_EQ(t.rtol, 8 * c.u);
    EXPECT_DOUBLE_EQ(t.atol_rms, 8 * c.u);
    EXPECT_DOUBLE_EQ(t.rms, 4 * c.u);
  }
}

TEST(PolicyToleranceTest, GivenALooserStrictToleranceAReducedPolicyNeverTightensIt) {
  Tolerance t = PolicyTolerance({0.5, 0.1, 0.2}, PrecisionPolicy::kTf32);
  EXPECT_EQ(t.atol, 0.5);
  EXPECT_EQ(t.rtol, 0.1);
  EXPECT_EQ(t.rms, 0.2);
  EXPECT_EQ(PolicyTolerance({1e-4, 1e-4, 0.0}, PrecisionPolicy::kBf16).rms,
            0.0);  // no RMS bound stays none
}

TEST(PolicyToleranceTest, GivenKernelBenchItIsKernelBenchsFixedRule) {
  for (const Tolerance& strict : {kStrict, Tolerance{0.5, 0.5, 0.5}}) {
    Tolerance t = PolicyTolerance(strict, PrecisionPolicy::kKernelBench);
    EXPECT_EQ(t.atol, 1e-2);
    EXPECT_EQ(t.rtol, 1e-2);
    EXPECT_EQ(t.rms, 0.0);
    EXPECT_EQ(t.atol_rms, 0.0);
  }
}

TEST(PolicyToleranceTest, OnlyStrictRefusesFastMath) {
  EXPECT_FALSE(PolicyAllowsFastMath(PrecisionPolicy::kStrict));
  for (PrecisionPolicy p : {PrecisionPolicy::kTf32, PrecisionPolicy::kBf16, PrecisionPolicy::kFp16,
                            PrecisionPolicy::kKernelBench})
    EXPECT_TRUE(PolicyAllowsFastMath(p)) << PrecisionPolicyName(p);
}

TEST(PolicyToleranceTest, ItsDescriptionNamesEveryBound) {
  EXPECT_EQ(DescribeTolerance(PolicyTolerance(kStrict, PrecisionPolicy::kTf32)),
            "|out - ref| <= 0.0001 + 0.00391*RMS(ref) + 0.00391*|ref|; RMS(out - ref)/RMS(ref) <= "
            "0.00195");
  EXPECT_EQ(DescribeTolerance(PolicyTolerance(kStrict, PrecisionPolicy::kKernelBench)),
            "|out - ref| <= 0.01 + 0.01*|ref|");
}

TEST(ToleranceForPolicyTest, GivenIntegerOutputsEveryPolicyKeepsThemExact) {
  Problem problem;
  for (PrecisionPolicy p : {PrecisionPolicy::kTf32, PrecisionPolicy::kKernelBench}) {
    Tolerance t = problem.ToleranceFor(DType::kInt32, p);
    EXPECT_EQ(t.atol, 0.0);
    EXPECT_EQ(t.rtol, 0.0);
  }
  EXPECT_DOUBLE_EQ(problem.ToleranceFor(DType::kFloat32, PrecisionPolicy::kBf16).rtol,
                   8 * std::ldexp(1.0, -8));
  // bfloat16 outputs already have 1e-2; tf32's 8u is smaller, so 1e-2 stays.
  EXPECT_EQ(problem.ToleranceFor(DType::kBFloat16, PrecisionPolicy::kTf32).rtol, 1e-2);
}

TEST(ChoosePrecisionTest, GivenNoRequestItIsTheDeclaredPolicyElseStrict) {
  Problem problem;
  EXPECT_EQ(*problem.ChoosePrecision(std::nullopt), PrecisionPolicy::kStrict);
  problem.precision = PrecisionPolicy::kBf16;
  EXPECT_EQ(*problem.ChoosePrecision(std::nullopt), PrecisionPolicy::kBf16);
  EXPECT_EQ(*problem.ChoosePrecision(PrecisionPolicy::kKernelBench), PrecisionPolicy::kKernelBench);
}

TEST(ChoosePrecisionTest, GivenAPolicyTheProblemDoesNotAllowItSaysWhichItAllows) {
  Problem problem;
  problem.name = "mm";
  problem.precision_allowed = {PrecisionPolicy::kStrict, PrecisionPolicy::kTf32};
  EXPECT_EQ(*problem.ChoosePrecision(PrecisionPolicy::kTf32), PrecisionPolicy::kTf32);
  Result<PrecisionPolicy> bad = problem.ChoosePrecision(PrecisionPolicy::kBf16);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "problem 'mm' does not allow the precision policy 'bf16'; it allows: strict, tf32");
}

}  // namespace
}  // namespace kforge
