// LoadProblem: problem.toml -> Problem, checking everything docs/problem-format.md promises.
//
// The loader reads the root table section by section (sizes first, so that shapes and costs
// can be evaluated as soon as they are read) and stops at the first error. Every error names
// the file as given, the line, the field path and what was expected; see toml_reader.h.
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "fmt/format.h"
#include "kforge/problem.h"
#include "problem/expression.h"
#include "problem/toml_reader.h"

namespace kforge {

namespace {

namespace fs = std::filesystem;
using Sizes = std::map<std::string, int64_t>;

constexpr size_t kMaxDims = 8;  // KF_MAX_DIMS in abi/kforge_cpu.h
constexpr const char* kRelativePath = "a file path relative to the problem folder";

// Declared names may become identifiers in kernels, so C and C++ keywords are refused. OpenCL C
// qualifiers (kernel, global, local, ...) are not: kernels look names up as strings, and bundled
// problems use `kernel` as a size name.
constexpr std::string_view kReservedNames[] = {"alignas",
                                               "alignof",
                                               "and",
                                               "and_eq",
                                               "asm",
                                               "auto",
                                               "bitand",
                                               "bitor",
                                               "bool",
                                               "break",
                                               "case",
                                               "catch",
                                               "char",
                                               "char16_t",
                                               "char32_t",
                                               "char8_t",
                                               "class",
                                               "co_await",
                                               "co_return",
                                               "co_yield",
                                               "compl",
                                               "concept",
                                               "const",
                                               "const_cast",
                                               "consteval",
                                               "constexpr",
                                               "constinit",
                                               "continue",
                                               "decltype",
                                               "default",
                                               "delete",
                                               "do",
                                               "double",
                                               "dynamic_cast",
                                               "else",
                                               "enum",
                                               "explicit",
                                               "export",
                                               "extern",
                                               "false",
                                               "float",
                                               "for",
                                               "friend",
                                               "goto",
                                               "if",
                                               "inline",
                                               "int",
                                               "long",
                                               "mutable",
                                               "namespace",
                                               "new",
                                               "noexcept",
                                               "not",
                                               "not_eq",
                                               "nullptr",
                                               "operator",
                                               "or",
                                               "or_eq",
                                               "private",
                                               "protected",
                                               "public",
                                               "register",
                                               "reinterpret_cast",
                                               "requires",
                                               "restrict",
                                               "return",
                                               "short",
                                               "signed",
                                               "sizeof",
                                               "static",
                                               "static_assert",
                                               "static_cast",
                                               "struct",
                                               "switch",
                                               "template",
                                               "this",
                                               "thread_local",
                                               "throw",
                                               "true",
                                               "try",
                                               "typedef",
                                               "typeid",
                                               "typename",
                                               "union",
                                               "unsigned",
                                               "using",
                                               "virtual",
                                               "void",
                                               "volatile",
                                               "wchar_t",
                                               "while",
                                               "xor",
                                               "xor_eq"};

bool IsIdentifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

bool IsReserved(const std::string& name) {
  return std::find(std::begin(kReservedNames), std::end(kReservedNames), name) !=
         std::end(kReservedNames);
}

// [a-z0-9_-]+, plus '-' when `allow_dash`.
bool IsLowerName(const std::string& name, bool allow_dash) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (allow_dash && c == '-');
  });
}

std::string DTypeNames() {
  std::string names;
  for (int t = 0; t <= static_cast<int>(DType::kInt64); ++t) {
    names += fmt::format("{}{}", names.empty() ? "" : ", ", DTypeName(static_cast<DType>(t)));
  }
  return names;
}

// The kinds of expression a problem file holds; each has its own range of legal values.
enum class ExprKind { kDimension, kFlops, kBytes };

Status Evaluate(const std::string& expr, const Sizes& sizes, ExprKind kind) {
  if (kind == ExprKind::kDimension) return EvalDimension(expr, sizes).status();
  return EvalCost(expr, sizes, /*allow_zero=*/kind == ExprKind::kFlops).status();
}

