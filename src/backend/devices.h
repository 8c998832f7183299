// The devices kforge-worker runs candidates on: one factory per backend that runs in the
// worker (Python-hosted backends have none), listed in backend/devices.inc. Only kforge-worker
// links this (library kforge_devices), so the orchestrator never loads a vendor driver.
#ifndef KFORGE_BACKEND_DEVICES_H_
#define KFORGE_BACKEND_DEVICES_H_

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace kforge {

struct DeviceFactory {
  const char* backend;  // the BackendSpec's name
  Result<std::unique_ptr<Device>> (*open)(int device_index);
  Result<std::vector<std::string>> (*list_devices)();
};

// nullptr when the backend has no device in kforge-worker.
const DeviceFactory* FindDeviceFactory(const std::string& backend);

}  // namespace kforge

#endif  // KFORGE_BACKEND_DEVICES_H_
