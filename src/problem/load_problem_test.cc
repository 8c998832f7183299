// Specifications of LoadProblem: what a valid file yields, and the message for each mistake.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kforge/problem.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kTestData = KFORGE_PROBLEM_TESTDATA;

// A small valid problem. Line numbers matter: tests below edit it and expect errors on them.
constexpr const char* kMinimal = R"(name = "scale"
[sizes]
n = { value = 1024 }
[[inputs]]
name = "x"
shape = ["n"]
dtype = "float32"
[[outputs]]
name = "y"
shape = ["n"]
dtype = "float32"
[cost]
flops = "n"
bytes = "8 * n"
[reference]
source = "reference.cc"
)";

// `text` with the first `from` replaced by `to`.
std::string With(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' is not in the text";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Each test gets a fresh problem folder holding reference.cc and seeds/naive.cc.
class LoadProblemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kforge_problem_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "seeds");
    Touch("reference.cc");
    Touch("seeds/naive.cc");
    file_ = (dir_ / "problem.toml").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Touch(const std::string& relative) { std::ofstream(dir_ / relative) << "// fixture\n"; }

  Result<Problem> LoadText(const std::string& text) {
    std::ofstream(file_) << text;
    return LoadProblem(file_);
  }

  // The message of a load that must fail, with the file name replaced by "FILE".
  std::string ErrorOf(const std::string& text) {
    Result<Problem> problem = LoadText(text);
    EXPECT_FALSE(problem.ok()) << "loaded:\n" << text;
    if (problem.ok()) return "";
    std::string message = problem.status().message();
    EXPECT_EQ(message.rfind(file_ + ":", 0), 0u) << message;
    if (message.rfind(file_, 0) == 0) message.replace(0, file_.size(), "FILE");
    return message;
  }

  fs::path dir_;
  std::string file_;
};

// The full example, testdata/softmax, loaded once per test.
class FullExampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Problem> loaded = LoadProblem(kTestData / "softmax" / "problem.toml");
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    problem_ = *loaded;
  }
  const fs::path dir_ = fs::absolute(kTestData / "softmax").lexically_normal();
  Problem problem_;
};

TEST_F(FullExampleTest, ItLoadsTheNameAndAbsolutePaths) {
  const Problem& p = problem_;
  const fs::path& dir = dir_;
  EXPECT_EQ(p.path, dir / "problem.toml");
  EXPECT_EQ(p.dir, dir);
  EXPECT_EQ(p.name, "softmax");
  EXPECT_EQ(p.description, "Row-wise softmax over the last dimension of a 2-D tensor.");
}

TEST_F(FullExampleTest, ItLoadsSizesInFileOrder) {
  const Problem& p = problem_;
  ASSERT_EQ(p.sizes.size(), 2u);  // in file order, not sorted
  EXPECT_EQ(p.sizes[0].name, "rows");
  EXPECT_EQ(p.sizes[0].value, 1024);
  EXPECT_EQ(p.sizes[0].min, 1);
  EXPECT_EQ(p.sizes[0].multiple_of, 1);
  EXPECT_EQ(p.sizes[0].quick, 64);
  EXPECT_EQ(p.sizes[1].name, "cols");
  EXPECT_EQ(p.sizes[1].quick, 100);
}

