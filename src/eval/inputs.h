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

// One trial's inputs, in problem order.
std::vector<HostTensor> GenerateInputs(const BoundProblem& bound, uint64_t seed, double magnitude);

// The same tensor with floating values stored as float64 (integers unchanged): the reference's
// view of an input.
HostTensor AsFloat64(const HostTensor& t);

}  // namespace kforge

#endif  // KFORGE_EVAL_INPUTS_H_