// A size assignment every shape and cost must evaluate at, and how messages name it.
struct SizeCheck {
  std::string label;  // empty for the defaults
  Sizes sizes;
};

class Loader {
 public:
  Loader(const fs::path& file, const toml::table& root)
      : file_(file.string()), root_(file_, root, "") {
    problem_.path = fs::absolute(file).lexically_normal();
    problem_.dir = problem_.path.parent_path();
  }

  Result<Problem> Load();

 private:
  Status ErrorAt(const toml::node* node, const std::string& field, const std::string& what,
                 const std::string& expected) const;
  Status DeclareName(const std::string& name, const std::string& field, const toml::node* node);
  Result<fs::path> ResolveFile(const toml::node* node, const std::string& field);
  Status CheckExpression(const toml::node* node, const std::string& field, const std::string& expr,
                         ExprKind kind) const;

  Status LoadName();
  Status LoadSizes();
  Status LoadSize(const TableReader& sizes, const TableReader::Entry& entry, SizeParam* size);
  void AddSizeChecks();
  Status LoadTensors(std::string_view key, bool is_input, std::vector<TensorDecl>* out);
  Status LoadTensor(const TableReader& tensor, bool is_input, TensorDecl* decl);
  Status LoadShape(const TableReader& tensor, std::vector<std::string>* shape);
  Status LoadDistribution(const TableReader& tensor, TensorDecl* decl);
  Status LoadAttrs();
  Status LoadTolerance();
  Status LoadCost();
  Status LoadCostExpression(const TableReader& cost, std::string_view key, ExprKind kind,
                            std::string* expr);
  Status LoadReference();
  Status LoadChecks();
  Status LoadMagnitudes(const TableReader& checks);
  Status LoadPrecision();
  Status LoadAllowedPolicies(const TableReader& precision);
  Status LoadSeeds();
  Status LoadCandidates();

  const std::string file_;  // as given, for messages
  const TableReader root_;
  Problem problem_;
  std::map<std::string, std::pair<std::string, int>> declared_;  // name -> (field, line)
  std::vector<SizeCheck> size_checks_;
};

Result<Problem> Loader::Load() {
  KF_RETURN_IF_ERROR(
      root_.CheckKeys({"name", "description", "sizes", "inputs", "outputs", "attrs", "tolerance",
                       "precision", "cost", "reference", "checks", "seeds", "candidates"}));
  KF_RETURN_IF_ERROR(LoadName());
  KF_RETURN_IF_ERROR(LoadSizes());
  KF_RETURN_IF_ERROR(LoadTensors("inputs", /*is_input=*/true, &problem_.inputs));
  KF_RETURN_IF_ERROR(LoadTensors("outputs", /*is_input=*/false, &problem_.outputs));
  KF_RETURN_IF_ERROR(LoadAttrs());
  KF_RETURN_IF_ERROR(LoadTolerance());
  KF_RETURN_IF_ERROR(LoadCost());
  KF_RETURN_IF_ERROR(LoadReference());
  KF_RETURN_IF_ERROR(LoadChecks());
  KF_RETURN_IF_ERROR(LoadPrecision());
  KF_RETURN_IF_ERROR(LoadSeeds());
  KF_RETURN_IF_ERROR(LoadCandidates());
  return std::move(problem_);
}

Status Loader::ErrorAt(const toml::node* node, const std::string& field, const std::string& what,
                       const std::string& expected) const {
  return Status::InvalidArgument(FormatSourceError(file_, LineOf(node), field, what, expected));
}

