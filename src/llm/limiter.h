// ConcurrencyLimiter: a counting semaphore that caps requests in flight to one provider.
//
// Thread-safety: all methods are safe from many threads.
#ifndef KFORGE_LLM_LIMITER_H_
#define KFORGE_LLM_LIMITER_H_

#include <condition_variable>
#include <mutex>

namespace kforge::llm {

class ConcurrencyLimiter {
 public:
  // REQUIRES: limit >= 1.
  explicit ConcurrencyLimiter(int limit);

  // Holds one unit while alive.
  class Slot {
   public:
    explicit Slot(ConcurrencyLimiter* limiter) : limiter_(limiter) {}
    Slot(Slot&& other) noexcept : limiter_(other.limiter_) { other.limiter_ = nullptr; }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() {
      if (limiter_) limiter_->Release();
    }

   private:
    ConcurrencyLimiter* limiter_;
  };

  // Blocks until fewer than limit() slots are held, then takes one.
  [[nodiscard]] Slot Acquire();

  int limit() const { return limit_; }
  int in_flight() const;
  int peak() const;  // The most slots ever held at once.

 private:
  void Release();

  const int limit_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  int in_flight_ = 0;
  int peak_ = 0;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_LIMITER_H_
