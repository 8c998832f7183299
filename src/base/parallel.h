// Runs fn(0) .. fn(n - 1) on up to `max_threads` threads (the machine's cores, at most 8, by
// default), each index once; returns when all have run. The calling thread takes a share, so a
// machine or process without spare threads still finishes. fn must not throw.
#ifndef KFORGE_BASE_PARALLEL_H_
#define KFORGE_BASE_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

namespace kforge {

template <typename Fn>
void ParallelFor(size_t n, Fn&& fn, size_t max_threads = 0) {
  if (max_threads == 0) max_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  const size_t threads = std::min(n, max_threads);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {  // no thread to be had (a process limit): fewer do it
      break;
    }
  }
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace kforge

#endif  // KFORGE_BASE_PARALLEL_H_