// Names of sizes, tensors and attributes share one namespace: kernels look them all up by name.
Status Loader::DeclareName(const std::string& name, const std::string& field,
                           const toml::node* node) {
  if (!IsIdentifier(name)) {
    return ErrorAt(node, field, fmt::format("'{}' is not a C identifier", name),
                   "letters, digits and '_', not starting with a digit");
  }
  if (IsReserved(name)) {
    return ErrorAt(node, field, fmt::format("'{}' is a C or C++ keyword", name), "another name");
  }
  auto [it, inserted] = declared_.emplace(name, std::make_pair(field, LineOf(node)));
  if (!inserted) {
    return ErrorAt(node, field,
                   fmt::format("'{}' is already declared by {} (line {})", name, it->second.first,
                               it->second.second),
                   "names unique across sizes, inputs, outputs and attrs");
  }
  return Status::Ok();
}

Result<fs::path> Loader::ResolveFile(const toml::node* node, const std::string& field) {
  if (!node->is_string()) return ErrorAt(node, field, "got " + DescribeType(*node), kRelativePath);
  const std::string& written = node->as_string()->get();
  if (written.empty()) return ErrorAt(node, field, "the path is empty", kRelativePath);
  fs::path resolved = (problem_.dir / written).lexically_normal();
  std::error_code ignored;
  if (fs::is_regular_file(resolved, ignored)) return resolved;
  return Status::NotFound(FormatSourceError(
      file_, LineOf(node), field,
      fmt::format("file '{}' does not exist (looked for {})", written, resolved.string()),
      kRelativePath));
}

// Evaluates `expr` at every size check, so that Bind cannot fail on the problem's own sizes.
Status Loader::CheckExpression(const toml::node* node, const std::string& field,
                               const std::string& expr, ExprKind kind) const {
  for (const SizeCheck& check : size_checks_) {
    Status status = Evaluate(expr, check.sizes, kind);
    if (status.ok()) continue;
    std::string where;
    if (!check.label.empty()) {
      where = fmt::format("at {} ({}): ", check.label, FormatSizes(check.sizes));
    }
    return Status::InvalidArgument(
        fmt::format("{}:{}: {}: {}{}", file_, LineOf(node), field, where, status.message()));
  }
  return Status::Ok();
}

Status Loader::LoadName() {
  KF_RETURN_IF_ERROR(root_.ReadString("name", true, &problem_.name));
  if (!IsLowerName(problem_.name, /*allow_dash=*/true)) {
    return root_.Error("name", fmt::format("'{}' is not a valid problem name", problem_.name),
                       "lowercase letters, digits, '_' and '-' ([a-z0-9_-]+)");
  }
  return root_.ReadString("description", false, &problem_.description);
}

Status Loader::LoadSizes() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("sizes", false, &table));
  if (table != nullptr) {
    TableReader sizes(file_, *table, "sizes");
    for (const TableReader::Entry& entry : sizes.Entries()) {
      SizeParam size;
      size.name = entry.key;
      KF_RETURN_IF_ERROR(DeclareName(entry.key, sizes.Field(entry.key), entry.node));
      KF_RETURN_IF_ERROR(LoadSize(sizes, entry, &size));
      problem_.sizes.push_back(size);
    }
  }
  AddSizeChecks();
  return Status::Ok();
}

// A size value (the default or the quick one) must be a legal value of the size.
Status CheckSizeValue(const TableReader& size_table, std::string_view key, int64_t value,
                      const SizeParam& size) {
  if (value < size.min) {
    return size_table.Error(key, fmt::format("{} is below min ({})", value, size.min),
                            fmt::format("a value >= {}", size.min));
  }
  if (value % size.multiple_of != 0) {
    return size_table.Error(key, fmt::format("{} is not a multiple of {}", value, size.multiple_of),
                            fmt::format("a multiple of multiple_of ({})", size.multiple_of));
  }
  return Status::Ok();
}

