// The supervisor's check of every timed run's output (worker/timed_output.h).
#include "worker/timed_output.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <vector>

#include "worker/protocol.h"

namespace kforge {
namespace {

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST(TimedOutputTest, GivenAWrittenFiniteOutputThereIsNothingToSay) {
  std::vector<float> y(5000, 1.5f);
  TensorShape s{"y", DType::kFloat32, {5000}};
  EXPECT_EQ(CheckTimedOutput(s, Bytes(y).data(), 0, true), "");
  EXPECT_EQ(CheckTimedOutput(s, Bytes(y).data(), 1, true), "");
}

TEST(TimedOutputTest, GivenAnElementLeftPoisonedItIsNamed) {
  std::vector<float> y(3000, 2.0f);
  unsigned char p[8];
  ASSERT_EQ(PoisonPattern(DType::kFloat32, 1, p), 4u);
  std::memcpy(&y[2049], p, 4);
  TensorShape s{"y", DType::kFloat32, {3000}};
  EXPECT_NE(CheckTimedOutput(s, Bytes(y).data(), 1, true).find("poison at element 2049"), std::string::npos);
  // The other run's pattern is not this run's poison, but it is a NaN.
  EXPECT_NE(CheckTimedOutput(s, Bytes(y).data(), 0, true).find("at element 2049 where the reference is finite"), std::string::npos);
}

// Every floating type: a NaN or an Inf anywhere (first block, a later block, the last element)
// is found at its own index, and only where the references were finite.
TEST(TimedOutputTest, GivenANanOrInfInAnyFloatingTypeTheFirstIsNamed) {
  const int64_t n = 2500;
  for (int64_t at : {int64_t{0}, int64_t{1500}, n - 1}) {
    std::vector<float> f(n, 0.25f);
    f[at] = std::numeric_limits<float>::infinity();
    std::vector<double> d(n, 0.25);
    d[at] = std::nan("");
    std::vector<uint16_t> h(n, 0x3c00);  // fp16 1.0
    h[at] = 0xfc00;                      // -Inf
    std::vector<uint16_t> b(n, 0x3f80);  // bf16 1.0
    b[at] = 0xff80;                      // -Inf (0x7fc1, a NaN, is a poison pattern)
    const std::string want = "at element " + std::to_string(at) + " where";
    EXPECT_NE(CheckTimedOutput({"y", DType::kFloat32, {n}}, Bytes(f).data(), 0, true).find(want), std::string::npos) << at;
    EXPECT_NE(CheckTimedOutput({"y", DType::kFloat64, {n}}, Bytes(d).data(), 0, true).find(want), std::string::npos) << at;
    EXPECT_NE(CheckTimedOutput({"y", DType::kFloat16, {n}}, Bytes(h).data(), 0, true).find(want), std::string::npos) << at;
    EXPECT_NE(CheckTimedOutput({"y", DType::kBFloat16, {n}}, Bytes(b).data(), 0, true).find(want), std::string::npos) << at;
    EXPECT_EQ(CheckTimedOutput({"y", DType::kFloat32, {n}}, Bytes(f).data(), 0, false), "");
  }
  // Large finite values are not Inf: fp16 65504, bf16's and float's largest.
  std::vector<uint16_t> h(10, 0x7bff), b(10, 0x7f7f);
  std::vector<float> f(10, std::numeric_limits<float>::max());
  EXPECT_EQ(CheckTimedOutput({"y", DType::kFloat16, {10}}, Bytes(h).data(), 0, true), "");
  EXPECT_EQ(CheckTimedOutput({"y", DType::kBFloat16, {10}}, Bytes(b).data(), 0, true), "");
  EXPECT_EQ(CheckTimedOutput({"y", DType::kFloat32, {10}}, Bytes(f).data(), 0, true), "");
}

// One pass finds both: a poisoned element outranks an earlier NaN (in an earlier block or the
// same one), as the two passes before it did; integers are checked for poison only.
TEST(TimedOutputTest, GivenANanBeforeAPoisonedElementThePoisonIsNamed) {
  unsigned char p[8];
  ASSERT_EQ(PoisonPattern(DType::kFloat32, 0, p), 4u);
  for (int64_t nan_at : {int64_t{10}, int64_t{3000}}) {
    std::vector<float> y(5000, 1.0f);
    y[nan_at] = std::nanf("");
    std::memcpy(&y[3100], p, 4);
    TensorShape s{"y", DType::kFloat32, {5000}};
    EXPECT_NE(CheckTimedOutput(s, Bytes(y).data(), 0, true).find("poison at element 3100"), std::string::npos) << nan_at;
    std::memcpy(&y[3100], &y[0], 4);  // written after all: the NaN is named
    EXPECT_NE(CheckTimedOutput(s, Bytes(y).data(), 0, true).find("at element " + std::to_string(nan_at) + " where"),
              std::string::npos)
        << nan_at;
  }
  unsigned char q[8];
  ASSERT_EQ(PoisonPattern(DType::kInt32, 1, q), 4u);
  std::vector<int32_t> k(2100, 7);
  std::memcpy(&k[2099], q, 4);
  EXPECT_NE(CheckTimedOutput({"k", DType::kInt32, {2100}}, Bytes(k).data(), 1, true).find("poison at element 2099"),
            std::string::npos);
  k[2099] = 0x7f800000;  // an int with a float's Inf bits is just an int
  EXPECT_EQ(CheckTimedOutput({"k", DType::kInt32, {2100}}, Bytes(k).data(), 1, true), "");
}

}  // namespace
}  // namespace kforge
