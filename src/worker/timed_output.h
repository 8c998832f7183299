// What every timed run's output must be, checked by the worker's supervisor (a process that
// never loads candidate code) on the bytes the candidate's process sent back.
#ifndef KFORGE_WORKER_TIMED_OUTPUT_H_
#define KFORGE_WORKER_TIMED_OUTPUT_H_

#include <string>

#include "kforge/tensor.h"

namespace kforge {

// "" when `data` (shape.bytes() bytes) is fully written (no element still holds poison pattern
// `which`, PoisonPattern) and, with `finite` (the check references had no NaN/Inf), has no
// NaN or Inf; else what is wrong, naming the first such element.
std::string CheckTimedOutput(const TensorShape& shape, const char* data, int which, bool finite);

}  // namespace kforge

#endif  // KFORGE_WORKER_TIMED_OUTPUT_H_