Status Loader::LoadSize(const TableReader& sizes, const TableReader::Entry& entry,
                        SizeParam* size) {
  if (!entry.node->is_table()) {
    return ErrorAt(entry.node, sizes.Field(entry.key), "got " + DescribeType(*entry.node),
                   fmt::format("a table such as {} = {{ value = 1024 }}", entry.key));
  }
  TableReader r(file_, *entry.node->as_table(), sizes.Field(entry.key));
  KF_RETURN_IF_ERROR(r.CheckKeys({"value", "min", "multiple_of", "quick"}));
  KF_RETURN_IF_ERROR(r.ReadInteger("value", true, &size->value));
  KF_RETURN_IF_ERROR(r.ReadInteger("min", false, &size->min));
  KF_RETURN_IF_ERROR(r.ReadInteger("multiple_of", false, &size->multiple_of));
  KF_RETURN_IF_ERROR(r.ReadInteger("quick", false, &size->quick));
  if (size->min < 1) return r.Error("min", fmt::format("is {}", size->min), "an integer >= 1");
  if (size->multiple_of < 1) {
    return r.Error("multiple_of", fmt::format("is {}", size->multiple_of), "an integer >= 1");
  }
  KF_RETURN_IF_ERROR(CheckSizeValue(r, "value", size->value, *size));
  if (!r.table().contains("quick")) return Status::Ok();
  return CheckSizeValue(r, "quick", size->quick, *size);
}

void Loader::AddSizeChecks() {
  Sizes defaults, quick;
  for (const SizeParam& size : problem_.sizes) {
    defaults[size.name] = size.value;
    quick[size.name] = size.quick > 0 ? size.quick : size.value;
  }
  std::vector<SizeCheck> checks = {
      {"", defaults},
      {"the quick sizes", quick},
      {"the hidden variant sizes", VariantSizes(problem_, defaults)},
      {"the hidden variant of the quick sizes", VariantSizes(problem_, quick)}};
  for (SizeCheck& check : checks) {
    bool seen = std::any_of(size_checks_.begin(), size_checks_.end(),
                            [&](const SizeCheck& other) { return other.sizes == check.sizes; });
    if (!seen) size_checks_.push_back(std::move(check));
  }
}

Status Loader::LoadTensors(std::string_view key, bool is_input, std::vector<TensorDecl>* out) {
  const toml::array* array;
  std::string expected = fmt::format("one or more [[{}]] tables", key);
  KF_RETURN_IF_ERROR(root_.ReadArray(key, true, &array, expected));
  if (array->empty()) return root_.Error(key, "the array is empty", expected);
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node* node = array->get(i);
    std::string path = fmt::format("{}[{}]", key, i);
    if (!node->is_table()) return ErrorAt(node, path, "got " + DescribeType(*node), expected);
    TensorDecl decl;
    KF_RETURN_IF_ERROR(LoadTensor(TableReader(file_, *node->as_table(), path), is_input, &decl));
    out->push_back(std::move(decl));
  }
  return Status::Ok();
}

Status Loader::LoadTensor(const TableReader& tensor, bool is_input, TensorDecl* decl) {
  if (is_input) {
    KF_RETURN_IF_ERROR(tensor.CheckKeys({"name", "shape", "dtype", "dist"}));
  } else {
    KF_RETURN_IF_ERROR(tensor.CheckKeys({"name", "shape", "dtype"}));
  }
  KF_RETURN_IF_ERROR(tensor.ReadString("name", true, &decl->name));
  KF_RETURN_IF_ERROR(DeclareName(decl->name, tensor.Field("name"), tensor.table().get("name")));
  std::string dtype;
  KF_RETURN_IF_ERROR(tensor.ReadString("dtype", true, &dtype));
  Result<DType> parsed = ParseDType(dtype);
  if (!parsed.ok()) {
    return tensor.Error("dtype", fmt::format("unknown dtype '{}'", dtype),
                        "one of " + DTypeNames());
  }
  decl->dtype = *parsed;
  KF_RETURN_IF_ERROR(LoadShape(tensor, &decl->shape));
  if (is_input) KF_RETURN_IF_ERROR(LoadDistribution(tensor, decl));
  return Status::Ok();
}