TEST_F(FullExampleTest, ItLoadsTensorsWithTheirDistributions) {
  const Problem& p = problem_;
  ASSERT_EQ(p.inputs.size(), 4u);
  EXPECT_EQ(p.inputs[0].name, "x");
  EXPECT_EQ(p.inputs[0].shape, (std::vector<std::string>{"rows", "cols"}));
  EXPECT_EQ(p.inputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(p.inputs[0].dist.kind, Distribution::Kind::kNormal);
  EXPECT_EQ(p.inputs[0].dist.a, 0.5);
  EXPECT_EQ(p.inputs[0].dist.b, 2.0);
  EXPECT_FALSE(p.inputs[0].dist.positive);
  EXPECT_EQ(p.inputs[1].shape, (std::vector<std::string>{"1"}));
  EXPECT_TRUE(p.inputs[1].dist.positive);
  EXPECT_EQ(p.inputs[2].dtype, DType::kInt32);
  EXPECT_EQ(p.inputs[2].dist.kind, Distribution::Kind::kIntegers);
  EXPECT_EQ(p.inputs[2].dist.a, 0.0);
  EXPECT_EQ(p.inputs[2].dist.b, 1.0);
  EXPECT_EQ(p.inputs[3].dtype, DType::kBFloat16);
  EXPECT_EQ(p.inputs[3].dist.kind, Distribution::Kind::kUniform);
  EXPECT_EQ(p.inputs[3].dist.a, -1.0);
  EXPECT_EQ(p.inputs[3].dist.b, 1.5);
}

TEST_F(FullExampleTest, ItLoadsAttributesTolerancesCostsReferenceChecksAndKernels) {
  const Problem& p = problem_;
  const fs::path& dir = dir_;
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.outputs[0].name, "y");
  EXPECT_EQ(p.outputs[0].shape, (std::vector<std::string>{"rows", "cols"}));

  ASSERT_EQ(p.attrs.size(), 2u);  // in file order
  EXPECT_EQ(p.attrs[0].name, "eps");
  EXPECT_EQ(p.attrs[0].value, 1e-5);
  EXPECT_FALSE(p.attrs[0].is_integer);
  EXPECT_EQ(p.attrs[1].name, "axis");
  EXPECT_EQ(p.attrs[1].value, 1.0);
  EXPECT_TRUE(p.attrs[1].is_integer);

  EXPECT_TRUE(p.has_tolerance_override);
  EXPECT_EQ(p.tolerance_override.atol, 1e-4);
  EXPECT_EQ(p.tolerance_override.rtol, 2e-4);
  EXPECT_EQ(p.tolerance_override.rms, 0.0);
  EXPECT_EQ(p.flops_expr, "5 * rows * cols");
  EXPECT_EQ(p.bytes_expr, "8 * rows * cols + 4 * rows");
  EXPECT_EQ(p.reference, dir / "reference.cc");
  EXPECT_FALSE(p.reference_float64);
  EXPECT_EQ(p.magnitudes, (std::vector<double>{1.0, 4.0, 0.25}));
  EXPECT_TRUE(p.allow_fast_math);
  EXPECT_TRUE(p.nondeterministic);

  EXPECT_EQ(p.seeds.size(), 2u);
  EXPECT_EQ(p.seeds.at("cpp"), dir / "seeds/naive.cc");
  EXPECT_EQ(p.seeds.at("opencl"), dir / "seeds/naive_opencl.cpp");
  EXPECT_EQ(p.candidates.at("cpp"), (std::vector<fs::path>{dir / "candidates/blocked.cc",
                                                           dir / "candidates/vectorized.cc"}));
  EXPECT_TRUE(p.candidates.at("opencl").empty());
}

TEST_F(FullExampleTest, ItBindsAtItsDefaults) {
  Result<BoundProblem> bound = Bind(problem_, {});
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_EQ(bound->bytes, 8.0 * 1024 * 1024 + 4 * 1024);
}

TEST_F(LoadProblemTest, GivenAMinimalFileItAppliesTheDefaults) {
  Result<Problem> loaded = LoadText(kMinimal);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Problem& p = *loaded;
  EXPECT_EQ(p.description, "");
  EXPECT_EQ(p.sizes[0].min, 1);
  EXPECT_EQ(p.sizes[0].multiple_of, 1);
  EXPECT_EQ(p.sizes[0].quick, 0);
  EXPECT_EQ(p.inputs[0].dist.kind, Distribution::Kind::kNormal);
  EXPECT_EQ(p.inputs[0].dist.a, 0.0);
  EXPECT_EQ(p.inputs[0].dist.b, 1.0);
  EXPECT_TRUE(p.attrs.empty());
  EXPECT_FALSE(p.has_tolerance_override);
  EXPECT_TRUE(p.reference_float64);
  EXPECT_EQ(p.magnitudes, (std::vector<double>{1.0, 4.0}));
  EXPECT_FALSE(p.allow_fast_math);
  EXPECT_FALSE(p.nondeterministic);
  EXPECT_TRUE(p.seeds.empty());
  EXPECT_TRUE(p.candidates.empty());
}

