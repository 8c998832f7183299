#include "problem/expression.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "fmt/format.h"
#include "kforge/problem.h"

namespace kforge {

namespace {

using Vars = std::map<std::string, int64_t>;

// Integers up to 2^53 are exact in a double, so integer mode can compute in doubles and check
// that every intermediate value stays whole and within this bound.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53
// Parentheses nest at most this deep; deeper input is rejected rather than overflowing the stack.
constexpr int kMaxDepth = 64;

constexpr const char* kExpectOperand = "a number, a name or '('";

std::string JoinNames(const Vars& vars) {
  std::string out;
  for (const auto& [name, value] : vars) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Recursive-descent evaluator over one expression string; see the grammar in expression.h.
class Evaluator {
 public:
  Evaluator(const std::string& expr, const Vars& vars, bool integer_only)
      : expr_(expr), vars_(vars), integer_only_(integer_only) {}

  Result<double> Run() {
    SkipSpace();
    if (AtEnd()) return Fail("empty expression", kExpectOperand);
    KF_ASSIGN_OR_RETURN(double value, ParseSum());
    if (!AtEnd()) return Unexpected("an operator (+ - * /) or the end");
    return value;
  }

 private:
  bool AtEnd() const { return pos_ >= expr_.size(); }
  char Peek() const { return AtEnd() ? '\0' : expr_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() && std::isspace(static_cast<unsigned char>(expr_[pos_]))) ++pos_;
  }

  Status Fail(const std::string& what, const std::string& expected) const {
    return Status::InvalidArgument(fmt::format("{}; expected {}", what, expected));
  }
  Status Unexpected(const std::string& expected) const {
    if (AtEnd()) return Fail(fmt::format("unexpected end of '{}'", expr_), expected);
    return Fail(fmt::format("unexpected '{}' at column {} in '{}'", expr_[pos_], pos_ + 1, expr_),
                expected);
  }

  Result<double> ParseSum() {
    KF_ASSIGN_OR_RETURN(double value, ParseProduct());
    while (Peek() == '+' || Peek() == '-') {
      char op = expr_[pos_++];
      SkipSpace();
      KF_ASSIGN_OR_RETURN(double rhs, ParseProduct());
      KF_ASSIGN_OR_RETURN(value, Checked(op == '+' ? value + rhs : value - rhs));
    }
    return value;
  }

  Result<double> ParseProduct() {
    KF_ASSIGN_OR_RETURN(double value, ParseUnary());
    while (Peek() == '*' || Peek() == '/') {
      char op = expr_[pos_++];
      SkipSpace();
      KF_ASSIGN_OR_RETURN(double rhs, ParseUnary());
      if (op == '*') {
        KF_ASSIGN_OR_RETURN(value, Checked(value * rhs));
      } else {
        KF_ASSIGN_OR_RETURN(value, Divide(value, rhs));
      }
    }
    return value;
  }

  Result<double> Divide(double lhs, double rhs) const {
    if (rhs == 0.0) {
      return Fail(fmt::format("division by zero in '{}'", expr_), "a divisor that is not 0");
    }
    if (integer_only_ && std::fmod(lhs, rhs) != 0.0) {
      return Fail(fmt::format("{} / {} does not divide exactly in '{}'", lhs, rhs, expr_),
                  "whole numbers in a shape (give the size a multiple_of)");
    }
    return Checked(lhs / rhs);
  }

  Result<double> ParseUnary() {
    if (Peek() != '-') return ParsePrimary();
    ++pos_;
    SkipSpace();
    KF_ASSIGN_OR_RETURN(double value, ParseUnary());
    return -value;
  }

  Result<double> ParsePrimary() {
    KF_ASSIGN_OR_RETURN(double value, ParseOperand());
    SkipSpace();
    return value;
  }

  Result<double> ParseOperand() {
    unsigned char c = static_cast<unsigned char>(Peek());
    if (c == '(') return ParseParenthesized();
    if (std::isdigit(c) || c == '.') return ParseNumber();
    if (std::isalpha(c) || c == '_') return ParseName();
    return Unexpected(kExpectOperand);
  }

  Result<double> ParseParenthesized() {
    if (++depth_ > kMaxDepth) {
      return Fail(fmt::format("parentheses nest too deeply in '{}'", expr_),
                  fmt::format("at most {} levels", kMaxDepth));
    }
    ++pos_;
    SkipSpace();
    KF_ASSIGN_OR_RETURN(double value, ParseSum());
    if (Peek() != ')') return Unexpected("')' or an operator (+ - * /)");
    ++pos_;
    --depth_;
    return value;
  }

  Result<double> ParseNumber() {
    size_t start = pos_;
    auto digits = [&] {
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    };
    digits();
    bool is_float = false;
    if (Peek() == '.') {
      is_float = true;
      ++pos_;
      digits();
    }
    if (Peek() == 'e' || Peek() == 'E') {
      is_float = true;
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) return Unexpected("exponent digits");
      digits();
    }
    std::string text = expr_.substr(start, pos_ - start);
    if (text == ".") {
      pos_ = start;
      return Unexpected(kExpectOperand);
    }
    if (is_float && integer_only_) {
      return Fail(fmt::format("number '{}' in '{}' is not an integer", text, expr_),
                  "integers only in a shape");
    }
    return Checked(std::strtod(text.c_str(), nullptr));
  }