Status Loader::LoadShape(const TableReader& tensor, std::vector<std::string>* shape) {
  const toml::array* array;
  KF_RETURN_IF_ERROR(
      tensor.ReadArray("shape", true, &array, "an array of dimensions such as [\"rows\", 4]"));
  if (array->size() > kMaxDims) {
    return tensor.Error("shape", fmt::format("has {} dimensions", array->size()),
                        fmt::format("at most {}", kMaxDims));
  }
  for (size_t d = 0; d < array->size(); ++d) {
    const toml::node* node = array->get(d);
    std::string field = fmt::format("{}[{}]", tensor.Field("shape"), d);
    if (node->is_integer()) {
      shape->push_back(std::to_string(node->as_integer()->get()));
    } else if (node->is_string()) {
      shape->push_back(node->as_string()->get());
    } else {
      return ErrorAt(node, field, "got " + DescribeType(*node),
                     "an integer or a string expression over the sizes");
    }
    KF_RETURN_IF_ERROR(CheckExpression(node, field, shape->back(), ExprKind::kDimension));
  }
  return Status::Ok();
}

Status LoadNormal(const TableReader& dist, Distribution* out) {
  KF_RETURN_IF_ERROR(dist.CheckKeys({"kind", "mean", "std", "positive"}));
  out->kind = Distribution::Kind::kNormal;
  out->a = 0.0;
  out->b = 1.0;
  KF_RETURN_IF_ERROR(dist.ReadNumber("mean", false, &out->a));
  KF_RETURN_IF_ERROR(dist.ReadNumber("std", false, &out->b));
  KF_RETURN_IF_ERROR(dist.ReadBool("positive", &out->positive));
  if (out->b <= 0.0) return dist.Error("std", fmt::format("is {}", out->b), "a value > 0");
  return Status::Ok();
}

Status LoadUniform(const TableReader& dist, Distribution* out) {
  KF_RETURN_IF_ERROR(dist.CheckKeys({"kind", "low", "high"}));
  out->kind = Distribution::Kind::kUniform;
  KF_RETURN_IF_ERROR(dist.ReadNumber("low", true, &out->a));
  KF_RETURN_IF_ERROR(dist.ReadNumber("high", true, &out->b));
  if (out->a >= out->b) {
    return dist.Error("high", fmt::format("{} is not above low ({})", out->b, out->a),
                      "low < high");
  }
  return Status::Ok();
}

Status LoadIntegers(const TableReader& dist, DType dtype, Distribution* out) {
  KF_RETURN_IF_ERROR(dist.CheckKeys({"kind", "low", "high"}));
  out->kind = Distribution::Kind::kIntegers;
  int64_t low = 0, high = 0;
  KF_RETURN_IF_ERROR(dist.ReadInteger("low", true, &low));
  KF_RETURN_IF_ERROR(dist.ReadInteger("high", true, &high));
  if (low > high) {
    return dist.Error("high", fmt::format("{} is below low ({})", high, low), "low <= high");
  }
  if (dtype == DType::kInt32 && (low < INT32_MIN || high > INT32_MAX)) {
    return dist.Error(low < INT32_MIN ? "low" : "high", "is outside the int32 range",
                      fmt::format("values in [{}, {}]", INT32_MIN, INT32_MAX));
  }
  out->a = static_cast<double>(low);
  out->b = static_cast<double>(high);
  return Status::Ok();
}

