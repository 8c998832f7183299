// Trusted state, computed once per problem (docs/evaluation.md, "Trusted state, computed once"):
// what trusted workers computed for a problem and no candidate can change, kept on disk in
// <cache>/trusted/ under a key that names everything it depends on. A warm judgement then
// neither recomputes the check trials' references nor re-times the baselines.
//
//   runs/<key>/         a reference job's folder as its supervisor left it: result.json and the
//                       output files it names (no inputs, no job.json), plus kept.json with
//                       result.json's SHA-256, each file's XXH3-128 and the key's fields. Every
//                       read checks result.json's hash, and every output file is checked
//                       against its XXH3-128 (ReadOutput; against result.json's SHA-256 piece
//                       digest in entries kept without them).
//   baselines/<key>.json baseline timings and when they were measured; older than the caller's
//                       limit, or --rebaseline, and they are measured again.
//
// Only trusted processes write here. Sandboxed workers get the cache read-only and run as
// another user (docs/sandbox.md). Concurrent writers each stage a folder, and the first rename
// wins. The runs/ folder is kept under a size limit ($KFORGE_TRUSTED_CACHE_MB, default 16384),
// oldest entries first.
#ifndef KFORGE_EVAL_TRUSTED_STATE_H_
#define KFORGE_EVAL_TRUSTED_STATE_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/worker_client.h"
#include "kforge/verdict.h"

namespace kforge {

// SHA-256 of the fields (canonical JSON) and the store's format version, as hex. Anything the
// state depends on that the fields leave out is a wrong answer on a hit: name it.
std::string TrustedStateKey(const nlohmann::json& fields);

// SHA-256 of a file's bytes ("" when it cannot be read): libraries and scripts in keys.
std::string FileDigest(const std::filesystem::path& file);

class TrustedState {
 public:
  // The store under <cache>/trusted. Disabled (it finds nothing and keeps nothing) when
  // `enabled` is false or there is no cache folder.
  explicit TrustedState(bool enabled);
  bool enabled() const { return !root_.empty(); }

  // A kept run under `key`: finished and confirmed while its result.json still has the SHA-256
  // recorded when it was kept. Its folder belongs to the store, so Cleanup leaves it (kept).
  std::optional<WorkerRun> FindRun(const std::string& key) const;
  // Keeps a finished, confirmed run's result.json and the files it lists. A run that is not
  // finished, or larger than a quarter of the store's limit, is not kept: Unavailable says why.
  Status KeepRun(const std::string& key, const nlohmann::json& fields, const WorkerRun& run) const;
  // Drops a kept run (one that did not verify when read).
  void Forget(const std::string& key) const;

  struct Baselines {
    std::map<std::string, TimingStats> timings;
    std::string measured_at;  // ISO 8601, UTC
    double age_s = 0;
  };
  // Baselines kept under `key`, measured at most `max_age_s` ago.
  std::optional<Baselines> FindBaselines(const std::string& key, double max_age_s) const;
  Status KeepBaselines(const std::string& key, const nlohmann::json& fields,
                       const std::map<std::string, TimingStats>& timings) const;

  // "<root>: N reference runs (M MB), K baseline sets", for `kforge doctor`.
  std::string Describe() const;

 private:
  void Prune(uint64_t limit_bytes) const;
  std::filesystem::path root_;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_TRUSTED_STATE_H_
