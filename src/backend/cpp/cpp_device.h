// The `cpp` backend's device: the host CPU. Candidates follow abi/kforge_cpu.h.
#ifndef KFORGE_BACKEND_CPP_CPP_DEVICE_H_
#define KFORGE_BACKEND_CPP_CPP_DEVICE_H_

#include <memory>

#include "backend/device.h"

namespace kforge {

// Never fails: the CPU is always there.
std::unique_ptr<Device> NewCppDevice();

// Host facts shared with other CPU-hosted backends (PoCL): model name, cores, LLC bytes.
nlohmann::json HostCpuFingerprint();
int64_t HostLastLevelCacheBytes();

}  // namespace kforge

#endif  // KFORGE_BACKEND_CPP_CPP_DEVICE_H_
