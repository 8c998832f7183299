#include "eval/trusted_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bumped whenever what a kept entry means changes: the input generator, what a reference job
// writes, the timing plan's meaning. Every old entry then misses.
constexpr const char* kFormat = "kforge-trusted-state-3";  // 3: 1 MiB digest pieces

uint64_t LimitBytes() {
  const char* env = std::getenv("KFORGE_TRUSTED_CACHE_MB");
  uint64_t mb = env && *env ? std::strtoull(env, nullptr, 10) : 16384;
  return mb << 20;
}

std::string NowIso(std::time_t t) {
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Links `from` to `to` when the file is this process's own and on the same file system, else
// copies it: a kept file is never one that a sandbox user (who wrote the job folder) still owns.
Status LinkOrCopy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  struct stat st {};
  // A regular file only, the link itself not followed (a job folder is the sandbox's to fill).
  if (::lstat(from.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::IoError("cannot keep " + from.string() + " in the trusted store: not a regular file");
  if (st.st_uid == geteuid()) {
    fs::create_hard_link(from, to, ec);
    if (!ec) return Status::Ok();
  }
  ec.clear();
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::IoError("cannot keep " + from.string() + " in the trusted store: " + ec.message());
  return Status::Ok();
}

bool SafeName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

}  // namespace

std::string TrustedStateKey(const json& fields) {
  return Sha256Hex(json{{"format", kFormat}, {"fields", fields}}.dump());
}

std::string FileDigest(const fs::path& file) {
  Result<std::string> bytes = ReadFile(file);
  return bytes.ok() ? Sha256Hex(*bytes) : "";
}

TrustedState::TrustedState(bool enabled) {
  if (!enabled) return;
  Result<fs::path> cache = CacheDir();
  if (!cache.ok()) return;
  std::error_code ec;
  fs::create_directories(*cache / "trusted" / "runs", ec);
  fs::create_directories(*cache / "trusted" / "baselines", ec);
  if (!ec) root_ = *cache / "trusted";
}

std::optional<WorkerRun> TrustedState::FindRun(const std::string& key) const {
  if (root_.empty()) return std::nullopt;
  const fs::path dir = root_ / "runs" / key;
  Result<std::string> kept = ReadFile(dir / "kept.json");
  Result<std::string> text = ReadFile(dir / "result.json");
  if (!kept.ok() || !text.ok()) return std::nullopt;
  json k = json::parse(*kept, nullptr, false), result = json::parse(*text, nullptr, false);
  if (!k.is_object() || !result.is_object() || k.value("result_sha256", std::string()) != Sha256Hex(*text))
    return std::nullopt;
  WorkerRun run;
  run.dir = dir;
  run.SetResult(std::move(result));
  run.confirmed = true;
  run.kept = true;
  const json digests = k.value("xxh3", json::object());  // none in a store kept before them: SHA-256 then
  for (const auto& [name, digest] : digests.items())
    if (digest.is_string()) run.kept_digests[name] = digest.get<std::string>();
  run.last_stage = "done";
  run.process.end = ProcessResult::End::kExited;
  run.process.exit_code = 0;
  std::error_code ec;
  fs::last_write_time(dir / "kept.json", fs::file_time_type::clock::now(), ec);  // recently used
  return run;
}

Status TrustedState::KeepRun(const std::string& key, const json& fields, const WorkerRun& run) const {
  if (root_.empty()) return Status::Ok();
  if (!run.finished()) return Status::Unavailable("the run did not finish");
  uint64_t bytes = 0;
  std::error_code ec;
  auto held = [&run](const std::string& name) -> const std::string* {
    if (!run.held) return nullptr;
    auto it = run.held->find(name);
    return it == run.held->end() ? nullptr : &it->second;
  };
  std::map<std::string, uint64_t> sizes;  // of the files not held
  for (const auto& [name, digest] : run.report.files) {
    if (!SafeName(name)) return Status::Unavailable("the run names a file '" + name + "'");
    if (const std::string* h = held(name)) {
      bytes += h->size();
      continue;
    }
    Result<uint64_t> size = UntrustedFileSize(run.dir / name);
    if (!size.ok()) return Status::Unavailable("its file " + name + ": " + size.status().message());
    bytes += *size;
    sizes[name] = *size;
  }
  const uint64_t limit = LimitBytes();
  if (bytes > limit / 4)
    return Status::Unavailable(std::to_string(bytes >> 20) + " MB is over a quarter of the store's limit (" +
                               std::to_string(limit >> 20) + " MB, $KFORGE_TRUSTED_CACHE_MB)");
  const fs::path final_dir = root_ / "runs" / key;
  if (fs::exists(final_dir / "kept.json")) return Status::Ok();
  KF_ASSIGN_OR_RETURN(std::string text, ReadUntrustedFile(run.dir / "result.json", kResultJsonMaxBytes));
  // A staging folder of this writer's own (processes and threads may keep the same key at once).
  static std::atomic<uint64_t> writes{0};
  const fs::path stage = root_ / "runs" / (".stage-" + key + "-" + std::to_string(getpid()) + "-" + std::to_string(++writes));
  fs::remove_all(stage, ec);
  fs::create_directories(stage, ec);
  if (ec) return Status::IoError("cannot create " + stage.string() + ": " + ec.message());
  Status status = WriteFile(stage / "result.json", text.data(), text.size());
  // Each file's XXH3-128, of bytes checked against the supervisor's digest (ReadOutput; a held
  // file's when it was taken): what a later read checks instead of that SHA-256
  // (WorkerRun::kept_digests).
  json xxh3 = json::object();
  for (const auto& [name, digest] : run.report.files) {
    if (!status.ok()) break;
    const std::string* h = held(name);
    Result<std::shared_ptr<const std::string>> checked = run.ReadOutput(name, h ? h->size() : sizes.at(name));
    if (!checked.ok()) {
      status = checked.status();
      break;
    }
    xxh3[name] = Hash128Hex(**checked);
    status = h ? WriteFile(stage / name, h->data(), h->size()) : LinkOrCopy(run.dir / name, stage / name);
  }
  json k = {{"result_sha256", Sha256Hex(text)}, {"fields", fields}, {"kept_at", NowIso(std::time(nullptr))}, {"bytes", bytes},
            {"xxh3", xxh3}};
  if (status.ok()) status = WriteFile(stage / "kept.json", k.dump(1).data(), k.dump(1).size());
  if (status.ok()) {
    fs::rename(stage, final_dir, ec);  // fails when another writer was first: theirs stands
    if (!ec) Prune(limit);
  }
  fs::remove_all(stage, ec);
  return status;
}

void TrustedState::Forget(const std::string& key) const {
  if (root_.empty() || !SafeName(key)) return;
  std::error_code ec;
  fs::remove_all(root_ / "runs" / key, ec);
}

// Oldest entries (by last use) go first until runs/ fits in `limit_bytes`.
void TrustedState::Prune(uint64_t limit_bytes) const {
  struct Entry {
    fs::path dir;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const fs::directory_entry& e : fs::directory_iterator(root_ / "runs", ec)) {
    if (e.path().filename().string().rfind(".stage-", 0) == 0) {
      std::error_code tec;
      if (fs::last_write_time(e.path(), tec) < hour_ago && !tec) fs::remove_all(e.path(), tec);  // a killed writer's
      continue;
    }
    Result<std::string> kept = ReadFile(e.path() / "kept.json");
    json k = kept.ok() ? json::parse(*kept, nullptr, false) : json();
    uint64_t bytes = k.is_object() ? k.value("bytes", uint64_t{0}) : 0;
    std::error_code tec;
    fs::file_time_type used = fs::last_write_time(e.path() / "kept.json", tec);
    entries.push_back({e.path(), used, bytes});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= limit_bytes) break;
    fs::remove_all(e.dir, ec);
    total -= std::min(total, e.bytes);
  }
}

