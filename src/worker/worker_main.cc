// kforge-worker: runs untrusted candidates on behalf of kforge, inside the sandbox.
//   kforge-worker run <job-folder>      run <job-folder>/job.json
//   kforge-worker probe <backend> [device]   list devices, device's fingerprint and theoretical peaks as JSON
// Exit codes: 0 the job ran (its result.json says how the candidate did), 2 bad usage or job.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "base/files.h"
#include "worker/worker.h"

int main(int argc, char** argv) {
  using namespace kforge;
  TuneHeapForTensors();
  bool probe = argc >= 3 && std::strcmp(argv[1], "probe") == 0;
  if (!(probe && argc <= 4) && !(argc == 3 && std::strcmp(argv[1], "run") == 0)) {
    std::fprintf(stderr, "usage: kforge-worker run <job-folder> | probe <backend> [device]\n");
    return 2;
  }
  Status st;
  if (probe) {
    st = ProbeBackend(argv[2], argc == 4 ? std::atoi(argv[3]) : 0);
  } else {
    std::filesystem::path dir = argv[2];
    Result<std::string> text = ReadFile(dir / "job.json");
    if (!text.ok()) st = text.status();
    else {
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
      Result<Job> job = j.is_discarded() ? Result<Job>(Status::InvalidArgument("job.json is not JSON")) : JobFromJson(j);
      st = job.ok() ? RunJob(*job, dir) : job.status();
    }
  }
  if (!st.ok()) {
    std::fprintf(stderr, "kforge-worker: %s\n", st.ToString().c_str());
    return 2;
  }
  return 0;
}
