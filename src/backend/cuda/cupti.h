// Which kernels a candidate ran: CUPTI's Activity API, loaded at run time (like the driver in
// cuda_driver.h), so that kforge builds and runs where CUPTI is missing; the record then says
// why it is unavailable.
//
// Why CUPTI: the candidate's source and its ptxas report say which kernels it *defines*; only
// the driver knows which ones *ran*, on which streams, and when. CUPTI's activity records
// (CONCURRENT_KERNEL: every kernel on every stream, graph launches included; MEMCPY, MEMSET)
// carry the driver's own timestamps. What it cannot see: work done on the host (a result
// computed by the CPU and copied over shows up only as a memcpy), kernels launched before
// recording started or still queued when it stopped (the call is synchronized first), and
// anything on another device or process. The record is made inside the candidate's process:
// a candidate that patches libcupti or its buffers can forge it. No timing depends on it.
//
// Only the handful of CUPTI types, constants and record layouts kforge reads are declared
// here, modelled on CUPTI 13.0 (CUPTI_API_VERSION 130001, cuda-13.0/include/cupti_activity.h:
// CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemset4). kforge reads only the
// fields they share with the CUPTI 12.x layouts (Kernel9, Memcpy5): new CUPTI versions append
// fields. Nothing includes cupti.h (cupti_layout_test.cc checks the offsets against it where
// the header is installed).
//
// Thread-safety: LoadCupti is safe from any thread; a KernelRecorder is single-threaded
// (CUPTI's buffer callbacks, which may come from its own thread, are serialized inside).
#ifndef KFORGE_BACKEND_CUDA_CUPTI_H_
#define KFORGE_BACKEND_CUDA_CUPTI_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/status.h"

