#include "llm/limiter.h"

#include <algorithm>
#include <cassert>

namespace kforge::llm {

ConcurrencyLimiter::ConcurrencyLimiter(int limit) : limit_(limit) { assert(limit >= 1); }

ConcurrencyLimiter::Slot ConcurrencyLimiter::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  freed_.wait(lock, [this] { return in_flight_ < limit_; });
  ++in_flight_;
  peak_ = std::max(peak_, in_flight_);
  return Slot(this);
}

void ConcurrencyLimiter::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
  }
  freed_.notify_one();
}

int ConcurrencyLimiter::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

int ConcurrencyLimiter::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

}  // namespace kforge::llm
