// The `opencl` backend's device: one OpenCL device through the ICD loader (PoCL on the CPU,
// NVIDIA, AMD or Intel GPUs). Candidates follow abi/kforge_opencl.h.
#ifndef KFORGE_BACKEND_OPENCL_OPENCL_DEVICE_H_
#define KFORGE_BACKEND_OPENCL_OPENCL_DEVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace kforge {

// Opens device `index` in the order ListOpenClDevices() gives (GPUs first, then the rest).
// Fails with a message that says how to get an OpenCL driver when there is none.
Result<std::unique_ptr<Device>> NewOpenClDevice(int index);

// "platform / device (type)" for every device, GPUs first; an error when none is usable.
Result<std::vector<std::string>> ListOpenClDevices();

}  // namespace kforge

#endif  // KFORGE_BACKEND_OPENCL_OPENCL_DEVICE_H_