namespace kforge {
namespace cupti {

using Result_t = int;  // CUptiResult
constexpr Result_t kSuccess = 0;
constexpr Result_t kErrorMaxLimitReached = 12;  // cuptiActivityGetNextRecord: no more records
constexpr Result_t kErrorInsufficientPrivileges = 35;

// CUpti_ActivityKind values.
constexpr int kKindMemcpy = 1;
constexpr int kKindMemset = 2;
constexpr int kKindConcurrentKernel = 10;
constexpr uint32_t kFlushForced = 1;  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED

// The leading fields of CUpti_ActivityKernel10 (and Kernel5..9), at the same offsets.
struct KernelRecord {
  int32_t kind;
  uint8_t cache_config, shared_memory_config;
  uint16_t registers_per_thread;
  int32_t partitioned_global_cache_requested, partitioned_global_cache_executed;
  uint64_t start, end, completed;  // ns, cuptiGetTimestamp's clock
  uint32_t device_id, context_id, stream_id;
  int32_t grid[3], block[3];
  int32_t static_shared_memory, dynamic_shared_memory;
  uint32_t local_memory_per_thread, local_memory_total;
  uint32_t correlation_id;
  int64_t grid_id;
  const char* name;  // mangled, owned by CUPTI
  void* reserved0;
  uint64_t queued, submitted;
  uint8_t launch_type, carveout_requested, carveout, padding;
  uint32_t shared_memory_executed;
  uint64_t graph_node_id;  // 0 unless launched as a graph node
  int32_t shmem_limit_config;
  uint32_t graph_id;  // 0 unless launched as a graph node
};
static_assert(offsetof(KernelRecord, start) == 16 && offsetof(KernelRecord, stream_id) == 48 &&
                  offsetof(KernelRecord, name) == 104 &&
                  offsetof(KernelRecord, graph_node_id) == 144 &&
                  offsetof(KernelRecord, graph_id) == 156,
              "CUpti_ActivityKernel10 layout");

// The leading fields of CUpti_ActivityMemcpy6 (and Memcpy5).
struct MemcpyRecord {
  int32_t kind;
  uint8_t copy_kind, src_kind, dst_kind, flags;
  uint64_t bytes, start, end;
  uint32_t device_id, context_id, stream_id, correlation_id, runtime_correlation_id, pad;
  void* reserved0;
  uint64_t graph_node_id;
  uint32_t graph_id;
};
static_assert(offsetof(MemcpyRecord, bytes) == 8 && offsetof(MemcpyRecord, stream_id) == 40 &&
                  offsetof(MemcpyRecord, graph_id) == 72,
              "CUpti_ActivityMemcpy6 layout");

// The leading fields of CUpti_ActivityMemset4.
struct MemsetRecord {
  int32_t kind;
  uint32_t value;
  uint64_t bytes, start, end;
  uint32_t device_id, context_id, stream_id, correlation_id;
  uint16_t flags, memory_kind;
  uint32_t pad;
  void* reserved0;
  uint64_t graph_node_id;
  uint32_t graph_id;
};
static_assert(offsetof(MemsetRecord, stream_id) == 40 && offsetof(MemsetRecord, graph_id) == 72,
              "CUpti_ActivityMemset4 layout");

using BufferRequestedFn = void (*)(uint8_t** buffer, size_t* size, size_t* max_records);
using BufferCompletedFn = void (*)(void* context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                   size_t valid_size);

// The CUPTI entry points kforge calls.
struct Api {
  Result_t (*GetVersion)(uint32_t* version);
  Result_t (*GetResultString)(Result_t result, const char** text);
  Result_t (*GetTimestamp)(uint64_t* ns);
  Result_t (*ActivityRegisterCallbacks)(BufferRequestedFn requested, BufferCompletedFn completed);
  Result_t (*ActivityEnable)(int kind);
  Result_t (*ActivityDisable)(int kind);
  Result_t (*ActivityFlushAll)(uint32_t flag);
  Result_t (*ActivityGetNextRecord)(uint8_t* buffer, size_t valid_size, void** record);
  Result_t (*ActivityGetNumDroppedRecords)(void* context, uint32_t stream_id, size_t* dropped);
  // Optional (null when missing): the id CUPTI gives a stream, to name the harness's stream.
  Result_t (*GetStreamIdEx)(void* context, void* stream, uint8_t per_thread, uint32_t* id);
};

struct Library {
  const Api* api = nullptr;
  std::string path;  // what was loaded: a file, or the bare name the loader resolved
};

// Where libcupti is looked for, in order: $KFORGE_CUPTI (a file, or a folder holding one),
// the dynamic loader's path (bare names), /usr/local/cuda/extras/CUPTI/lib64,
// /usr/local/cuda/lib64, /usr/local/cuda/lib, and beside the nvcc the compiler uses
// (FindNvcc: <nvcc>/../extras/CUPTI/lib64, <nvcc>/../lib64, <nvcc>/../lib). Each folder is
// tried for libcupti.so, libcupti.so.13, libcupti.so.12.
std::vector<std::string> CuptiCandidates();

// Tries `candidates` in order (dlopen; bare names through the loader's path) and binds the
// entry points of the first that loads. Not cached: every call dlopens again (tests).
// Fails with Unavailable "libcupti not found (looked at ...)" naming every candidate tried
// (and why a present one did not load), or naming the entry point a library lacks.
Result<Library> LoadCuptiFrom(const std::vector<std::string>& candidates);

// LoadCuptiFrom(CuptiCandidates()), once per process.
Result<Library> LoadCupti();

// "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (...)" from the library's own strings.
std::string ErrorText(const Api& api, Result_t error);

// --- The record, independent of CUPTI (fed by hand in tests). --------------------------------

// One activity record, decoded.
struct Activity {
  enum class Kind { kKernel, kMemcpy, kMemset };
  Kind kind = Kind::kKernel;
  std::string name;             // kernels: the mangled name as CUPTI gives it
  uint64_t start = 0, end = 0;  // ns
  uint32_t stream = 0;          // CUPTI's stream id
  bool graph = false;           // launched as a node of a CUDA graph
  uint64_t bytes = 0;           // copies and sets
};

// The recorded call on CUPTI's clock (cuptiGetTimestamp, ns): launch start, the return of
// kf_cuda_run, the end of the harness's synchronize.
struct CallWindow {
  uint64_t start = 0, returned = 0, synced = 0;
};

// Decodes one record as CUPTI laid it out (kinds above); nullopt for any other kind.
std::optional<Activity> DecodeActivity(const void* record);

// Everything a recorder knows besides the activities.
struct RecordContext {
  std::string call;  // "check set 0"
  CallWindow window;
  size_t dropped = 0;           // records CUPTI dropped (no buffer)
  int64_t harness_stream = -1;  // CUPTI's id of kforge's stream, -1 unknown
  uint32_t version = 0;         // cuptiGetVersion
  std::string library;
  std::string memcpy_reason;  // why copies and sets were not recorded, "" when they were
};

// The raw "kernels" record of docs/worker-protocol.md: kernels grouped by name (in order of
// first start), each with its calls, summed device time, streams, graph flag and how many of
// its calls ended after kf_cuda_run returned; copies and sets summed; the device window from
// the first kernel's start to the last one's end.
nlohmann::json BuildKernelRecord(const std::vector<Activity>& activities,
                                 const RecordContext& context);

// {"source": "cupti", "available": false, "call", "reason"}.
nlohmann::json UnavailableRecord(const std::string& call, const std::string& reason);

// Records one call through CUPTI: Start (enables the activity kinds), the Mark* timestamps
// around the call, Stop (disables them, flushes, builds the record). Recording is off outside
// Start..Stop, so warm-up and timed runs go untraced. Start never fails the evaluation: when
// CUPTI cannot be loaded or enabled, Stop returns UnavailableRecord with the reason.
class KernelRecorder {
 public:
  // REQUIRES: the context (void* CUcontext) and stream kforge launches on, both current.
  KernelRecorder(void* context, void* stream) : context_(context), stream_(stream) {}
  void Start(const std::string& call);
  bool active() const { return active_; }
  void MarkStart() { start_ = Now(); }
  void MarkReturned() { returned_ = Now(); }
  void MarkSynced() { synced_ = Now(); }
  // REQUIRES: the recorded work synchronized. Returns the record and ends recording.
  nlohmann::json Stop();

 private:
  uint64_t Now() const;

  void* context_;
  void* stream_;
  const Api* api_ = nullptr;
  Library lib_;
  std::string call_, reason_, memcpy_reason_;
  bool active_ = false;
  std::vector<int> enabled_;
  uint64_t start_ = 0, returned_ = 0, synced_ = 0;
};

}  // namespace cupti
}  // namespace kforge

#endif  // KFORGE_BACKEND_CUDA_CUPTI_H_