// Inputs default to a standard normal; integer inputs must say which integers they hold.
Status Loader::LoadDistribution(const TableReader& tensor, TensorDecl* decl) {
  const toml::table* table;
  KF_RETURN_IF_ERROR(tensor.ReadTable("dist", false, &table));
  const bool integer_dtype = !IsFloating(decl->dtype);
  if (table == nullptr) {
    if (!integer_dtype) return Status::Ok();
    return tensor.Error("dist",
                        fmt::format("an {} input needs a distribution", DTypeName(decl->dtype)),
                        "dist = { kind = \"integers\", low = ..., high = ... }");
  }
  TableReader dist(file_, *table, tensor.Field("dist"));
  std::string kind;
  KF_RETURN_IF_ERROR(dist.ReadString("kind", true, &kind));
  if (kind == "normal") {
    KF_RETURN_IF_ERROR(LoadNormal(dist, &decl->dist));
  } else if (kind == "uniform") {
    KF_RETURN_IF_ERROR(LoadUniform(dist, &decl->dist));
  } else if (kind == "integers") {
    KF_RETURN_IF_ERROR(LoadIntegers(dist, decl->dtype, &decl->dist));
  } else {
    return dist.Error("kind", fmt::format("unknown distribution '{}'", kind),
                      "one of normal, uniform, integers");
  }
  if (integer_dtype && decl->dist.kind != Distribution::Kind::kIntegers) {
    return dist.Error(
        "kind",
        fmt::format("'{}' draws fractions but the dtype is {}", kind, DTypeName(decl->dtype)),
        "kind = \"integers\"");
  }
  return Status::Ok();
}

Status Loader::LoadAttrs() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("attrs", false, &table));
  if (table == nullptr) return Status::Ok();
  TableReader attrs(file_, *table, "attrs");
  for (const TableReader::Entry& entry : attrs.Entries()) {
    KF_RETURN_IF_ERROR(DeclareName(entry.key, attrs.Field(entry.key), entry.node));
    Attribute attr;
    attr.name = entry.key;
    attr.is_integer = entry.node->is_integer();
    if (!attr.is_integer && !entry.node->is_floating_point()) {
      return ErrorAt(entry.node, attrs.Field(entry.key), "got " + DescribeType(*entry.node),
                     "a number (an integer literal makes an integer attribute)");
    }
    KF_RETURN_IF_ERROR(attrs.ReadNumber(entry.key, true, &attr.value));
    problem_.attrs.push_back(attr);
  }
  return Status::Ok();
}

// A [tolerance] table replaces the dtype defaults, so it must give all three bounds.
Status Loader::LoadTolerance() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("tolerance", false, &table));
  if (table == nullptr) return Status::Ok();
  TableReader tolerance(file_, *table, "tolerance");
  KF_RETURN_IF_ERROR(tolerance.CheckKeys({"atol", "rtol", "rms"}));
  Tolerance& out = problem_.tolerance_override;
  std::pair<std::string_view, double*> bounds[] = {
      {"atol", &out.atol}, {"rtol", &out.rtol}, {"rms", &out.rms}};
  for (auto& [key, value] : bounds) {
    if (!table->contains(key)) {
      return tolerance.Error(key, "required key is missing",
                             "atol, rtol and rms together (or no [tolerance] for the defaults)");
    }
    KF_RETURN_IF_ERROR(tolerance.ReadNumber(key, true, value));
    if (*value < 0.0) return tolerance.Error(key, fmt::format("is {}", *value), "a value >= 0");
  }
  problem_.has_tolerance_override = true;
  return Status::Ok();
}

Status Loader::LoadCost() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("cost", true, &table));
  TableReader cost(file_, *table, "cost");
  KF_RETURN_IF_ERROR(cost.CheckKeys({"flops", "bytes"}));
  KF_RETURN_IF_ERROR(LoadCostExpression(cost, "flops", ExprKind::kFlops, &problem_.flops_expr));
  return LoadCostExpression(cost, "bytes", ExprKind::kBytes, &problem_.bytes_expr);
}

// A cost is a string expression; a plain number is taken as a constant expression.
Status Loader::LoadCostExpression(const TableReader& cost, std::string_view key, ExprKind kind,
                                  std::string* expr) {
  const toml::node* node = cost.table().get(key);
  const char* expected = "a string expression over the sizes, such as \"2 * rows * cols\"";
  if (node == nullptr) return cost.Error(key, "required key is missing", expected);
  if (node->is_string()) {
    *expr = node->as_string()->get();
  } else if (node->is_integer()) {
    *expr = std::to_string(node->as_integer()->get());
  } else if (node->is_floating_point()) {
    *expr = fmt::format("{}", node->as_floating_point()->get());
  } else {
    return ErrorAt(node, cost.Field(key), "got " + DescribeType(*node), expected);
  }
  return CheckExpression(node, cost.Field(key), *expr, kind);
}