TEST_F(LoadProblemTest, GivenAMissingFileItIsNotFound) {
  Result<Problem> loaded = LoadProblem(dir_ / "nothing.toml");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kNotFound);
  EXPECT_NE(loaded.status().message().find("nothing.toml: no such file"), std::string::npos);
}

TEST_F(LoadProblemTest, GivenATomlSyntaxErrorItGivesTheLineAndColumn) {
  std::string file = (kTestData / "syntax_error" / "problem.toml").string();
  Result<Problem> loaded = LoadProblem(file);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(loaded.status().message(),
            file +
                ":4: column 20: Error while parsing inline table: expected key or closing "
                "'}', saw '\\n'; expected valid TOML");
}

TEST_F(LoadProblemTest, GivenADuplicateKeyItIsASyntaxError) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "[sizes]", "name = \"again\"\n[sizes]")),
            "FILE:2: column 8: Error while parsing key-value pair: cannot redefine existing "
            "string 'name'; expected valid TOML");
}

TEST_F(LoadProblemTest, GivenAnUnknownTopLevelKeyItListsTheAllowedKeys) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "[sizes]", "descripton = \"typo\"\n[sizes]")),
            "FILE:2: descripton: unknown key 'descripton'; expected one of name, description, "
            "sizes, inputs, outputs, attrs, tolerance, precision, cost, reference, checks, seeds, "
            "candidates");
}

TEST_F(LoadProblemTest, GivenAnUnknownKeyInATensorItNamesTheTensor) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "dtype = \"float32\"", "dtyp = \"float32\"")),
            "FILE:7: inputs[0].dtyp: unknown key 'dtyp'; expected one of name, shape, dtype, dist");
  EXPECT_EQ(ErrorOf(With(kMinimal, "name = \"y\"", "name = \"y\"\ndist = { kind = \"normal\" }")),
            "FILE:10: outputs[0].dist: unknown key 'dist'; expected one of name, shape, dtype");
}

TEST_F(LoadProblemTest, GivenAnUnknownKeyInASizeItNamesTheSize) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "{ value = 1024 }", "{ value = 1024, multiple = 2 }")),
            "FILE:3: sizes.n.multiple: unknown key 'multiple'; expected one of value, min, "
            "multiple_of, quick");
}

TEST_F(LoadProblemTest, GivenAnUnknownDtypeItListsTheDtypes) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "dtype = \"float32\"", "dtype = \"f32\"")),
            "FILE:7: inputs[0].dtype: unknown dtype 'f32'; expected one of float32, float64, "
            "float16, bfloat16, int32, int64");
}

TEST_F(LoadProblemTest, GivenAMissingRequiredKeyItPointsAtItsTable) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "name = \"scale\"", "")),
            "FILE:1: name: required key is missing; expected a string");
  EXPECT_EQ(ErrorOf(With(kMinimal, "bytes = \"8 * n\"", "")),
            "FILE:12: cost.bytes: required key is missing; expected a string expression over the "
            "sizes, such as \"2 * rows * cols\"");
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "")),
            "FILE:4: inputs[0].shape: required key is missing; expected an array of dimensions "
            "such as [\"rows\", 4]");
}

TEST_F(LoadProblemTest, GivenNoInputsItAsksForInputsTables) {
  std::string text =
      With(kMinimal, "[[inputs]]\nname = \"x\"\nshape = [\"n\"]\ndtype = \"float32\"\n", "");
  EXPECT_EQ(ErrorOf(text),
            "FILE:1: inputs: required key is missing; expected one or more [[inputs]] tables");
  EXPECT_EQ(ErrorOf(With(text, "[sizes]", "inputs = []\n[sizes]")),
            "FILE:2: inputs: the array is empty; expected one or more [[inputs]] tables");
}

TEST_F(LoadProblemTest, GivenATableWhereTablesOfAnArrayBelongItSaysSo) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "[[outputs]]", "[outputs]")),
            "FILE:8: outputs: got a table; expected one or more [[outputs]] tables");
}

