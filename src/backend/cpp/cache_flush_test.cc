// The host cache flush (cache_flush.h): cache sizes from fixed sysfs trees (testdata/sysfs-cpu/),
// the choice between evicting lines and overwriting, and on this CPU that evicted lines keep
// their bytes and really leave the caches (a dependent chase through them is slower).
#include "backend/cpp/cache_flush.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;
const fs::path kSysfs = fs::path(KFORGE_BACKEND_TESTDATA) / "sysfs-cpu";

TEST(CacheFlushTest, GivenAGuestThatReportsItsHostsL3TheSizesAreReadPerLevel) {
  HostCacheSizes c = ReadHostCacheSizes((kSysfs / "xeon-guest").string());
  EXPECT_EQ(c.llc, int64_t{491520} << 10);
  EXPECT_EQ(c.private_per_core, (int64_t{48} + 2048) << 10);  // L1d and L2; not L1i
  EXPECT_EQ(c.cores, 2);
}

TEST(CacheFlushTest, GivenTwoLevelsTheSecondIsTheLastAndCpusAreCountedFromRanges) {
  HostCacheSizes c = ReadHostCacheSizes((kSysfs / "two-levels").string());
  EXPECT_EQ(c.llc, int64_t{4096} << 10);
  EXPECT_EQ(c.private_per_core, int64_t{64} << 10);
  EXPECT_EQ(c.cores, 8);
}

TEST(CacheFlushTest, GivenNoSysfsNothingIsKnownAndTheFlushOverwrites) {
  HostCacheSizes c = ReadHostCacheSizes("/nonexistent");
  EXPECT_EQ(c.llc, 0);
  EXPECT_GE(c.cores, 1);
  EXPECT_EQ(ChooseFlush(c, 1 << 20, true), FlushMethod::kOverwrite);
  EXPECT_EQ(OverwriteBytes(c, FlushMethod::kOverwrite), size_t{64} << 20);
}

TEST(CacheFlushTest, LinesAreEvictedUpToFourTimesTheLastLevelCache) {
  HostCacheSizes c{int64_t{480} << 20, int64_t{2} << 20, 2};
  EXPECT_EQ(ChooseFlush(c, size_t{16} << 20, true), FlushMethod::kEvictLines);
  EXPECT_EQ(ChooseFlush(c, size_t{1920} << 20, true), FlushMethod::kEvictLines);
  EXPECT_EQ(ChooseFlush(c, (size_t{1920} << 20) + 1, true), FlushMethod::kOverwrite);
  EXPECT_EQ(ChooseFlush(c, size_t{16} << 20, false), FlushMethod::kOverwrite);
  EXPECT_EQ(OverwriteBytes(c, FlushMethod::kEvictLines), size_t{8} << 20);    // 2 x 2 MiB x 2 cores
  EXPECT_EQ(OverwriteBytes(c, FlushMethod::kOverwrite), size_t{960} << 20);  // 2 x LLC
  HostCacheSizes tiny{int64_t{8} << 20, int64_t{32} << 10, 1};
  EXPECT_EQ(OverwriteBytes(tiny, FlushMethod::kEvictLines), size_t{1} << 20);  // the floor
  EXPECT_EQ(OverwriteBytes(tiny, FlushMethod::kOverwrite), size_t{64} << 20);
}

// A backend that cannot reach its buffers' memory fills its own amount; one that can evicts
// where this CPU and its caches allow it.
TEST(CacheFlushTest, APlanEvictsOnlyWhereTheBackendCanReachTheBuffers) {
  FlushPlan p = PlanFlush(size_t{16} << 20, false, 12345);
  EXPECT_EQ(p.method, FlushMethod::kOverwrite);
  EXPECT_EQ(p.overwrite_bytes, 12345u);
  const HostCacheSizes& c = HostCaches();
  p = PlanFlush(size_t{16} << 20, true, 12345);
  if (LineEvictionAvailable() && ChooseFlush(c, size_t{16} << 20, true) == FlushMethod::kEvictLines) {
    EXPECT_EQ(p.method, FlushMethod::kEvictLines);
    EXPECT_EQ(p.overwrite_bytes, OverwriteBytes(c, FlushMethod::kEvictLines));
  } else {
    EXPECT_EQ(p.method, FlushMethod::kOverwrite);
    EXPECT_EQ(p.overwrite_bytes, 12345u);
  }
}

TEST(CacheFlushTest, EvictedLinesKeepTheirBytesAtAnyAlignment) {
  if (!LineEvictionAvailable()) GTEST_SKIP() << "no clflushopt on this CPU";
  std::vector<unsigned char> v(3 * 4096 + 17);
  std::iota(v.begin(), v.end(), 0);
  std::vector<unsigned char> before = v;
  EvictLines(v.data() + 3, v.size() - 5);  // neither end on a line
  EvictLines(v.data(), 0);
  EXPECT_EQ(v, before);
}

// Nanoseconds per step of a dependent walk through `next` (each step one line).
double ChaseNs(const std::vector<uint64_t>& next, size_t steps) {
  uint64_t i = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t s = 0; s < steps; ++s) i = next[i];
  auto t1 = std::chrono::steady_clock::now();
  EXPECT_LT(i, next.size());  // keeps the walk
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(steps);
}

TEST(CacheFlushTest, EvictedLinesAreReadFromMemoryAgain) {
  if (!LineEvictionAvailable()) GTEST_SKIP() << "no clflushopt on this CPU";
  // 512 KiB, one 8-byte link per 64-byte line, in a random cycle: it fits every L2 and
  // defeats the prefetchers, so a cached walk is a few ns a step and one from memory 50+.
  const size_t lines = 8192, stride = 8;
  std::vector<uint64_t> next(lines * stride, 0);
  std::vector<size_t> order(lines);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(7));
  for (size_t k = 0; k < lines; ++k) next[order[k] * stride] = order[(k + 1) % lines] * stride;
  double cached = 1e9, evicted = 1e9;
  for (int attempt = 0; attempt < 5; ++attempt) {
    ChaseNs(next, lines);  // brings every line in
    cached = std::min(cached, ChaseNs(next, lines));
    EvictLines(next.data(), next.size() * sizeof(uint64_t));
    evicted = std::min(evicted, ChaseNs(next, lines));
  }
  EXPECT_GT(evicted, 2 * cached) << "cached " << cached << " ns a step, evicted " << evicted;
}

}  // namespace
}  // namespace kforge