Status Loader::LoadReference() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("reference", true, &table));
  TableReader reference(file_, *table, "reference");
  KF_RETURN_IF_ERROR(reference.CheckKeys({"source", "float64"}));
  std::string source;
  KF_RETURN_IF_ERROR(reference.ReadString("source", true, &source));
  KF_ASSIGN_OR_RETURN(problem_.reference,
                      ResolveFile(table->get("source"), reference.Field("source")));
  return reference.ReadBool("float64", &problem_.reference_float64);
}

Status Loader::LoadChecks() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("checks", false, &table));
  if (table == nullptr) return Status::Ok();
  TableReader checks(file_, *table, "checks");
  KF_RETURN_IF_ERROR(checks.CheckKeys({"magnitudes", "allow_fast_math", "nondeterministic"}));
  KF_RETURN_IF_ERROR(checks.ReadBool("allow_fast_math", &problem_.allow_fast_math));
  KF_RETURN_IF_ERROR(checks.ReadBool("nondeterministic", &problem_.nondeterministic));
  return LoadMagnitudes(checks);
}

Status Loader::LoadMagnitudes(const TableReader& checks) {
  const toml::array* array;
  const char* expected = "an array of numbers > 0, such as [1.0, 4.0]";
  KF_RETURN_IF_ERROR(checks.ReadArray("magnitudes", false, &array, expected));
  if (array == nullptr) return Status::Ok();
  if (array->empty()) return checks.Error("magnitudes", "the array is empty", expected);
  problem_.magnitudes.clear();
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node* node = array->get(i);
    std::string field = fmt::format("{}[{}]", checks.Field("magnitudes"), i);
    if (!node->is_integer() && !node->is_floating_point()) {
      return ErrorAt(node, field, "got " + DescribeType(*node), "a number > 0");
    }
    double value = node->value<double>().value_or(0.0);
    if (!(value > 0.0) || !std::isfinite(value)) {
      return ErrorAt(node, field, fmt::format("is {}", value), "a finite number > 0");
    }
    problem_.magnitudes.push_back(value);
  }
  return Status::Ok();
}

// [precision]: the policy a run uses unless --precision says otherwise, and the policies a run
// may choose. The declared policy must be one of the allowed ones.
Status Loader::LoadPrecision() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("precision", false, &table));
  if (table == nullptr) return Status::Ok();
  TableReader precision(file_, *table, "precision");
  KF_RETURN_IF_ERROR(precision.CheckKeys({"policy", "allowed"}));
  KF_RETURN_IF_ERROR(LoadAllowedPolicies(precision));
  std::string name;
  KF_RETURN_IF_ERROR(precision.ReadString("policy", false, &name));
  if (!table->contains("policy")) {
    // Without a declared policy the default is strict, or the first allowed one.
    if (!problem_.precision_allowed.empty())
      problem_.precision = problem_.precision_allowed.front();
    return Status::Ok();
  }
  Result<PrecisionPolicy> policy = ParsePrecisionPolicy(name);
  if (!policy.ok())
    return precision.Error("policy", fmt::format("unknown policy '{}'", name),
                           "one of " + PrecisionPolicyNames());
  problem_.precision = *policy;
  const std::vector<PrecisionPolicy>& allowed = problem_.precision_allowed;
  if (allowed.empty() || std::find(allowed.begin(), allowed.end(), *policy) != allowed.end())
    return Status::Ok();
  std::string names;
  for (PrecisionPolicy p : allowed)
    names += (names.empty() ? "" : ", ") + std::string(PrecisionPolicyName(p));
  return precision.Error("policy", fmt::format("'{}' is not among precision.allowed", name),
                         "one of " + names);
}