TEST_F(LoadProblemTest, GivenAWrongTypeItSaysWhatItGotAndExpected) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "name = \"x\"", "name = 3")),
            "FILE:5: inputs[0].name: got an integer; expected a string");
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = \"n\"")),
            "FILE:6: inputs[0].shape: got a string; expected an array of dimensions such as "
            "[\"rows\", 4]");
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [\"n\", 2.5]")),
            "FILE:6: inputs[0].shape[1]: got a float; expected an integer or a string expression "
            "over the sizes");
  EXPECT_EQ(ErrorOf(With(kMinimal, "n = { value = 1024 }", "n = 1024")),
            "FILE:3: sizes.n: got an integer; expected a table such as n = { value = 1024 }");
}

TEST_F(LoadProblemTest, GivenAnUnknownNameInAShapeItListsTheSizes) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [\"n\", \"2 * m\"]")),
            "FILE:6: inputs[0].shape[1]: unknown name 'm' in '2 * m'; expected one of: n");
}

TEST_F(LoadProblemTest, GivenABadShapeExpressionItQuotesIt) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [\"n +\"]")),
            "FILE:6: inputs[0].shape[0]: unexpected end of 'n +'; expected a number, a name or "
            "'('");
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [\"n - 1024\"]")),
            "FILE:6: inputs[0].shape[0]: 'n - 1024' is 0; expected a dimension >= 1");
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [0]")),
            "FILE:6: inputs[0].shape[0]: '0' is 0; expected a dimension >= 1");
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [\"n / 3\"]")),
            "FILE:6: inputs[0].shape[0]: 1024 / 3 does not divide exactly in 'n / 3'; expected "
            "whole numbers in a shape (give the size a multiple_of)");
}

TEST_F(LoadProblemTest, GivenAShapeThatBreaksAtTheHiddenVariantItSaysWhichSizes) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [\"n / 2\"]")),
            "FILE:6: inputs[0].shape[0]: at the hidden variant sizes (n=767): 767 / 2 does not "
            "divide exactly in 'n / 2'; expected whole numbers in a shape (give the size a "
            "multiple_of)");
  // With multiple_of = 2 the variant is 766, and the shape is fine.
  EXPECT_TRUE(LoadText(With(With(kMinimal, "shape = [\"n\"]", "shape = [\"n / 2\"]"),
                            "{ value = 1024 }", "{ value = 1024, multiple_of = 2 }"))
                  .ok());
}

TEST_F(LoadProblemTest, GivenAShapeThatBreaksAtTheQuickSizesItSaysSo) {
  EXPECT_EQ(ErrorOf(With(With(kMinimal, "shape = [\"n\"]", "shape = [\"n - 63\"]"),
                         "{ value = 1024 }", "{ value = 1024, quick = 63 }")),
            "FILE:6: inputs[0].shape[0]: at the quick sizes (n=63): 'n - 63' is 0; expected a "
            "dimension >= 1");
}

TEST_F(LoadProblemTest, GivenTooManyDimensionsItGivesTheLimit) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "shape = [\"n\"]", "shape = [1, 1, 1, 1, 1, 1, 1, 1, 1]")),
            "FILE:6: inputs[0].shape: has 9 dimensions; expected at most 8");
}

TEST_F(LoadProblemTest, GivenADuplicateNameItPointsAtBothDeclarations) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "name = \"y\"", "name = \"x\"")),
            "FILE:9: outputs[0].name: 'x' is already declared by inputs[0].name (line 5); "
            "expected names unique across sizes, inputs, outputs and attrs");
  EXPECT_EQ(ErrorOf(With(kMinimal, "[cost]", "[attrs]\nn = 2\n[cost]")),
            "FILE:13: attrs.n: 'n' is already declared by sizes.n (line 3); expected names "
            "unique across sizes, inputs, outputs and attrs");
}

TEST_F(LoadProblemTest, GivenANameThatIsNotAnIdentifierItSaysWhatIsAllowed) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "name = \"x\"", "name = \"my-x\"")),
            "FILE:5: inputs[0].name: 'my-x' is not a C identifier; expected letters, digits and "
            "'_', not starting with a digit");
  EXPECT_EQ(ErrorOf(With(kMinimal, "name = \"x\"", "name = \"float\"")),
            "FILE:5: inputs[0].name: 'float' is a C or C++ keyword; expected another name");
  EXPECT_EQ(ErrorOf(With(kMinimal, "[cost]", "[attrs]\n2pi = 6.28\n[cost]")),
            "FILE:13: attrs.2pi: '2pi' is not a C identifier; expected letters, digits and '_', "
            "not starting with a digit");
}