  Result<double> ParseName() {
    size_t start = pos_;
    while (std::isalnum(static_cast<unsigned char>(Peek())) || Peek() == '_') ++pos_;
    std::string name = expr_.substr(start, pos_ - start);
    auto it = vars_.find(name);
    if (it != vars_.end()) return Checked(static_cast<double>(it->second));
    std::string what = fmt::format("unknown name '{}' in '{}'", name, expr_);
    if (vars_.empty()) return Fail(what, "numbers only (no names are defined)");
    return Fail(what, "one of: " + JoinNames(vars_));
  }

  // Rejects values that are not finite, and in integer mode values that are not exact.
  Result<double> Checked(double value) const {
    if (!std::isfinite(value)) {
      return Fail(fmt::format("'{}' overflows", expr_), "a finite value");
    }
    if (integer_only_ && std::fabs(value) > kMaxExactInteger) {
      return Fail(fmt::format("'{}' exceeds 2^53", expr_), "smaller sizes");
    }
    return value;
  }

  const std::string& expr_;
  const Vars& vars_;
  const bool integer_only_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<double> EvalExpression(const std::string& expr, const Vars& vars) {
  return Evaluator(expr, vars, /*integer_only=*/false).Run();
}

Result<int64_t> EvalIntegerExpression(const std::string& expr, const Vars& vars) {
  KF_ASSIGN_OR_RETURN(double value, Evaluator(expr, vars, /*integer_only=*/true).Run());
  return static_cast<int64_t>(value);
}

Result<int64_t> EvalDimension(const std::string& expr, const Vars& vars) {
  KF_ASSIGN_OR_RETURN(int64_t value, EvalIntegerExpression(expr, vars));
  if (value < 1) {
    return Status::InvalidArgument(
        fmt::format("'{}' is {}; expected a dimension >= 1", expr, value));
  }
  return value;
}

Result<double> EvalCost(const std::string& expr, const Vars& vars, bool allow_zero) {
  KF_ASSIGN_OR_RETURN(double value, EvalExpression(expr, vars));
  if (value < 0.0 || (value == 0.0 && !allow_zero)) {
    return Status::InvalidArgument(
        fmt::format("'{}' is {}; expected a value {} 0", expr, value, allow_zero ? ">=" : ">"));
  }
  return value;
}

std::string FormatSizes(const Vars& vars) {
  std::string out;
  for (const auto& [name, value] : vars) {
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", name, value);
  }
  return out;
}

}  // namespace kforge
