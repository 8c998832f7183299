// Problem: what a kernel must compute, loaded from a problem file (docs/problem-format.md).
//
// A Problem holds declarations only: size parameters, tensors (shapes are expressions over the
// sizes), attributes, tolerances, cost expressions, the reference source and seed kernels.
// Concrete shapes come from Bind(), which fixes the sizes. Thread-safety: immutable after
// loading; safe to share.
#ifndef KFORGE_PROBLEM_H_
#define KFORGE_PROBLEM_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/precision.h"
#include "kforge/status.h"
#include "kforge/tensor.h"

namespace kforge {

// How input values are drawn. All kinds are scaled by the trial's magnitude.
struct Distribution {
  enum class Kind { kNormal, kUniform, kIntegers };
  Kind kind = Kind::kNormal;
  double a = 0.0;  // normal: mean; uniform/integers: low (inclusive)
  double b = 1.0;  // normal: stddev; uniform: high (exclusive); integers: high (inclusive)
  bool positive = false;  // normal only: take |x| (for variances, scales)
};

struct SizeParam {
  std::string name;
  int64_t value = 0;         // the default
  int64_t min = 1;           // smallest legal value
  int64_t multiple_of = 1;   // legal values are multiples of this
  int64_t quick = 0;         // value for --quick; 0 means "use value"
};

struct TensorDecl {
  std::string name;
  std::vector<std::string> shape;  // each an expression over size parameters
  DType dtype = DType::kFloat32;
  Distribution dist;  // inputs only
};

struct Attribute {
  std::string name;
  double value = 0.0;
  bool is_integer = false;
};

// How the problem is stated: a kforge problem file (TOML, C++ reference) or a PyTorch module in
// KernelBench format (Model, get_inputs, get_init_inputs), whose reference runs in the Python
// worker. For a PyTorch problem, `sizes` are its module-level integer constants and `attrs` its
// float constants (both overridable); its tensors are learned when the reference runs.
enum class ProblemFormat { kKforge, kPyTorch };

struct Problem {
  ProblemFormat format = ProblemFormat::kKforge;
  std::filesystem::path path;  // the problem file, absolute
  std::filesystem::path dir;   // folder that relative paths resolve against, absolute
  std::string name;
  std::string description;
  std::vector<SizeParam> sizes;      // in file order
  std::vector<TensorDecl> inputs;    // in file order
  std::vector<TensorDecl> outputs;   // in file order
  std::vector<Attribute> attrs;      // in file order
  bool has_tolerance_override = false;
  Tolerance tolerance_override;      // when has_tolerance_override
  std::string flops_expr;            // floating-point operations, over sizes
  std::string bytes_expr;            // minimum bytes moved, over sizes
  // Paths below are resolved against `dir` (dir / the path as written) and existed at load.
  std::filesystem::path reference;   // C++ reference source (kforge_reference.h ABI)
  bool reference_float64 = true;     // whether kf_reference_f64 is the check
  std::vector<double> magnitudes = {1.0, 4.0};  // trial input scales, cycled over seeds
  bool allow_fast_math = false;
  bool nondeterministic = false;     // outputs may differ run to run within tolerance
  PrecisionPolicy precision = PrecisionPolicy::kStrict;  // [precision] policy: a run's default
  std::vector<PrecisionPolicy> precision_allowed;        // [precision] allowed; empty = all
  std::map<std::string, std::filesystem::path> seeds;                    // backend -> file
  std::map<std::string, std::vector<std::filesystem::path>> candidates;  // backend -> files

