// Specifications of Problem::ToleranceFor, Bind and VariantSizes on problems built in code.
#include "kforge/problem.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using Sizes = std::map<std::string, int64_t>;

SizeParam Size(const std::string& name, int64_t value, int64_t min = 1, int64_t multiple_of = 1,
               int64_t quick = 0) {
  return SizeParam{name, value, min, multiple_of, quick};
}

TensorDecl Tensor(const std::string& name, std::vector<std::string> shape,
                  DType dtype = DType::kFloat32) {
  TensorDecl decl;
  decl.name = name;
  decl.shape = std::move(shape);
  decl.dtype = dtype;
  return decl;
}

// A softmax-like problem: x[rows, cols] -> y[rows, cols], rows quick 64, cols quick 100.
Problem RowsCols() {
  Problem problem;
  problem.name = "rows-cols";
  problem.sizes = {Size("rows", 1024, 1, 1, 64), Size("cols", 1024, 1, 1, 100)};
  problem.inputs = {Tensor("x", {"rows", "cols"})};
  problem.outputs = {Tensor("y", {"rows", "cols"}), Tensor("row_max", {"rows"})};
  problem.flops_expr = "5 * rows * cols";
  problem.bytes_expr = "8 * rows * cols";
  return problem;
}

// One size with the given rules, for VariantSizes.
Problem OneSize(int64_t value, int64_t min, int64_t multiple_of) {
  Problem problem;
  problem.sizes = {Size("n", value, min, multiple_of)};
  return problem;
}

int64_t VariantOf(int64_t value, int64_t min, int64_t multiple_of) {
  Problem problem = OneSize(value, min, multiple_of);
  return VariantSizes(problem, {{"n", value}}).at("n");
}

TEST(ToleranceForTest, GivenNoOverrideItUsesTheDtypeDefaults) {
  Problem problem;
  for (DType t : {DType::kFloat32, DType::kFloat64}) {
    Tolerance tol = problem.ToleranceFor(t);
    EXPECT_EQ(tol.atol, 1e-4);
    EXPECT_EQ(tol.rtol, 1e-4);
    EXPECT_EQ(tol.rms, 1e-4);
  }
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    Tolerance tol = problem.ToleranceFor(t);
    EXPECT_EQ(tol.atol, 1e-2);
    EXPECT_EQ(tol.rtol, 1e-2);
    EXPECT_EQ(tol.rms, 1e-2);
  }
  for (DType t : {DType::kInt32, DType::kInt64}) {
    Tolerance tol = problem.ToleranceFor(t);
    EXPECT_EQ(tol.atol, 0.0);
    EXPECT_EQ(tol.rtol, 0.0);
    EXPECT_EQ(tol.rms, 0.0);
  }
}

TEST(ToleranceForTest, GivenAnOverrideItUsesItForEveryDtype) {
  Problem problem;
  problem.has_tolerance_override = true;
  problem.tolerance_override = {1e-3, 2e-3, 3e-3};
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kInt32}) {
    Tolerance tol = problem.ToleranceFor(t);
    EXPECT_EQ(tol.atol, 1e-3);
    EXPECT_EQ(tol.rtol, 2e-3);
    EXPECT_EQ(tol.rms, 3e-3);
  }
}