TEST_F(LoadProblemTest, GivenABadProblemNameItGivesThePattern) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "name = \"scale\"", "name = \"Scale It\"")),
            "FILE:1: name: 'Scale It' is not a valid problem name; expected lowercase letters, "
            "digits, '_' and '-' ([a-z0-9_-]+)");
  EXPECT_TRUE(LoadText(With(kMinimal, "name = \"scale\"", "name = \"scale-2_b\"")).ok());
}

TEST_F(LoadProblemTest, GivenIllegalSizeValuesItSaysWhatIsLegal) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "{ value = 1024 }", "{ value = 1024, min = 0 }")),
            "FILE:3: sizes.n.min: is 0; expected an integer >= 1");
  EXPECT_EQ(ErrorOf(With(kMinimal, "{ value = 1024 }", "{ value = 8, min = 16 }")),
            "FILE:3: sizes.n.value: 8 is below min (16); expected a value >= 16");
  EXPECT_EQ(ErrorOf(With(kMinimal, "{ value = 1024 }", "{ value = 1000, multiple_of = 16 }")),
            "FILE:3: sizes.n.value: 1000 is not a multiple of 16; expected a multiple of "
            "multiple_of (16)");
  EXPECT_EQ(ErrorOf(With(kMinimal, "{ value = 1024 }",
                         "{ value = 1024, multiple_of = 16, quick = 100 }")),
            "FILE:3: sizes.n.quick: 100 is not a multiple of 16; expected a multiple of "
            "multiple_of (16)");
  EXPECT_EQ(ErrorOf(With(kMinimal, "{ value = 1024 }", "{ value = 1024.0 }")),
            "FILE:3: sizes.n.value: got a float; expected an integer");
}

TEST_F(LoadProblemTest, GivenBadDistributionsItNamesTheField) {
  auto with_dist = [](const std::string& dist) {
    return With(kMinimal, "dtype = \"float32\"", "dtype = \"float32\"\ndist = " + dist);
  };
  EXPECT_EQ(ErrorOf(with_dist("{ kind = \"gaussian\" }")),
            "FILE:8: inputs[0].dist.kind: unknown distribution 'gaussian'; expected one of "
            "normal, uniform, integers");
  EXPECT_EQ(ErrorOf(with_dist("{ kind = \"uniform\", low = 1, high = 1 }")),
            "FILE:8: inputs[0].dist.high: 1 is not above low (1); expected low < high");
  EXPECT_EQ(ErrorOf(with_dist("{ kind = \"uniform\", low = 0, high = 1, positive = true }")),
            "FILE:8: inputs[0].dist.positive: unknown key 'positive'; expected one of kind, low, "
            "high");
  EXPECT_EQ(ErrorOf(with_dist("{ kind = \"normal\", std = 0 }")),
            "FILE:8: inputs[0].dist.std: is 0; expected a value > 0");
  EXPECT_EQ(ErrorOf(with_dist("{ kind = \"integers\", low = 0.5, high = 3 }")),
            "FILE:8: inputs[0].dist.low: got a float; expected an integer");
  EXPECT_EQ(ErrorOf(with_dist("{ kind = \"integers\", low = 5, high = 3 }")),
            "FILE:8: inputs[0].dist.high: 3 is below low (5); expected low <= high");
  EXPECT_EQ(ErrorOf(with_dist("{ mean = 1.0 }")),
            "FILE:8: inputs[0].dist.kind: required key is missing; expected a string");
}