  // Tolerance for an output of this dtype under `policy`. Under strict: the override, else the
  // dtype default. Other policies apply PolicyTolerance to that for floating outputs; integer
  // outputs always match exactly.
  Tolerance ToleranceFor(DType dtype, PrecisionPolicy policy = PrecisionPolicy::kStrict) const;
  // The policy a run uses: `requested` when given, else the problem's declared policy. Fails
  // (InvalidArgument) when the problem does not allow it, naming the policies it allows.
  Result<PrecisionPolicy> ChoosePrecision(std::optional<PrecisionPolicy> requested) const;
};

// A problem with every size fixed: concrete shapes and costs.
struct BoundProblem {
  const Problem* problem = nullptr;
  std::map<std::string, int64_t> sizes;
  std::vector<TensorShape> inputs;   // parallel to problem->inputs
  std::vector<TensorShape> outputs;  // parallel to problem->outputs
  double flops = 0.0;
  double bytes = 0.0;
};

// Loads a PyTorch problem (a .py file in KernelBench format) without running it: checks that it
// defines Model, get_inputs and get_init_inputs, and reads its top-level numeric constants.
Result<Problem> LoadPyTorchProblem(const std::filesystem::path& file);

// The integer constants a --quick run shrinks, and to what: every integer constant of a PyTorch
// problem of at least 256 is divided by 16 (rounded down, at least 1); others stay.
std::map<std::string, int64_t> QuickSizes(const Problem& problem);

// Parses and validates a problem file (a .py file is loaded by LoadPyTorchProblem). Errors name the file, the line and the field, and say
// what was expected: "<file>:<line>: <field>: <what is wrong>; expected <what>", with <file> as
// given. Beyond the format's rules it checks that every shape and cost evaluates at the default
// sizes, the quick sizes and the hidden variants of both (VariantSizes), so that Bind cannot fail
// on them later. A missing file (the problem file or one it names) is kNotFound; everything else
// is kInvalidArgument.
Result<Problem> LoadProblem(const std::filesystem::path& file);

// Fixes sizes: defaults, overridden by `overrides` (name -> value); `quick` uses each size's
// quick value first. Fails on an unknown size name, a value below min or not a multiple, or a
// shape or cost expression that does not evaluate to a positive number: shapes to exact
// integers >= 1 (every '/' dividing exactly), bytes to a number > 0, flops to a number >= 0
// (a kernel that only moves data does no floating-point work). Messages say which size or
// tensor and what to change, e.g. "unknown size 'foo'; this problem's sizes are: rows, cols".
Result<BoundProblem> Bind(const Problem& problem, const std::map<std::string, int64_t>& overrides,
                          bool quick = false);

// A second size assignment for hidden-shape checks: every size moved away from its default
// (smaller, odd where legal) while respecting min and multiple_of. Equal to the defaults only
// when no size can move.
//
// The rule, per size with value v (taken from `sizes`, else the size's default), m =
// multiple_of: the legal smaller values are k*m with k*m >= min and k*m < v. If there are none
// (v is already the smallest legal value), v is kept. Otherwise k starts at floor((v - v/4) / m)
// (about 3/4 of v), is clamped into the legal range, and is made odd (k-1, else k+1) when that
// stays legal, so the result is odd when m is odd and an odd multiple of m otherwise. Examples:
// 1024 (min 1) -> 767; 1024 with multiple_of 16 -> 752 (47*16); 64 with min 64 -> 64; 2 -> 1.
// Entries of `sizes` that are not sizes of `problem` are returned unchanged.
std::map<std::string, int64_t> VariantSizes(const Problem& problem,
                                            const std::map<std::string, int64_t>& sizes);

// Evaluates an integer/float expression (+ - * / parentheses, unary minus, numbers such as 3,
// 2.5 or 1e-5, names from `vars`) in double precision; '/' is real division. Fails, saying
// where and what was expected, on a syntax error, trailing text, an unknown name ("unknown name
// 'x' in '2*x'; expected one of: n"), division by zero, or a result that is not finite.
Result<double> EvalExpression(const std::string& expr, const std::map<std::string, int64_t>& vars);

// The problem search path, in order, without duplicates: each folder of the KFORGE_PROBLEMS
// environment variable (colon-separated), then <directory of the running executable>/../share/
// kforge/problems (an installed kforge), then KFORGE_SOURCE_DIR/problems (the source tree the
// binary was built from). Folders are listed whether or not they exist.
std::vector<std::filesystem::path> ProblemSearchPath();

// Finds problems: `name_or_path` is a problem file, a folder holding problem.toml, or the name
// of a bundled problem found under the problem search path (KFORGE_PROBLEMS, then the
// installed/bundled problems folder). A name matches the first problem.toml (search-path order,
// then path order) whose `name` is that name; folders are named after their problem by
// convention. Fails with kNotFound, listing the folders searched and how to list problems.
Result<std::filesystem::path> FindProblem(const std::string& name_or_path);
// Every problem.toml under the search path, sorted by name. A name found in several folders is
// listed once, from the first folder (as FindProblem would find it). Files whose name cannot be
// read are listed under their folder's name, so that loading them reports the error.
std::vector<std::filesystem::path> ListBundledProblems();

// A suite: the problems `kforge bench` runs, in order. `name_or_path` is
//   - a folder: its *.py files (PyTorch problems) and every problem.toml below it, sorted by the
//     number a KernelBench file name starts with, then by name;
//   - "kernelbench-l1", "kernelbench-l2", "kernelbench-l3": a KernelBench level;
//   - "kernelbench-l2-gemm": the 37 Level 2 problems whose names contain Gemm, Matmul or BMM;
//   - "bundled": kforge's own problems.
// KernelBench suites need a copy of KernelBench: `kernelbench_root` (the folder holding level1
// .. level4, or a repository checkout with KernelBench/level1 ...), else $KFORGE_KERNELBENCH.
Result<std::vector<std::filesystem::path>> ResolveSuite(const std::string& name_or_path,
                                                        const std::filesystem::path& kernelbench_root = {});

}  // namespace kforge

#endif  // KFORGE_PROBLEM_H_
