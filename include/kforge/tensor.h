// Element types, shapes and host tensors shared by the orchestrator and the worker.
// Thread-safety: values.
#ifndef KFORGE_TENSOR_H_
#define KFORGE_TENSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/status.h"

namespace kforge {

// Values equal kf_dtype in abi/kforge_cpu.h.
enum class DType : int32_t {
  kFloat32 = 0, kFloat64 = 1, kFloat16 = 2, kBFloat16 = 3, kInt32 = 4, kInt64 = 5,
};

const char* DTypeName(DType t);          // "float32" ...
Result<DType> ParseDType(const std::string& name);
size_t DTypeSize(DType t);
bool IsFloating(DType t);

struct TensorShape {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dims;
  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype); }
};

// Converts between a dtype's storage and double. `src`/`dst` hold n elements.
void ToDouble(DType t, const void* src, size_t n, double* dst);
void FromDouble(DType t, const double* src, size_t n, void* dst);

}  // namespace kforge

#endif  // KFORGE_TENSOR_H_
