// kforge-worker's job runner: loads one candidate on one device and runs the checks and the
// timing a Job asks for (docs/worker-protocol.md). Runs inside the sandbox only.
#ifndef KFORGE_WORKER_WORKER_H_
#define KFORGE_WORKER_WORKER_H_

#include <filesystem>

#include "kforge/status.h"
#include "worker/protocol.h"

namespace kforge {

// Runs `job` with files relative to `dir`, writing result.json and output files there.
// Candidate failures are recorded in result.json, not returned; a non-OK Status means the job
// itself could not run (bad job file, no device).
Status RunJob(const Job& job, const std::filesystem::path& dir);

// Prints the devices of `backend`, and the fingerprint and theoretical peaks of device
// `device`, as JSON to stdout (docs/worker-protocol.md).
Status ProbeBackend(const std::string& backend, int device = 0);

}  // namespace kforge

#endif  // KFORGE_WORKER_WORKER_H_
