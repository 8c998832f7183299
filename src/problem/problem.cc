// Problem operations after loading: tolerances, binding sizes, hidden variant sizes.
// LoadProblem is in load_problem.cc, FindProblem in find_problem.cc, the expression language
// in expression.cc.
#include "kforge/problem.h"

#include <algorithm>

#include "fmt/format.h"
#include "problem/expression.h"

namespace kforge {

namespace {

using Sizes = std::map<std::string, int64_t>;

// Default tolerances by output dtype (docs/problem-format.md).
constexpr double kWideFloatTolerance = 1e-4;    // float32, float64
constexpr double kNarrowFloatTolerance = 1e-2;  // float16, bfloat16

std::string SizeNames(const Problem& problem) {
  std::string names;
  for (const SizeParam& size : problem.sizes) names += (names.empty() ? "" : ", ") + size.name;
  return names;
}

// The legal values next to a value that is not a multiple of `m`, for the error message.
std::string NearestMultiples(int64_t value, const SizeParam& size) {
  int64_t below = value / size.multiple_of * size.multiple_of;
  int64_t above = below + size.multiple_of;
  if (below >= size.min) return fmt::format("try {} or {}", below, above);
  return fmt::format("try {}", above);
}

Status CheckSizeValue(const SizeParam& size, int64_t value) {
  if (value < size.min) {
    return Status::InvalidArgument(
        fmt::format("size '{}' must be >= {} (got {})", size.name, size.min, value));
  }
  if (size.multiple_of > 1 && value % size.multiple_of != 0) {
    return Status::InvalidArgument(fmt::format("size '{}' must be a multiple of {} (got {}); {}",
                                               size.name, size.multiple_of, value,
                                               NearestMultiples(value, size)));
  }
  return Status::Ok();
}

// Defaults (or quick values), then overrides, each checked against min and multiple_of.
Result<Sizes> ResolveSizes(const Problem& problem, const Sizes& overrides, bool quick) {
  for (const auto& [name, value] : overrides) {
    bool known = std::any_of(problem.sizes.begin(), problem.sizes.end(),
                             [&](const SizeParam& size) { return size.name == name; });
    if (known) continue;
    if (problem.sizes.empty()) {
      return Status::InvalidArgument(
          fmt::format("unknown size '{}'; this problem has no sizes", name));
    }
    return Status::InvalidArgument(
        fmt::format("unknown size '{}'; this problem's sizes are: {}", name, SizeNames(problem)));
  }
  Sizes sizes;
  for (const SizeParam& size : problem.sizes) {
    int64_t value = (quick && size.quick > 0) ? size.quick : size.value;
    auto it = overrides.find(size.name);
    if (it != overrides.end()) value = it->second;
    KF_RETURN_IF_ERROR(CheckSizeValue(size, value));
    sizes[size.name] = value;
  }
  return sizes;
}

Status BindShapes(const std::vector<TensorDecl>& decls, const Sizes& sizes, const char* role,
                  std::vector<TensorShape>* shapes) {
  for (const TensorDecl& decl : decls) {
    TensorShape shape{decl.name, decl.dtype, {}};
    for (size_t d = 0; d < decl.shape.size(); ++d) {
      Result<int64_t> dim = EvalDimension(decl.shape[d], sizes);
      if (!dim.ok()) {
        return dim.status().WithContext(
            fmt::format("{} '{}' shape[{}] at {}", role, decl.name, d, FormatSizes(sizes)));
      }
      shape.dims.push_back(*dim);
    }
    shapes->push_back(std::move(shape));
  }
  return Status::Ok();
}

Result<double> BindCost(const std::string& expr, const Sizes& sizes, const char* field,
                        bool allow_zero) {
  Result<double> value = EvalCost(expr, sizes, allow_zero);
  if (!value.ok()) {
    return value.status().WithContext(fmt::format("cost {} at {}", field, FormatSizes(sizes)));
  }
  return value;
}

// See the rule in kforge/problem.h.
int64_t VariantOf(const SizeParam& size, int64_t value) {
  const int64_t m = std::max<int64_t>(1, size.multiple_of);
  const int64_t lowest_k = (size.min + m - 1) / m;  // smallest k with k*m >= min
  const int64_t highest_k = (value - 1) / m;        // largest k with k*m < value
  if (value < 1 || highest_k < lowest_k) return value;
  int64_t k = std::clamp((value - value / 4) / m, lowest_k, highest_k);
  if (k % 2 == 0) {
    if (k - 1 >= lowest_k) {
      --k;
    } else if (k + 1 <= highest_k) {
      ++k;
    }
  }
  return k * m;
}

}  // namespace

Tolerance Problem::ToleranceFor(DType dtype, PrecisionPolicy policy) const {
  Tolerance strict = {kWideFloatTolerance, kWideFloatTolerance, kWideFloatTolerance};
  if (has_tolerance_override) {
    strict = tolerance_override;
  } else if (!IsFloating(dtype)) {
    strict = {0.0, 0.0, 0.0};
  } else if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
    strict = {kNarrowFloatTolerance, kNarrowFloatTolerance, kNarrowFloatTolerance};
  }
  // Policies are about floating-point arithmetic; integer outputs keep their strict rule.
  return IsFloating(dtype) ? PolicyTolerance(strict, policy) : strict;
}

Result<PrecisionPolicy> Problem::ChoosePrecision(std::optional<PrecisionPolicy> requested) const {
  PrecisionPolicy policy = requested.value_or(precision);
  if (precision_allowed.empty() || std::find(precision_allowed.begin(), precision_allowed.end(),
                                             policy) != precision_allowed.end())
    return policy;
  std::string allowed;
  for (PrecisionPolicy p : precision_allowed)
    allowed += (allowed.empty() ? "" : ", ") + std::string(PrecisionPolicyName(p));
  return Status::InvalidArgument(
      fmt::format("problem '{}' does not allow the precision policy '{}'; it allows: {}", name,
                  PrecisionPolicyName(policy), allowed));
}

Result<BoundProblem> Bind(const Problem& problem, const Sizes& overrides, bool quick) {
  BoundProblem bound;
  bound.problem = &problem;
  KF_ASSIGN_OR_RETURN(bound.sizes, ResolveSizes(problem, overrides, quick));
  if (problem.format == ProblemFormat::kPyTorch) return bound;  // tensors come from the reference
  KF_RETURN_IF_ERROR(BindShapes(problem.inputs, bound.sizes, "input", &bound.inputs));
  KF_RETURN_IF_ERROR(BindShapes(problem.outputs, bound.sizes, "output", &bound.outputs));
  KF_ASSIGN_OR_RETURN(bound.flops, BindCost(problem.flops_expr, bound.sizes, "flops", true));
  KF_ASSIGN_OR_RETURN(bound.bytes, BindCost(problem.bytes_expr, bound.sizes, "bytes", false));
  return bound;
}

Sizes VariantSizes(const Problem& problem, const Sizes& sizes) {
  Sizes variant = sizes;
  for (const SizeParam& size : problem.sizes) {
    auto it = sizes.find(size.name);
    variant[size.name] = VariantOf(size, it != sizes.end() ? it->second : size.value);
  }
  return variant;
}

}  // namespace kforge
