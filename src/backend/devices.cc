#include "backend/devices.h"

namespace kforge {

#define KFORGE_DEVICE(factory) DeviceFactory factory();
#include "backend/devices.inc"
#undef KFORGE_DEVICE

const DeviceFactory* FindDeviceFactory(const std::string& backend) {
  static const std::vector<DeviceFactory> kFactories = {
#define KFORGE_DEVICE(factory) factory(),
#include "backend/devices.inc"
#undef KFORGE_DEVICE
  };
  for (const DeviceFactory& f : kFactories)
    if (backend == f.backend) return &f;
  return nullptr;
}

}  // namespace kforge
