// HIP (AMD GPUs) as a kforge device: the HIP runtime is loaded at run time (hip_runtime.h);
// the candidate is a shared library built by hipcc whose launches run on a stream kforge
// created for this worker on the evaluating device. A launch is bracketed by two hipEvents on
// that stream, followed by a device-wide hipDeviceSynchronize (docs/abi-hip.md).
//
// Not yet run on an AMD GPU (none was reachable when it was written): see docs/evaluation.md.
#ifndef KFORGE_BACKEND_HIP_HIP_DEVICE_H_
#define KFORGE_BACKEND_HIP_HIP_DEVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace kforge {

// Opens HIP device `index`. Unavailable, with what to install, when there is no HIP runtime
// or no AMD GPU; NotFound when the index does not exist.
Result<std::unique_ptr<Device>> NewHipDevice(int index);
// "AMD Instinct MI210 (gfx90a, 104 CUs, 63 GiB)" per device: the orchestrator reads the
// gfx architecture from it to build candidates (eval/compiler.h DeviceArch).
Result<std::vector<std::string>> ListHipDevices();

// "gfx90a" from the runtime's gcnArchName "gfx90a:sramecc+:xnack-" (the feature flags are
// not part of an --offload-arch target kforge builds for).
std::string ArchFromGcnArchName(const std::string& gcn_arch_name);

}  // namespace kforge

#endif  // KFORGE_BACKEND_HIP_HIP_DEVICE_H_