TEST_F(LoadProblemTest, GivenAnIntegerInputItRequiresAnIntegersDistribution) {
  std::string int_input = With(kMinimal, "dtype = \"float32\"", "dtype = \"int32\"");
  EXPECT_EQ(ErrorOf(int_input),
            "FILE:4: inputs[0].dist: an int32 input needs a distribution; expected dist = { kind "
            "= \"integers\", low = ..., high = ... }");
  EXPECT_EQ(ErrorOf(With(int_input, "dtype = \"int32\"",
                         "dtype = \"int32\"\ndist = { kind = \"normal\" }")),
            "FILE:8: inputs[0].dist.kind: 'normal' draws fractions but the dtype is int32; "
            "expected kind = \"integers\"");
  EXPECT_EQ(ErrorOf(With(int_input, "dtype = \"int32\"",
                         "dtype = \"int32\"\ndist = { kind = \"integers\", low = 0, high = "
                         "3000000000 }")),
            "FILE:8: inputs[0].dist.high: is outside the int32 range; expected values in "
            "[-2147483648, 2147483647]");
  EXPECT_TRUE(LoadText(With(int_input, "dtype = \"int32\"",
                            "dtype = \"int32\"\ndist = { kind = \"integers\", low = 0, high = 9 }"))
                  .ok());
}

TEST_F(LoadProblemTest, GivenBadTolerancesItSaysWhatIsExpected) {
  auto with_tolerance = [](const std::string& body) {
    return With(kMinimal, "[cost]", "[tolerance]\n" + body + "[cost]");
  };
  EXPECT_EQ(ErrorOf(with_tolerance("atol = -1e-4\nrtol = 0\nrms = 0\n")),
            "FILE:13: tolerance.atol: is -0.0001; expected a value >= 0");
  EXPECT_EQ(ErrorOf(with_tolerance("atol = 1e-4\nrtol = 1e-4\n")),
            "FILE:12: tolerance.rms: required key is missing; expected atol, rtol and rms "
            "together (or no [tolerance] for the defaults)");
  EXPECT_EQ(ErrorOf(with_tolerance("atol = 0\nrtol = 0\nrms = 0\nrel = 1\n")),
            "FILE:16: tolerance.rel: unknown key 'rel'; expected one of atol, rtol, rms");
  EXPECT_EQ(ErrorOf(with_tolerance("atol = \"tiny\"\nrtol = 0\nrms = 0\n")),
            "FILE:13: tolerance.atol: got a string; expected a number");
}

TEST_F(LoadProblemTest, GivenAPrecisionTableItReadsThePolicyAndTheAllowedOnes) {
  Result<Problem> plain = LoadText(kMinimal);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->precision, PrecisionPolicy::kStrict);
  EXPECT_TRUE(plain->precision_allowed.empty());
  Result<Problem> p =
      LoadText(With(kMinimal, "[cost]",
                    "[precision]\npolicy = \"tf32\"\nallowed = [\"strict\", \"tf32\"]\n[cost]"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->precision, PrecisionPolicy::kTf32);
  EXPECT_EQ(p->precision_allowed,
            (std::vector<PrecisionPolicy>{PrecisionPolicy::kStrict, PrecisionPolicy::kTf32}));
  Result<Problem> first =
      LoadText(With(kMinimal, "[cost]", "[precision]\nallowed = [\"bf16\", \"fp16\"]\n[cost]"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->precision, PrecisionPolicy::kBf16);  // no policy: the first allowed one
}

TEST_F(LoadProblemTest, GivenBadPrecisionItNamesTheValidPolicies) {
  auto with_precision = [](const std::string& body) {
    return With(kMinimal, "[cost]", "[precision]\n" + body + "[cost]");
  };
  EXPECT_EQ(
      ErrorOf(with_precision("policy = \"fast\"\n")),
      "FILE:13: precision.policy: unknown policy 'fast'; expected one of strict, tf32, bf16, fp16, "
      "kernelbench");
  EXPECT_EQ(ErrorOf(with_precision("policy = \"bf16\"\nallowed = [\"strict\", \"tf32\"]\n")),
            "FILE:13: precision.policy: 'bf16' is not among precision.allowed; expected one of "
            "strict, tf32");
  EXPECT_EQ(ErrorOf(with_precision("allowed = [\"strict\", \"fp8\"]\n")),
            "FILE:13: precision.allowed[1]: unknown policy 'fp8'; expected one of strict, tf32, "
            "bf16, fp16, "
            "kernelbench");
  EXPECT_EQ(ErrorOf(with_precision("allowed = []\n")),
            "FILE:13: precision.allowed: the array is empty; expected a non-empty array of policy "
            "names from "
            "strict, tf32, bf16, fp16, kernelbench");
  EXPECT_EQ(ErrorOf(with_precision("rule = 1\n")),
            "FILE:13: precision.rule: unknown key 'rule'; expected one of policy, allowed");
}

TEST_F(LoadProblemTest, GivenBadCostsItChecksThemAtTheDefaults) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "flops = \"n\"", "flops = \"n * k\"")),
            "FILE:13: cost.flops: unknown name 'k' in 'n * k'; expected one of: n");
  EXPECT_EQ(ErrorOf(With(kMinimal, "bytes = \"8 * n\"", "bytes = \"n - n\"")),
            "FILE:14: cost.bytes: 'n - n' is 0; expected a value > 0");
  EXPECT_EQ(ErrorOf(With(kMinimal, "[cost]\nflops = \"n\"\nbytes = \"8 * n\"\n", "")),
            "FILE:1: cost: required key is missing; expected a table ([cost])");
  Result<Problem> numeric = LoadText(With(kMinimal, "flops = \"n\"", "flops = 0"));
  ASSERT_TRUE(numeric.ok()) << numeric.status().message();
  EXPECT_EQ(numeric->flops_expr, "0");
}