Status Loader::LoadAllowedPolicies(const TableReader& precision) {
  const toml::array* array;
  const std::string expected = "a non-empty array of policy names from " + PrecisionPolicyNames();
  KF_RETURN_IF_ERROR(precision.ReadArray("allowed", false, &array, expected));
  if (array == nullptr) return Status::Ok();
  if (array->empty()) return precision.Error("allowed", "the array is empty", expected);
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node* node = array->get(i);
    std::string field = fmt::format("{}[{}]", precision.Field("allowed"), i);
    if (!node->is_string())
      return ErrorAt(node, field, "got " + DescribeType(*node), "a policy name");
    Result<PrecisionPolicy> policy = ParsePrecisionPolicy(node->as_string()->get());
    if (!policy.ok()) {
      return ErrorAt(node, field, fmt::format("unknown policy '{}'", node->as_string()->get()),
                     "one of " + PrecisionPolicyNames());
    }
    std::vector<PrecisionPolicy>& allowed = problem_.precision_allowed;
    if (std::find(allowed.begin(), allowed.end(), *policy) == allowed.end())
      allowed.push_back(*policy);
  }
  return Status::Ok();
}

// Backend names are not checked against the backends built into kforge: problems may carry
// kernels for backends this build lacks.
Status CheckBackendName(const TableReader& table, const TableReader::Entry& entry) {
  if (IsLowerName(entry.key, /*allow_dash=*/false)) return Status::Ok();
  return table.Error(entry.key, fmt::format("'{}' is not a backend name", entry.key),
                     "lowercase letters, digits and '_', such as cpp or opencl");
}

Status Loader::LoadSeeds() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("seeds", false, &table));
  if (table == nullptr) return Status::Ok();
  TableReader seeds(file_, *table, "seeds");
  for (const TableReader::Entry& entry : seeds.Entries()) {
    KF_RETURN_IF_ERROR(CheckBackendName(seeds, entry));
    KF_ASSIGN_OR_RETURN(problem_.seeds[entry.key], ResolveFile(entry.node, seeds.Field(entry.key)));
  }
  return Status::Ok();
}

Status Loader::LoadCandidates() {
  const toml::table* table;
  KF_RETURN_IF_ERROR(root_.ReadTable("candidates", false, &table));
  if (table == nullptr) return Status::Ok();
  TableReader candidates(file_, *table, "candidates");
  for (const TableReader::Entry& entry : candidates.Entries()) {
    KF_RETURN_IF_ERROR(CheckBackendName(candidates, entry));
    const std::string field = candidates.Field(entry.key);
    if (!entry.node->is_array()) {
      return ErrorAt(
          entry.node, field, "got " + DescribeType(*entry.node),
          fmt::format("an array of file paths, such as {} = [\"candidates/a.cc\"]", entry.key));
    }
    std::vector<fs::path>& files = problem_.candidates[entry.key];
    const toml::array& array = *entry.node->as_array();
    for (size_t i = 0; i < array.size(); ++i) {
      KF_ASSIGN_OR_RETURN(fs::path file,
                          ResolveFile(array.get(i), fmt::format("{}[{}]", field, i)));
      files.push_back(std::move(file));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Problem> LoadProblem(const fs::path& file) {
  const std::string shown = file.string();
  if (file.extension() == ".py") return LoadPyTorchProblem(file);
  std::error_code ignored;
  if (!fs::is_regular_file(file, ignored)) {
    return Status::NotFound(fmt::format(
        "{}: no such file; expected a problem.toml (see docs/problem-format.md; `kforge "
        "problems` lists the bundled problems)",
        shown));
  }
  toml::table root;
  try {
    root = toml::parse_file(shown);
  } catch (const toml::parse_error& error) {
    const toml::source_position& at = error.source().begin;
    if (at.line == 0) {
      return Status::IoError(fmt::format("{}: cannot read: {}", shown, error.description()));
    }
    return Status::InvalidArgument(fmt::format("{}:{}: column {}: {}; expected valid TOML", shown,
                                               at.line, at.column, error.description()));
  }
  return Loader(file, root).Load();
}

}  // namespace kforge