TEST(BindTest, GivenNoOverridesItUsesTheDefaultsForShapesAndCosts) {
  Problem problem = RowsCols();
  Result<BoundProblem> bound = Bind(problem, {});
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_EQ(bound->problem, &problem);
  EXPECT_EQ(bound->sizes, (Sizes{{"rows", 1024}, {"cols", 1024}}));
  ASSERT_EQ(bound->inputs.size(), 1u);
  EXPECT_EQ(bound->inputs[0].name, "x");
  EXPECT_EQ(bound->inputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(bound->inputs[0].dims, (std::vector<int64_t>{1024, 1024}));
  ASSERT_EQ(bound->outputs.size(), 2u);
  EXPECT_EQ(bound->outputs[1].name, "row_max");
  EXPECT_EQ(bound->outputs[1].dims, (std::vector<int64_t>{1024}));
  EXPECT_EQ(bound->flops, 5.0 * 1024 * 1024);
  EXPECT_EQ(bound->bytes, 8.0 * 1024 * 1024);
}

TEST(BindTest, GivenOverridesItReplacesOnlyThoseSizes) {
  Result<BoundProblem> bound = Bind(RowsCols(), {{"cols", 7}});
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_EQ(bound->sizes, (Sizes{{"rows", 1024}, {"cols", 7}}));
  EXPECT_EQ(bound->inputs[0].dims, (std::vector<int64_t>{1024, 7}));
  EXPECT_EQ(bound->flops, 5.0 * 1024 * 7);
}

TEST(BindTest, GivenQuickItUsesQuickValuesAndOverridesStillWin) {
  Problem problem = RowsCols();
  problem.sizes.push_back(Size("depth", 3));  // no quick value: keeps 3
  problem.inputs[0].shape.push_back("depth");
  Result<BoundProblem> quick = Bind(problem, {}, /*quick=*/true);
  ASSERT_TRUE(quick.ok()) << quick.status().message();
  EXPECT_EQ(quick->sizes, (Sizes{{"rows", 64}, {"cols", 100}, {"depth", 3}}));
  EXPECT_EQ(quick->inputs[0].dims, (std::vector<int64_t>{64, 100, 3}));
  Result<BoundProblem> overridden = Bind(problem, {{"rows", 8}}, /*quick=*/true);
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(overridden->sizes.at("rows"), 8);
  EXPECT_EQ(overridden->sizes.at("cols"), 100);
}

TEST(BindTest, GivenAnUnknownSizeItListsTheProblemsSizes) {
  Result<BoundProblem> bound = Bind(RowsCols(), {{"foo", 3}});
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bound.status().message(), "unknown size 'foo'; this problem's sizes are: rows, cols");
  Problem no_sizes;
  EXPECT_EQ(Bind(no_sizes, {{"n", 3}}).status().message(),
            "unknown size 'n'; this problem has no sizes");
}

TEST(BindTest, GivenAValueBelowMinItSaysTheMinimum) {
  Result<BoundProblem> bound = Bind(RowsCols(), {{"rows", 0}});
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(), "size 'rows' must be >= 1 (got 0)");
}

TEST(BindTest, GivenAValueThatIsNotAMultipleItSuggestsLegalValues) {
  Problem problem = RowsCols();
  problem.sizes[1].multiple_of = 16;
  problem.sizes[1].min = 16;
  EXPECT_EQ(Bind(problem, {{"cols", 100}}).status().message(),
            "size 'cols' must be a multiple of 16 (got 100); try 96 or 112");
  EXPECT_EQ(Bind(problem, {{"cols", 20}}).status().message(),
            "size 'cols' must be a multiple of 16 (got 20); try 16 or 32");
  EXPECT_TRUE(Bind(problem, {{"cols", 32}}).ok());
}

TEST(BindTest, GivenAShapeThatDoesNotDivideExactlyItNamesTheTensorAndSizes) {
  Problem problem = RowsCols();
  problem.outputs[1].shape = {"rows / 2"};
  Result<BoundProblem> bound = Bind(problem, {{"rows", 7}});
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(),
            "output 'row_max' shape[0] at cols=1024, rows=7: 7 / 2 does not divide exactly in "
            "'rows / 2'; expected whole numbers in a shape (give the size a multiple_of)");
}

TEST(BindTest, GivenAShapeBelowOneItFails) {
  Problem problem = RowsCols();
  problem.inputs[0].shape = {"rows - 8", "cols"};
  Result<BoundProblem> bound = Bind(problem, {{"rows", 8}});
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(),
            "input 'x' shape[0] at cols=1024, rows=8: 'rows - 8' is 0; expected a dimension >= 1");
}

TEST(BindTest, GivenZeroFlopsItBindsButZeroBytesFails) {
  Problem problem = RowsCols();
  problem.flops_expr = "0";
  EXPECT_TRUE(Bind(problem, {}).ok());
  problem.bytes_expr = "rows - rows";
  Result<BoundProblem> bound = Bind(problem, {});
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().message(),
            "cost bytes at cols=1024, rows=1024: 'rows - rows' is 0; expected a value > 0");
}

