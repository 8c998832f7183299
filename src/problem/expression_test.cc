#include "problem/expression.h"

#include <gtest/gtest.h>

#include "kforge/problem.h"

namespace kforge {
namespace {

using Vars = std::map<std::string, int64_t>;

double Eval(const std::string& expr, const Vars& vars = {}) {
  Result<double> value = EvalExpression(expr, vars);
  EXPECT_TRUE(value.ok()) << expr << ": " << value.status().message();
  return value.ok() ? *value : -999.0;
}

std::string EvalError(const std::string& expr, const Vars& vars = {}) {
  Result<double> value = EvalExpression(expr, vars);
  EXPECT_FALSE(value.ok()) << expr << " evaluated to " << (value.ok() ? *value : 0.0);
  return value.ok() ? "" : value.status().message();
}

TEST(EvalExpressionTest, GivenNumbersItEvaluatesIntegerAndFloatLiterals) {
  EXPECT_EQ(Eval("42"), 42.0);
  EXPECT_EQ(Eval("2.5"), 2.5);
  EXPECT_EQ(Eval("1e-5"), 1e-5);
  EXPECT_EQ(Eval("2.5E3"), 2500.0);
  EXPECT_EQ(Eval("1e+2"), 100.0);
  EXPECT_EQ(Eval(".5"), 0.5);
  EXPECT_EQ(Eval("  7  "), 7.0);
}

TEST(EvalExpressionTest, GivenOperatorsItAppliesPrecedenceAndLeftAssociativity) {
  EXPECT_EQ(Eval("2 + 3 * 4"), 14.0);
  EXPECT_EQ(Eval("(2 + 3) * 4"), 20.0);
  EXPECT_EQ(Eval("1 - 2 - 3"), -4.0);
  EXPECT_EQ(Eval("16 / 4 / 2"), 2.0);
  EXPECT_EQ(Eval("2*3+4*5"), 26.0);
  EXPECT_EQ(Eval("((1))"), 1.0);
}

TEST(EvalExpressionTest, GivenUnaryMinusItNegates) {
  EXPECT_EQ(Eval("-3"), -3.0);
  EXPECT_EQ(Eval("2 - -3"), 5.0);
  EXPECT_EQ(Eval("--4"), 4.0);
  EXPECT_EQ(Eval("-(1 + 2) * 2"), -6.0);
}

TEST(EvalExpressionTest, GivenDivisionItDividesInFloatingPoint) {
  EXPECT_EQ(Eval("10 / 4"), 2.5);
  EXPECT_DOUBLE_EQ(Eval("1 / 3"), 1.0 / 3.0);
}

TEST(EvalExpressionTest, GivenNamesItSubstitutesTheirValues) {
  Vars vars = {{"rows", 64}, {"cols", 100}, {"n_2", 3}};
  EXPECT_EQ(Eval("5 * rows * cols", vars), 32000.0);
  EXPECT_EQ(Eval("rows/cols", vars), 0.64);
  EXPECT_EQ(Eval("n_2*n_2", vars), 9.0);
}

TEST(EvalExpressionTest, GivenAnUnknownNameItNamesItAndTheKnownOnes) {
  EXPECT_EQ(EvalError("2*x", {{"n", 4}, {"m", 2}}),
            "unknown name 'x' in '2*x'; expected one of: m, n");
  EXPECT_EQ(EvalError("2*x"),
            "unknown name 'x' in '2*x'; expected numbers only (no names are "
            "defined)");
}

TEST(EvalExpressionTest, GivenTrailingTextItPointsAtTheColumn) {
  EXPECT_EQ(EvalError("2 3"),
            "unexpected '3' at column 3 in '2 3'; expected an operator (+ - * /) or the end");
  EXPECT_EQ(EvalError("(1 + 2))"),
            "unexpected ')' at column 8 in '(1 + 2))'; expected an operator (+ - * /) or the end");
  EXPECT_EQ(EvalError("n junk", {{"n", 1}}),
            "unexpected 'j' at column 3 in 'n junk'; expected an operator (+ - * /) or the end");
}

TEST(EvalExpressionTest, GivenAnIncompleteExpressionItSaysWhatWasExpected) {
  EXPECT_EQ(EvalError(""), "empty expression; expected a number, a name or '('");
  EXPECT_EQ(EvalError("   "), "empty expression; expected a number, a name or '('");
  EXPECT_EQ(EvalError("2 *"), "unexpected end of '2 *'; expected a number, a name or '('");
  EXPECT_EQ(EvalError("(1 + 2"),
            "unexpected end of '(1 + 2'; expected ')' or an operator (+ - * /)");
  EXPECT_EQ(EvalError("3 $ 4"),
            "unexpected '$' at column 3 in '3 $ 4'; expected an operator (+ - * /) or the end");
  EXPECT_EQ(EvalError("* 2"),
            "unexpected '*' at column 1 in '* 2'; expected a number, a name or '('");
  EXPECT_EQ(EvalError("1e"), "unexpected end of '1e'; expected exponent digits");
  EXPECT_EQ(EvalError("."), "unexpected '.' at column 1 in '.'; expected a number, a name or '('");
}

TEST(EvalExpressionTest, GivenDivisionByZeroItFails) {
  EXPECT_EQ(EvalError("1 / (n - n)", {{"n", 3}}),
            "division by zero in '1 / (n - n)'; expected a divisor that is not 0");
}

TEST(EvalExpressionTest, GivenAnOverflowingResultItFails) {
  EXPECT_EQ(EvalError("1e308 * 10"), "'1e308 * 10' overflows; expected a finite value");
}

TEST(EvalExpressionTest, GivenDeeplyNestedParenthesesItFailsInsteadOfOverflowingTheStack) {
  std::string deep = std::string(100, '(') + "1" + std::string(100, ')');
  EXPECT_NE(EvalError(deep).find("parentheses nest too deeply"), std::string::npos);
  std::string ok = std::string(60, '(') + "1" + std::string(60, ')');
  EXPECT_EQ(Eval(ok), 1.0);
}

TEST(EvalIntegerExpressionTest, GivenExactArithmeticItReturnsTheInteger) {
  Result<int64_t> value = EvalIntegerExpression("rows / 2 * 3 - 1", {{"rows", 64}});
  ASSERT_TRUE(value.ok()) << value.status().message();
  EXPECT_EQ(*value, 95);
}

TEST(EvalIntegerExpressionTest, GivenADivisionWithARemainderItSaysToUseMultipleOf) {
  Result<int64_t> value = EvalIntegerExpression("rows/2", {{"rows", 767}});
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(),
            "767 / 2 does not divide exactly in 'rows/2'; expected whole numbers in a shape (give "
            "the size a multiple_of)");
}

TEST(EvalIntegerExpressionTest, GivenAFloatLiteralItFails) {
  Result<int64_t> value = EvalIntegerExpression("rows * 0.5", {{"rows", 64}});
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(),
            "number '0.5' in 'rows * 0.5' is not an integer; expected integers only in a shape");
}

