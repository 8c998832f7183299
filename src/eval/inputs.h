// Deterministic input generation for trials. The same (problem, tensor, seed, magnitude) gives
// the same values on every machine and in both workers (own generator, not <random>'s
// distributions). Pure functions: safe from any thread.
#ifndef KFORGE_EVAL_INPUTS_H_
#define KFORGE_EVAL_INPUTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kforge/problem.h"

namespace kforge {

struct HostTensor {
  HostTensor() = default;
  HostTensor(TensorShape s, std::string b) : shape(std::move(s)), data(std::make_shared<const std::string>(std::move(b))) {}
  HostTensor(TensorShape s, std::shared_ptr<const std::string> b) : shape(std::move(s)), data(std::move(b)) {}

  TensorShape shape;
  // The bytes, in shape.dtype. Shared and never changed once made: copies of a trial's inputs
  // into a job, and the sets that share a model's parameters (256 MB for an 8192x8192 weight),
  // cost no copy.
  std::shared_ptr<const std::string> data;
  const std::string& bytes() const {
    static const std::string empty;
    return data ? *data : empty;
  }
  // The same values, exactly, as double: converted when asked (only a reference computed in
  // float64 needs them; 14 check trials of 2M elements each spent 16 MB and 20 ms on it).
  std::vector<double> Values() const;
};

// The generator, exactly (python/kforge_inputs.py implements the same formula, so that the
// Python worker's child draws the values this function does):
//
//   mix(z)     = splitmix64's finalizer: z ^= z >> 30; z *= 0xbf58476d1ce4e5b9;
//                z ^= z >> 27; z *= 0x94d049bb133111eb; z ^= z >> 31   (uint64, wrapping)
//   key_hash   = KeyHash(key): the top 60 bits of XXH3-64 of the key's bytes
//   state      = mix(key_hash ^ mix(seed))
//   draw i     = mix(state + (i + 1) * 0x9e3779b97f4a7c15)   (i = 0, 1, ...)
//   uniform u  = (draw >> 11) * 2^-53, in [0, 1); open u = ((draw >> 11) + 1) * 2^-53, in (0, 1]
//   normal     = Box-Muller on a pair of draws: r = sqrt(-2 ln(open u1)), t = 2 pi u2; element
//                2k is r cos t and element 2k + 1 is r sin t (draws 2k and 2k + 1; an odd
//                count ends with a cos whose sin is dropped), where ln, cos and sin are the
//                polynomials of inputs.cc (Ln, CosSin2Pi), evaluated with +, -, *, / and sqrt,
//                each rounded once (inputs.cc is built with -ffp-contract=off)
//   element    = normal: (a + b * normal), |.| when `positive`, times magnitude;
//                uniform: (a + (b - a) * u) * magnitude; integers: a + floor(u * (b - a + 1)),
//                never scaled; then cast from float64 to the dtype, round to nearest
//                (float16 and bfloat16 through float32, as FromDouble does).
//
// Elements are drawn in row-major order. No libm function is involved, and IEEE rounds every
// operation used exactly, so numpy draws the same bits (the test checks byte equality). The
// drawing loop is compiled for x86-64-v4 (AVX-512), v3 (AVX2) and the baseline, picked at load
// time; vector width changes no bit, since every operation still rounds once (no contraction).
// kforge_inputs_bench on the quiet 2-core VM (AVX-512), 2^21 float32 normals: 52 ms with one
// thread and the baseline build, 14.9 ms with the v4 clone, 8.2 ms with two threads; uniforms
// 15.7, 9.8 and 5.2 ms. (The libm Box-Muller before these, under load: 143-320 ms.)
uint64_t KeyHash(const std::string& key);

// One tensor: `key` names it ("<problem>/<input>"), and (key, seed) fixes every value. The
// workers draw fresh timed inputs with this same generator (kforge-worker with this function,
// the Python worker from KeyHash(key)), so the orchestrator can regenerate any timed run's
// inputs from its seed.
HostTensor GenerateTensor(const TensorShape& shape, const Distribution& dist, const std::string& key,
                          uint64_t seed, double magnitude);
// Only the bytes (what kforge-worker's child uploads for a fresh timed run). Large tensors are
// drawn by up to 8 threads ($KFORGE_INPUT_THREADS), all joined before it returns; the bytes are
// the same for any number.
std::string GenerateBytes(const TensorShape& shape, const Distribution& dist, const std::string& key, uint64_t seed,
                          double magnitude);
// The same bytes into `out` (shape.bytes() of them), which a caller reuses from run to run: no
// allocation, no page faults on a fresh 8 MB buffer per timed run.
void GenerateBytesInto(const TensorShape& shape, const Distribution& dist, const std::string& key, uint64_t seed,
                       double magnitude, char* out);

// The key GenerateInputs uses for input `k` of `bound`.
std::string InputKey(const BoundProblem& bound, size_t k);

// One trial's inputs, in problem order.
std::vector<HostTensor> GenerateInputs(const BoundProblem& bound, uint64_t seed, double magnitude);

// The same tensor with floating values stored as float64 (integers unchanged): the reference's
// view of an input.
HostTensor AsFloat64(const HostTensor& t);

}  // namespace kforge

#endif  // KFORGE_EVAL_INPUTS_H_
