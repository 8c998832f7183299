// How the host CPU's caches are emptied before a null or timed run (docs/evaluation.md, section
// 3, "Cache flush"). Writing twice the last-level cache is the portable way, but a VM that
// reports its host's whole L3 (480 MiB on a 2-core Xeon guest) spent about 95 ms a run on it.
// Where the CPU can evict a line from every level (clflushopt), the harness's own buffers are
// evicted line by line and the cores' private caches overwritten; the rest of the last-level
// cache keeps what it holds, as it would between two calls of a kernel in a real program.
#ifndef KFORGE_BACKEND_CPP_CACHE_FLUSH_H_
#define KFORGE_BACKEND_CPP_CACHE_FLUSH_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace kforge {

struct HostCacheSizes {
  int64_t llc = 0;               // the last-level cache as cpu0 sees it (0: unknown)
  int64_t private_per_core = 0;  // the data and unified caches below it, per core
  int cores = 1;                 // logical CPUs online
};

// From `sysfs_cpu` (/sys/devices/system/cpu: cpu0/cache/index*/{level,type,size}, online).
HostCacheSizes ReadHostCacheSizes(const std::string& sysfs_cpu = "/sys/devices/system/cpu");
// This machine's, read once per process.
const HostCacheSizes& HostCaches();

enum class FlushMethod {
  kOverwrite,    // write max(2 x LLC, 64 MiB)
  kEvictLines,   // evict every line of the buffers, then overwrite 2 x the private caches
};

// kEvictLines where the CPU has it and it costs less than the overwrite: evicting a line costs
// about 2.4 times less than writing one (25 against 10.6 GB/s on the Xeon guest), so up to
// 4 x LLC of buffers.
FlushMethod ChooseFlush(const HostCacheSizes& caches, size_t buffer_bytes, bool line_eviction);

// The overwrite's size for `method`.
size_t OverwriteBytes(const HostCacheSizes& caches, FlushMethod method);

// Whether EvictLines works here (x86-64 with clflushopt).
bool LineEvictionAvailable();

// One flush of a device whose touched buffers hold `touched_bytes`: kEvictLines, overwriting
// OverwriteBytes(HostCaches(), kEvictLines), where the backend can reach the buffers' host
// memory (`evictable`), the CPU has clflushopt and ChooseFlush agrees; else kOverwrite of the
// backend's own `fill_bytes`.
struct FlushPlan {
  FlushMethod method = FlushMethod::kOverwrite;
  size_t overwrite_bytes = 0;
};
FlushPlan PlanFlush(size_t touched_bytes, bool evictable, size_t fill_bytes);

// Writes back and evicts every cache line of [p, p + bytes) from every level, and orders that
// before what follows. Only where LineEvictionAvailable().
void EvictLines(const void* p, size_t bytes);

}  // namespace kforge

#endif  // KFORGE_BACKEND_CPP_CACHE_FLUSH_H_
