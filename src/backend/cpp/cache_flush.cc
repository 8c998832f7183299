#include "backend/cpp/cache_flush.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "base/files.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kforge {

namespace {

// "32768K" -> bytes.
int64_t CacheBytes(const std::string& text) {
  if (text.empty()) return 0;
  int64_t v = std::atoll(text.c_str());
  if (text.back() == 'K') v <<= 10;
  if (text.back() == 'M') v <<= 20;
  return v;
}

// "0-1,4" -> 3.
int CountCpus(const std::string& list) {
  int n = 0;
  size_t i = 0;
  while (i < list.size()) {
    size_t end = list.find(',', i);
    if (end == std::string::npos) end = list.size();
    std::string range = list.substr(i, end - i);
    size_t dash = range.find('-');
    if (!range.empty()) n += dash == std::string::npos ? 1 : std::atoi(range.c_str() + dash + 1) - std::atoi(range.c_str()) + 1;
    i = end + 1;
  }
  return n;
}

constexpr size_t kLine = 64;  // every x86-64 CPU's cache line; clflush size from CPUID agrees

}  // namespace

HostCacheSizes ReadHostCacheSizes(const std::string& sysfs_cpu) {
  HostCacheSizes c;
  int llc_level = 0;
  int64_t by_level[8] = {};
  for (int idx = 0; idx < 8; ++idx) {
    const std::string base = sysfs_cpu + "/cpu0/cache/index" + std::to_string(idx) + "/";
    const std::string level = ReadFirstLine(base + "level");
    if (level.empty()) continue;
    const int lv = std::clamp(std::atoi(level.c_str()), 0, 7);
    const int64_t bytes = CacheBytes(ReadFirstLine(base + "size"));
    if (ReadFirstLine(base + "type") == "Instruction") continue;
    by_level[lv] += bytes;
    if (lv >= llc_level) llc_level = lv, c.llc = bytes;
  }
  for (int lv = 1; lv < llc_level; ++lv) c.private_per_core += by_level[lv];
  const int online = CountCpus(ReadFirstLine(sysfs_cpu + "/online"));
  c.cores = online > 0 ? online : std::max(1u, std::thread::hardware_concurrency());
  return c;
}

const HostCacheSizes& HostCaches() {
  static const HostCacheSizes caches = ReadHostCacheSizes();
  return caches;
}

FlushMethod ChooseFlush(const HostCacheSizes& caches, size_t buffer_bytes, bool line_eviction) {
  if (!line_eviction || caches.llc <= 0 || caches.private_per_core <= 0) return FlushMethod::kOverwrite;
  return static_cast<int64_t>(buffer_bytes) <= 4 * caches.llc ? FlushMethod::kEvictLines : FlushMethod::kOverwrite;
}

size_t OverwriteBytes(const HostCacheSizes& caches, FlushMethod method) {
  if (method == FlushMethod::kEvictLines)
    return static_cast<size_t>(std::max<int64_t>(2 * caches.private_per_core * caches.cores, int64_t{1} << 20));
  const int64_t llc = caches.llc > 0 ? caches.llc : int64_t{32} << 20;  // unknown: assume a large LLC
  return static_cast<size_t>(std::max<int64_t>(2 * llc, int64_t{64} << 20));
}

FlushPlan PlanFlush(size_t touched_bytes, bool evictable, size_t fill_bytes) {
  if (evictable && ChooseFlush(HostCaches(), touched_bytes, LineEvictionAvailable()) == FlushMethod::kEvictLines)
    return {FlushMethod::kEvictLines, OverwriteBytes(HostCaches(), FlushMethod::kEvictLines)};
  return {FlushMethod::kOverwrite, fill_bytes};
}

#if defined(__x86_64__)
bool LineEvictionAvailable() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & (1u << 23)) != 0;  // CPUID.(EAX=7,ECX=0):EBX[23], CLFLUSHOPT
  }();
  return has;
}

__attribute__((target("clflushopt"))) void EvictLines(const void* p, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kLine} - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  for (uintptr_t a = first; a < end; a += kLine) _mm_clflushopt(reinterpret_cast<void*>(a));
  _mm_mfence();  // clflushopt is ordered only by a fence; the timed call's loads come after it
}
#else
// AArch64's `dc civac` would do the same; untested here, so other CPUs overwrite.
bool LineEvictionAvailable() { return false; }
void EvictLines(const void*, size_t) { std::abort(); }
#endif

}  // namespace kforge