TEST(EvalIntegerExpressionTest, GivenAValueBeyondTwoToThe53ItFails) {
  Result<int64_t> value = EvalIntegerExpression("n * n * n", {{"n", 1 << 20}});
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(), "'n * n * n' exceeds 2^53; expected smaller sizes");
}

TEST(EvalDimensionTest, GivenAResultBelowOneItFails) {
  Result<int64_t> value = EvalDimension("n - 4", {{"n", 4}});
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().message(), "'n - 4' is 0; expected a dimension >= 1");
  EXPECT_EQ(*EvalDimension("n - 3", {{"n", 4}}), 1);
}

TEST(EvalCostTest, GivenZeroItFailsUnlessZeroIsAllowed) {
  EXPECT_FALSE(EvalCost("0 * n", {{"n", 4}}, /*allow_zero=*/false).ok());
  EXPECT_EQ(*EvalCost("0 * n", {{"n", 4}}, /*allow_zero=*/true), 0.0);
  Result<double> negative = EvalCost("-n", {{"n", 4}}, /*allow_zero=*/true);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "'-n' is -4; expected a value >= 0");
  EXPECT_EQ(*EvalCost("n / 8", {{"n", 4}}, /*allow_zero=*/false), 0.5);
}

TEST(FormatSizesTest, ItListsSizesAsNameEqualsValue) {
  EXPECT_EQ(FormatSizes({{"rows", 64}, {"cols", 100}}), "cols=100, rows=64");
  EXPECT_EQ(FormatSizes({}), "");
}

}  // namespace
}  // namespace kforge
