// Size expressions: the small arithmetic language of shapes and costs in problem files.
//
// Grammar (whitespace is ignored between tokens):
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := '-' unary | primary
//   primary := number | name | '(' expr ')'
//   number  := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]   (also '.5')
//   name    := [A-Za-z_][A-Za-z0-9_]*
//
// EvalExpression (kforge/problem.h) evaluates in double precision: '/' is real division.
// The shape helpers below evaluate in exact integer arithmetic instead. Every failure is a
// Status whose message quotes the expression and ends in "; expected ...".
// Thread-safety: pure functions.
#ifndef KFORGE_PROBLEM_EXPRESSION_H_
#define KFORGE_PROBLEM_EXPRESSION_H_

#include <cstdint>
#include <map>
#include <string>

#include "kforge/status.h"

namespace kforge {

// Evaluates `expr` with integers only: float literals are rejected, every intermediate value is
// a whole number below 2^53 in magnitude, and '/' must divide exactly.
Result<int64_t> EvalIntegerExpression(const std::string& expr,
                                      const std::map<std::string, int64_t>& vars);

// Evaluates one shape dimension: EvalIntegerExpression, and the result must be >= 1.
Result<int64_t> EvalDimension(const std::string& expr, const std::map<std::string, int64_t>& vars);

// Evaluates a cost expression (real division). The result must be finite and > 0, or >= 0 when
// `allow_zero` (a kernel that only moves data does no floating-point operations).
Result<double> EvalCost(const std::string& expr, const std::map<std::string, int64_t>& vars,
                        bool allow_zero);

// "rows=64, cols=100": sizes as they appear in messages.
std::string FormatSizes(const std::map<std::string, int64_t>& vars);

}  // namespace kforge

#endif  // KFORGE_PROBLEM_EXPRESSION_H_
