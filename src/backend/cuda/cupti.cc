// CUPTI loaded at run time, and the kernel record built from its activity buffers.
//
// CUPTI hands activity records over in buffers the client supplies: a "requested" callback
// gives it one, a "completed" callback gets it back full (or at a flush), possibly on CUPTI's
// own thread. The callbacks take no user pointer, so the one recorder of the process keeps
// its decoded activities in a file-level sink behind a mutex.
#include "backend/cuda/cupti.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "base/files.h"

namespace kforge {
namespace cupti {

namespace fs = std::filesystem;

namespace {

constexpr const char* kNames[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12"};

template <typename Fn>
bool Bind(void* lib, Fn* slot, const char* name, std::string* missing) {
  if (void* p = dlsym(lib, name)) {
    *slot = reinterpret_cast<Fn>(p);
    return true;
  }
  if (missing && missing->empty()) *missing = name;
  return false;
}

std::string BindAll(void* lib, Api* a) {
  std::string missing;
  Bind(lib, &a->GetVersion, "cuptiGetVersion", &missing);
  Bind(lib, &a->GetResultString, "cuptiGetResultString", &missing);
  Bind(lib, &a->GetTimestamp, "cuptiGetTimestamp", &missing);
  Bind(lib, &a->ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks", &missing);
  Bind(lib, &a->ActivityEnable, "cuptiActivityEnable", &missing);
  Bind(lib, &a->ActivityDisable, "cuptiActivityDisable", &missing);
  Bind(lib, &a->ActivityFlushAll, "cuptiActivityFlushAll", &missing);
  Bind(lib, &a->ActivityGetNextRecord, "cuptiActivityGetNextRecord", &missing);
  Bind(lib, &a->ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords", &missing);
  Bind(lib, &a->GetStreamIdEx, "cuptiGetStreamIdEx", nullptr);
  return missing;
}

void AddFolder(const fs::path& dir, std::vector<std::string>* out) {
  for (const char* name : kNames) out->push_back((dir / name).lexically_normal().string());
}

// --- The sink the buffer callbacks fill. ----------------------------------------------------

constexpr size_t kBufferBytes = 1 << 20;

struct Sink {
  std::mutex mu;
  const Api* api = nullptr;
  std::vector<Activity> activities;
  size_t dropped = 0;
};

Sink& TheSink() {
  static Sink* sink = new Sink;  // never destroyed: CUPTI's thread may outlive statics
  return *sink;
}

void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void BufferCompleted(void* context, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  Sink& sink = TheSink();
  std::lock_guard<std::mutex> lock(sink.mu);
  if (sink.api && buffer) {
    void* record = nullptr;
    while (sink.api->ActivityGetNextRecord(buffer, valid, &record) == kSuccess) {
      if (std::optional<Activity> a = DecodeActivity(record))
        sink.activities.push_back(std::move(*a));
    }
    size_t dropped = 0;
    if (sink.api->ActivityGetNumDroppedRecords(context, stream_id, &dropped) == kSuccess)
      sink.dropped += dropped;
  }
  std::free(buffer);
}

// The record travels in one reply, whose head the supervisor bounds (4 MB): at most this many
// kernel names, each at most this long (a CUTLASS name runs to about 1 KB).
constexpr size_t kMaxRecords = 256;
constexpr size_t kMaxNameBytes = 4096;

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace

std::vector<std::string> CuptiCandidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("KFORGE_CUPTI"); env && *env) {
    std::error_code ec;
    if (fs::is_directory(env, ec))
      AddFolder(env, &out);
    else
      out.push_back(env);
  }
  for (const char* name : kNames) out.push_back(name);  // the loader's path
  for (const char* dir :
       {"/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64", "/usr/local/cuda/lib"})
    AddFolder(dir, &out);
  if (std::string nvcc = FindNvcc(); !nvcc.empty()) {
    fs::path root = fs::path(nvcc).parent_path().parent_path();
    for (const char* sub : {"extras/CUPTI/lib64", "lib64", "lib"}) AddFolder(root / sub, &out);
  }
  std::vector<std::string> unique;  // the nvcc folders often repeat /usr/local/cuda's
  for (const std::string& c : out)
    if (std::find(unique.begin(), unique.end(), c) == unique.end()) unique.push_back(c);
  return unique;
}

Result<Library> LoadCuptiFrom(const std::vector<std::string>& candidates) {
  std::string tried, failed;
  for (const std::string& c : candidates) {
    tried += (tried.empty() ? "" : ", ") + c;
    void* lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      // A bare name the loader does not know, or a path with no file: simply absent. A file
      // that is there and still does not load is worth naming.
      std::error_code ec;
      if (c.find('/') != std::string::npos && fs::exists(c, ec)) {
        const char* why = dlerror();
        failed += "; " + c + " is there but does not load: " + (why ? why : "?");
      }
      continue;
    }
    auto* api = new Api{};  // kept for the life of the process, as the library is
    std::string missing = BindAll(lib, api);
    if (!missing.empty()) {
      delete api;
      dlclose(lib);
      failed += "; " + c + " lacks " + missing + " (CUPTI older than CUDA 11?)";
      continue;
    }
    return Library{api, c};
  }
  return Status::Unavailable("libcupti not found (looked at " + tried + ")" + failed +
                             ": install the CUDA toolkit's CUPTI (cuda-cupti) or set KFORGE_CUPTI "
                             "to its libcupti.so");
}

Result<Library> LoadCupti() {
  static std::once_flag once;
  static Result<Library> loaded = Status::Internal("not loaded");
  std::call_once(once, [] { loaded = LoadCuptiFrom(CuptiCandidates()); });
  return loaded;
}

std::string ErrorText(const Api& api, Result_t error) {
  const char* text = nullptr;
  if (api.GetResultString) api.GetResultString(error, &text);
  std::string s = text ? text : "CUPTI error " + std::to_string(error);
  if (error == kErrorInsufficientPrivileges)
    s += " (tracing needs no profiling rights; check the driver's "
         "NVreg_RestrictProfilingToAdminUsers "
         "and the sandbox)";
  return s;
}

std::optional<Activity> DecodeActivity(const void* record) {
  const int32_t kind = *static_cast<const int32_t*>(record);
  Activity a;
  if (kind == kKindConcurrentKernel) {
    const auto* k = static_cast<const KernelRecord*>(record);
    a.kind = Activity::Kind::kKernel;
    a.name = k->name ? k->name : "?";
    a.start = k->start;
    a.end = k->end;
    a.stream = k->stream_id;
    a.graph = k->graph_id != 0 || k->graph_node_id != 0;
  } else if (kind == kKindMemcpy) {
    const auto* m = static_cast<const MemcpyRecord*>(record);
    a.kind = Activity::Kind::kMemcpy;
    a.start = m->start;
    a.end = m->end;
    a.stream = m->stream_id;
    a.graph = m->graph_id != 0 || m->graph_node_id != 0;
    a.bytes = m->bytes;
  } else if (kind == kKindMemset) {
    const auto* m = static_cast<const MemsetRecord*>(record);
    a.kind = Activity::Kind::kMemset;
    a.start = m->start;
    a.end = m->end;
    a.stream = m->stream_id;
    a.graph = m->graph_id != 0 || m->graph_node_id != 0;
    a.bytes = m->bytes;
  } else {
    return std::nullopt;
  }
  return a;
}

nlohmann::json BuildKernelRecord(const std::vector<Activity>& activities, const RecordContext& c) {
  struct Group {
    int calls = 0, after_return = 0;
    uint64_t device_ns = 0, first_start = 0;
    std::set<uint32_t> streams;
    bool graph = false;
  };
  std::map<std::string, Group> groups;
  struct Copies {
    int count = 0;
    uint64_t ns = 0, bytes = 0;
  } copies, sets;
  uint64_t first = UINT64_MAX, last = 0;
  for (const Activity& a : activities) {
    uint64_t ns = a.end > a.start ? a.end - a.start : 0;
    if (a.kind != Activity::Kind::kKernel) {
      Copies& s = a.kind == Activity::Kind::kMemcpy ? copies : sets;
      ++s.count;
      s.ns += ns;
      s.bytes += a.bytes;
      continue;
    }
    auto [it, fresh] = groups.try_emplace(a.name);
    Group& g = it->second;
    if (fresh || a.start < g.first_start) g.first_start = a.start;
    ++g.calls;
    g.device_ns += ns;
    g.streams.insert(a.stream);
    g.graph = g.graph || a.graph;
    if (c.window.returned != 0 && a.end > c.window.returned) ++g.after_return;
    first = std::min(first, a.start);
    last = std::max(last, a.end);
  }
  std::vector<std::pair<std::string, Group>> ordered(groups.begin(), groups.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) {
    return x.second.first_start < y.second.first_start;
  });
  nlohmann::json records = nlohmann::json::array();
  int left_out = 0, left_out_calls = 0;
  uint64_t left_out_ns = 0;
  for (const auto& [name, g] : ordered) {
    if (records.size() >= kMaxRecords) {
      ++left_out;
      left_out_calls += g.calls;
      left_out_ns += g.device_ns;
      continue;
    }
    records.push_back(
        {{"name", name.size() > kMaxNameBytes ? name.substr(0, kMaxNameBytes) + "..." : name},
         {"calls", g.calls},
         {"device_ms", Ms(g.device_ns)},
         {"streams", std::vector<uint32_t>(g.streams.begin(), g.streams.end())},
         {"graph", g.graph},
         {"after_return", g.after_return}});
  }
  nlohmann::json out = {{"source", "cupti"},
                        {"available", true},
                        {"call", c.call},
                        {"records", records},
                        {"window_ms", last > first ? Ms(last - first) : 0.0}};
  if (left_out > 0)
    out["records_left_out"] = {
        {"count", left_out}, {"calls", left_out_calls}, {"device_ms", Ms(left_out_ns)}};
  if (c.memcpy_reason.empty()) {
    out["memcpy"] = {
        {"count", copies.count}, {"device_ms", Ms(copies.ns)}, {"bytes", copies.bytes}};
    out["memset"] = {{"count", sets.count}, {"device_ms", Ms(sets.ns)}, {"bytes", sets.bytes}};
  } else {
    out["memcpy_reason"] = c.memcpy_reason;
  }
  const CallWindow& w = c.window;
  if (w.start != 0 && w.returned >= w.start && w.synced >= w.returned)
    out["host"] = {{"return_ms", Ms(w.returned - w.start)}, {"synced_ms", Ms(w.synced - w.start)}};
  if (c.harness_stream >= 0) out["harness_stream"] = c.harness_stream;
  out["dropped"] = c.dropped;
  if (c.version) out["version"] = c.version;
  if (!c.library.empty()) out["library"] = c.library;
  return out;
}

nlohmann::json UnavailableRecord(const std::string& call, const std::string& reason) {
  return {{"source", "cupti"}, {"available", false}, {"call", call}, {"reason", reason}};
}

// --- KernelRecorder. ------------------------------------------------------------------------

uint64_t KernelRecorder::Now() const {
  uint64_t ns = 0;
  if (active_) api_->GetTimestamp(&ns);
  return ns;
}

void KernelRecorder::Start(const std::string& call) {
  call_ = call;
  reason_.clear();
  memcpy_reason_.clear();
  enabled_.clear();
  start_ = returned_ = synced_ = 0;
  Result<Library> lib = LoadCupti();
  if (!lib.ok()) {
    reason_ = lib.status().message();
    return;
  }
  lib_ = *lib;
  api_ = lib_.api;
  {
    Sink& sink = TheSink();
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.api = api_;
    sink.activities.clear();
    sink.dropped = 0;
  }
  static const Result_t registered =
      api_->ActivityRegisterCallbacks(BufferRequested, BufferCompleted);
  if (registered != kSuccess) {
    reason_ = "cuptiActivityRegisterCallbacks failed: " + ErrorText(*api_, registered);
    return;
  }
  if (Result_t e = api_->ActivityEnable(kKindConcurrentKernel); e != kSuccess) {
    reason_ = "cuptiActivityEnable(CONCURRENT_KERNEL) failed: " + ErrorText(*api_, e);
    return;
  }
  enabled_.push_back(kKindConcurrentKernel);
  for (int kind : {kKindMemcpy, kKindMemset}) {
    if (Result_t e = api_->ActivityEnable(kind); e != kSuccess) {
      memcpy_reason_ = "cuptiActivityEnable(" +
                       std::string(kind == kKindMemcpy ? "MEMCPY" : "MEMSET") +
                       ") failed: " + ErrorText(*api_, e);
    } else {
      enabled_.push_back(kind);
    }
  }
  active_ = true;
}

nlohmann::json KernelRecorder::Stop() {
  if (!active_)
    return UnavailableRecord(call_, reason_.empty() ? "kernel recording was not started" : reason_);
  RecordContext c;
  c.call = call_;
  c.window = {start_, returned_, synced_};
  c.memcpy_reason = memcpy_reason_;
  c.library = lib_.path;
  api_->GetVersion(&c.version);
  uint32_t id = 0;
  if (api_->GetStreamIdEx && api_->GetStreamIdEx(context_, stream_, 0, &id) == kSuccess)
    c.harness_stream = id;
  active_ = false;
  for (int kind : enabled_) api_->ActivityDisable(kind);
  enabled_.clear();
  Result_t flushed = api_->ActivityFlushAll(kFlushForced);
  std::vector<Activity> activities;
  {
    Sink& sink = TheSink();
    std::lock_guard<std::mutex> lock(sink.mu);
    activities.swap(sink.activities);
    c.dropped = sink.dropped;
  }
  nlohmann::json out = BuildKernelRecord(activities, c);
  if (flushed != kSuccess) out["flush_error"] = ErrorText(*api_, flushed);
  return out;
}

}  // namespace cupti
}  // namespace kforge
