#include "eval/inputs.h"

#include <cmath>

#include "base/files.h"

namespace kforge {

namespace {

// splitmix64's finalizer.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// splitmix64: small, fast, identical everywhere, and easy to vectorise (draw i is a function of
// i alone), which is how python/kforge_inputs.py computes the same stream with numpy.
class Rng {
 public:
  explicit Rng(uint64_t state) : state_(state) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ull); }
  double Uniform() { return (Next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  double Normal() {
    double u1 = Uniform(), u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

double Draw(const Distribution& d, double magnitude, Rng& rng) {
  switch (d.kind) {
    case Distribution::Kind::kNormal: {
      double x = d.a + d.b * rng.Normal();
      if (d.positive) x = std::fabs(x);
      return x * magnitude;
    }
    case Distribution::Kind::kUniform:
      return (d.a + (d.b - d.a) * rng.Uniform()) * magnitude;
    case Distribution::Kind::kIntegers: {
      double span = d.b - d.a + 1;
      return d.a + std::floor(rng.Uniform() * span);  // integers are not scaled
    }
  }
  return 0;
}

}  // namespace

uint64_t KeyHash(const std::string& key) { return std::stoull(HashHex(key).substr(0, 15), nullptr, 16); }

HostTensor GenerateTensor(const TensorShape& shape, const Distribution& dist, const std::string& key,
                          uint64_t seed, double magnitude) {
  HostTensor t;
  t.shape = shape;
  Rng rng(Mix(KeyHash(key) ^ Mix(seed)));  // the formula of inputs.h, shared with the Python worker
  size_t n = static_cast<size_t>(t.shape.numel());
  std::vector<double> raw(n);
  for (size_t i = 0; i < n; ++i) raw[i] = Draw(dist, magnitude, rng);
  t.bytes.resize(t.shape.bytes());
  FromDouble(t.shape.dtype, raw.data(), n, t.bytes.data());
  t.values.resize(n);
  ToDouble(t.shape.dtype, t.bytes.data(), n, t.values.data());  // exactly what the kernel sees
  return t;
}

std::string InputKey(const BoundProblem& bound, size_t k) {
  return bound.problem->name + "/" + bound.problem->inputs[k].name;
}

std::vector<HostTensor> GenerateInputs(const BoundProblem& bound, uint64_t seed, double magnitude) {
  std::vector<HostTensor> out;
  for (size_t k = 0; k < bound.inputs.size(); ++k)
    out.push_back(GenerateTensor(bound.inputs[k], bound.problem->inputs[k].dist, InputKey(bound, k), seed, magnitude));
  return out;
}

HostTensor AsFloat64(const HostTensor& t) {
  if (!IsFloating(t.shape.dtype) || t.shape.dtype == DType::kFloat64) return t;
  HostTensor d = t;
  d.shape.dtype = DType::kFloat64;
  d.bytes.assign(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(double));
  return d;
}

}  // namespace kforge