TEST(BindTest, GivenAScalarTensorItHasNoDimensions) {
  Problem problem = RowsCols();
  problem.outputs[1].shape = {};
  Result<BoundProblem> bound = Bind(problem, {});
  ASSERT_TRUE(bound.ok());
  EXPECT_TRUE(bound->outputs[1].dims.empty());
  EXPECT_EQ(bound->outputs[1].numel(), 1);
}

TEST(VariantSizesTest, GivenNoConstraintsItTakesThreeQuartersAndMakesItOdd) {
  EXPECT_EQ(VariantOf(1024, 1, 1), 767);
  EXPECT_EQ(VariantOf(100, 1, 1), 75);
  EXPECT_EQ(VariantOf(4, 1, 1), 3);
  EXPECT_EQ(VariantOf(2, 1, 1), 1);
}

TEST(VariantSizesTest, GivenMultipleOfItTakesASmallerOddMultiple) {
  EXPECT_EQ(VariantOf(1024, 1, 16), 752);  // 47 * 16
  EXPECT_EQ(VariantOf(64, 16, 16), 48);    // 3 * 16
  EXPECT_EQ(VariantOf(32, 16, 16), 16);
  EXPECT_EQ(VariantOf(30, 1, 3), 21);  // 7 * 3: odd
}

TEST(VariantSizesTest, GivenAMinItNeverGoesBelowIt) {
  EXPECT_EQ(VariantOf(100, 90, 1), 91);  // 3/4 would be 75; 90 is even, so 91
  EXPECT_EQ(VariantOf(100, 99, 1), 99);
  EXPECT_EQ(VariantOf(128, 100, 1), 101);
  EXPECT_EQ(VariantOf(512, 500, 4), 500);  // 3/4 is 384; raised to 125 * 4, already odd
  EXPECT_EQ(VariantOf(512, 504, 4), 508);  // 126 * 4 is even, 125 * 4 < min, so 127 * 4
}

TEST(VariantSizesTest, GivenASizeAlreadyAtItsSmallestLegalValueItKeepsIt) {
  EXPECT_EQ(VariantOf(64, 64, 1), 64);
  EXPECT_EQ(VariantOf(1, 1, 1), 1);
  EXPECT_EQ(VariantOf(16, 1, 16), 16);
}

TEST(VariantSizesTest, ForEveryLegalValueTheVariantIsLegalAndSmallerWhenPossible) {
  for (int64_t m : {1, 2, 3, 8, 16}) {
    for (int64_t min : {1, 5, 16, 33}) {
      for (int64_t v = min; v <= 300; ++v) {
        if (v % m != 0) continue;
        int64_t variant = VariantOf(v, min, m);
        int64_t smallest_legal = (min + m - 1) / m * m;
        SCOPED_TRACE(testing::Message() << "v=" << v << " min=" << min << " m=" << m);
        EXPECT_GE(variant, min);
        EXPECT_EQ(variant % m, 0);
        if (v == smallest_legal) {
          EXPECT_EQ(variant, v);
        } else {
          EXPECT_LT(variant, v);
        }
      }
    }
  }
}

TEST(VariantSizesTest, GivenSeveralSizesItMovesEachFromTheGivenValues) {
  Problem problem = RowsCols();
  Sizes variant = VariantSizes(problem, {{"rows", 64}, {"cols", 100}, {"other", 5}});
  EXPECT_EQ(variant, (Sizes{{"rows", 47}, {"cols", 75}, {"other", 5}}));
  // Sizes missing from the map start from their defaults.
  EXPECT_EQ(VariantSizes(problem, {}), (Sizes{{"rows", 767}, {"cols", 767}}));
}

TEST(VariantSizesTest, GivenTheVariantOfTheDefaultsItBinds) {
  Problem problem = RowsCols();
  Result<BoundProblem> bound = Bind(problem, VariantSizes(problem, {}));
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_EQ(bound->inputs[0].dims, (std::vector<int64_t>{767, 767}));
}

}  // namespace
}  // namespace kforge
