// CUDA as a kforge device: the NVIDIA driver is loaded at run time (cuda_driver.h); the
// candidate is a shared library built by nvcc whose runtime-API launches land in the device's
// primary context, on a stream kforge created for this worker. A launch is bracketed by two
// events on that stream, followed by a device-wide synchronise (docs/abi-cuda.md).
#ifndef KFORGE_BACKEND_CUDA_CUDA_DEVICE_H_
#define KFORGE_BACKEND_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace kforge {

namespace cu {
struct Api;
}

// Opens CUDA device `index`. Unavailable, with what to install, when there is no driver or no
// GPU; NotFound when the index does not exist.
Result<std::unique_ptr<Device>> NewCudaDevice(int index);
// The same over a driver table of the caller's, which must outlive the device: a fake driver in
// tests (cuda_device_test.cc), where no GPU is needed.
Result<std::unique_ptr<Device>> NewCudaDeviceWithDriver(const cu::Api* api, int index);
// "NVIDIA H200 (sm_90, 132 SMs, 140 GiB)" per device.
Result<std::vector<std::string>> ListCudaDevices();

}  // namespace kforge

#endif  // KFORGE_BACKEND_CUDA_CUDA_DEVICE_H_