std::optional<TrustedState::Baselines> TrustedState::FindBaselines(const std::string& key, double max_age_s) const {
  if (root_.empty()) return std::nullopt;
  Result<std::string> text = ReadFile(root_ / "baselines" / (key + ".json"));
  if (!text.ok()) return std::nullopt;
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("timings") || !j["timings"].is_object()) return std::nullopt;
  const double age = static_cast<double>(std::time(nullptr) - j.value("measured_unix", int64_t{0}));
  if (age < 0 || age > max_age_s) return std::nullopt;
  Baselines b;
  b.measured_at = j.value("measured_at", std::string());
  b.age_s = age;
  for (const auto& [name, t] : j["timings"].items()) {
    if (!t.is_object()) return std::nullopt;
    b.timings[name] = TimingFromJson(t);
  }
  if (b.timings.empty()) return std::nullopt;
  return b;
}

Status TrustedState::KeepBaselines(const std::string& key, const json& fields,
                                   const std::map<std::string, TimingStats>& timings) const {
  if (root_.empty() || timings.empty()) return Status::Ok();
  const std::time_t now = std::time(nullptr);
  json j = {{"fields", fields}, {"measured_unix", static_cast<int64_t>(now)}, {"measured_at", NowIso(now)},
            {"timings", json::object()}};
  for (const auto& [name, t] : timings) j["timings"][name] = TimingToJson(t);
  return WriteFileAtomic(root_ / "baselines" / (key + ".json"), j.dump(1));
}

std::string TrustedState::Describe() const {
  if (root_.empty()) return "no trusted store (no cache folder)";
  uint64_t runs = 0, bytes = 0, baselines = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root_ / "runs", ec)) {
    if (e.path().filename().string().rfind(".stage-", 0) == 0) continue;
    ++runs;
    for (const fs::directory_entry& f : fs::directory_iterator(e.path(), ec)) bytes += f.is_regular_file(ec) ? f.file_size(ec) : 0;
  }
  for (const fs::directory_entry& e : fs::directory_iterator(root_ / "baselines", ec)) baselines += e.path().extension() == ".json";
  return root_.string() + ": " + std::to_string(runs) + " reference runs (" + std::to_string(bytes >> 20) + " MB of " +
         std::to_string(LimitBytes() >> 20) + "), " + std::to_string(baselines) +
         " baseline sets; delete the folder to compute everything again";
}

}  // namespace kforge
