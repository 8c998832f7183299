// Builds the C ABI argument block (abi/kforge_cpu.h) from LaunchArgs for backends whose
// tensors live in host memory, and owns the arrays it points into.
#ifndef KFORGE_BACKEND_HOST_ARGS_H_
#define KFORGE_BACKEND_HOST_ARGS_H_

#include <functional>
#include <vector>

#include "abi/kforge_cpu.h"
#include "backend/device.h"

namespace kforge {

// Fills `bytes` bytes at dst with a repeated pattern (pattern_bytes of 1, 2, 4 or 8).
void FillPattern(void* dst, const void* pattern, size_t pattern_bytes, size_t bytes);

// Copies a TensorShape's metadata into an ABI tensor (data pointer left to the caller).
template <typename AbiTensor>
void FillAbiTensor(const LaunchTensor& t, AbiTensor* out) {
  out->name = t.shape.name.c_str();
  out->dtype = static_cast<int32_t>(t.shape.dtype);
  out->ndim = static_cast<int32_t>(t.shape.dims.size());
  for (size_t d = 0; d < t.shape.dims.size() && d < KF_MAX_DIMS; ++d) out->shape[d] = t.shape.dims[d];
  out->numel = t.shape.numel();
}

inline std::vector<kf_attr> MakeAbiAttrs(const std::vector<LaunchAttr>& attrs) {
  std::vector<kf_attr> out;
  for (const LaunchAttr& a : attrs) out.push_back(kf_attr{a.name.c_str(), a.i, a.f});
  return out;
}

struct HostArgs {
  HostArgs(const LaunchArgs& a, const std::function<void*(BufferId)>& data) {
    for (const LaunchTensor& t : a.inputs) inputs.push_back(Tensor(t, data));
    for (const LaunchTensor& t : a.outputs) outputs.push_back(Tensor(t, data));
    attrs = MakeAbiAttrs(a.attrs);
    args.abi_version = KF_ABI_VERSION;
    args.n_inputs = static_cast<int32_t>(inputs.size());
    args.inputs = inputs.data();
    args.n_outputs = static_cast<int32_t>(outputs.size());
    args.outputs = outputs.data();
    args.n_attrs = static_cast<int32_t>(attrs.size());
    args.attrs = attrs.data();
    args.scratch = data(a.scratch);
    args.scratch_bytes = a.scratch_bytes;
  }
  HostArgs(const HostArgs&) = delete;
  HostArgs& operator=(const HostArgs&) = delete;

  std::vector<kf_tensor> inputs, outputs;
  std::vector<kf_attr> attrs;
  kf_cpu_args args{};

 private:
  static kf_tensor Tensor(const LaunchTensor& t, const std::function<void*(BufferId)>& data) {
    kf_tensor k{};
    FillAbiTensor(t, &k);
    k.data = data(t.buffer);
    return k;
  }
};

}  // namespace kforge

#endif  // KFORGE_BACKEND_HOST_ARGS_H_
