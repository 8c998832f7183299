// Deterministic input generation for trials. The same (problem, tensor, seed, magnitude) gives
// the same values on every machine (own generator, not <random>'s distributions).
#ifndef KFORGE_EVAL_INPUTS_H_
#define KFORGE_EVAL_INPUTS_H_

#include <string>
#include <vector>

#include "kforge/problem.h"

namespace kforge {

struct HostTensor {
  TensorShape shape;
  std::string bytes;            // in shape.dtype
  std::vector<double> values;   // the same values, exactly, as double
};

// One tensor: `key` names it ("<problem>/<input>"), and (key, seed) fixes every value. The
// worker draws fresh timed inputs with this same function, so the orchestrator can regenerate
// any timed run's inputs from its seed.
HostTensor GenerateTensor(const TensorShape& shape, const Distribution& dist, const std::string& key,
                          uint64_t seed, double magnitude);

// The key GenerateInputs uses for input `k` of `bound`.
std::string InputKey(const BoundProblem& bound, size_t k);

// One trial's inputs, in problem order.
std::vector<HostTensor> GenerateInputs(const BoundProblem& bound, uint64_t seed, double magnitude);

// The same tensor with floating values stored as float64 (integers unchanged): the reference's
// view of an input.
HostTensor AsFloat64(const HostTensor& t);

}  // namespace kforge

#endif  // KFORGE_EVAL_INPUTS_H_