TEST_F(LoadProblemTest, GivenAMissingReferenceFileItIsNotFoundAndNamesTheField) {
  Result<Problem> loaded = LoadText(With(kMinimal, "reference.cc", "ref.cc"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(loaded.status().message(),
            file_ + ":16: reference.source: file 'ref.cc' does not exist (looked for " +
                (fs::absolute(dir_) / "ref.cc").string() +
                "); expected a file path relative to the problem folder");
}

TEST_F(LoadProblemTest, GivenAMissingSeedOrCandidateFileItNamesTheField) {
  std::string text = std::string(kMinimal) +
                     "[seeds]\ncpp = \"seeds/naive.cc\"\nopencl = \"seeds/naive_opencl.cpp\"\n";
  EXPECT_NE(ErrorOf(text).find("FILE:19: seeds.opencl: file 'seeds/naive_opencl.cpp' does not "
                               "exist"),
            std::string::npos);
  text = std::string(kMinimal) + "[candidates]\ncpp = [\"seeds/naive.cc\", \"gone.cc\"]\n";
  EXPECT_NE(ErrorOf(text).find("FILE:18: candidates.cpp[1]: file 'gone.cc' does not exist"),
            std::string::npos);
  text = std::string(kMinimal) + "[candidates]\ncpp = \"seeds/naive.cc\"\n";
  EXPECT_EQ(ErrorOf(text),
            "FILE:18: candidates.cpp: got a string; expected an array of file paths, such as cpp "
            "= [\"candidates/a.cc\"]");
  text = std::string(kMinimal) + "[seeds]\n\"Open CL\" = \"seeds/naive.cc\"\n";
  EXPECT_EQ(ErrorOf(text),
            "FILE:18: seeds.Open CL: 'Open CL' is not a backend name; expected lowercase letters, "
            "digits and '_', such as cpp or opencl");
}

TEST_F(LoadProblemTest, GivenBadChecksItNamesTheField) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[checks]\nmagnitudes = [1.0, 0]\n"),
            "FILE:18: checks.magnitudes[1]: is 0; expected a finite number > 0");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[checks]\nmagnitudes = []\n"),
            "FILE:18: checks.magnitudes: the array is empty; expected an array of numbers > 0, "
            "such as [1.0, 4.0]");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[checks]\nfast_math = true\n"),
            "FILE:18: checks.fast_math: unknown key 'fast_math'; expected one of magnitudes, "
            "allow_fast_math, nondeterministic");
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "[checks]\nallow_fast_math = 1\n"),
            "FILE:18: checks.allow_fast_math: got an integer; expected true or false");
}

TEST_F(LoadProblemTest, GivenAnAttributeThatIsNotANumberItSaysSo) {
  EXPECT_EQ(ErrorOf(With(kMinimal, "[cost]", "[attrs]\nmode = \"fast\"\n[cost]")),
            "FILE:13: attrs.mode: got a string; expected a number (an integer literal makes an "
            "integer attribute)");
}

}  // namespace
}  // namespace kforge
