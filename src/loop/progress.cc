#include "loop/progress.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

namespace kforge {

namespace {

std::string Line(const ProgressState& s) {
  std::string best = s.best_ms > 0 ? fmt::format("best {:.4f} ms", s.best_ms) : "no correct kernel yet";
  std::string speed = s.best_ms > 0 && s.seed_ms > 0 ? fmt::format(" ({:.2f}x seed)", s.seed_ms / s.best_ms) : "";
  std::string left = s.budget_s > 0 ? fmt::format(", {:.0f}s left", std::max(0.0, s.budget_s - s.elapsed_s)) : "";
  return fmt::format("run {} | {} | attempt {} {} | {}{} | SOL {:.1f}% | {} tokens ${:.4f} | {:.0f}s{}", s.run_id, s.phase,
                     s.attempt, s.last_status, best, speed, s.sol_percent, s.tokens, s.cost_usd, s.elapsed_s, left);
}

class LineProgress : public ProgressSink {
 public:
  void Report(const ProgressState& s, const std::string& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    fmt::print(stderr, "kforge: {} -- {}\n", Line(s), event);
  }
  void Tick(const ProgressState& s, const std::string& event) override {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ticked_ && now - last_tick_ < std::chrono::duration<double>(kTickLineSeconds)) return;
      ticked_ = true;
      last_tick_ = now;
    }
    Report(s, event);
  }

 private:
  std::mutex mu_;
  bool ticked_ = false;
  std::chrono::steady_clock::time_point last_tick_;
};

class TerminalProgress : public ProgressSink {
 public:
  void Report(const ProgressState& s, const std::string& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string line = Line(s) + " | " + event;
    if (line.size() > 150) line = line.substr(0, 147) + "...";
    fmt::print(stderr, "\r\033[K{}", line);
    std::fflush(stderr);
  }
  void Tick(const ProgressState& s, const std::string& event) override { Report(s, event); }
  void Finish() override { fmt::print(stderr, "\n"); }

 private:
  std::mutex mu_;
};

class SilentProgress : public ProgressSink {
 public:
  void Report(const ProgressState&, const std::string&) override {}
};

}  // namespace

std::unique_ptr<ProgressSink> NewProgressSink(int fd) {
  if (isatty(fd)) return std::make_unique<TerminalProgress>();
  return std::make_unique<LineProgress>();
}

std::unique_ptr<ProgressSink> NewSilentProgress() { return std::make_unique<SilentProgress>(); }

}  // namespace kforge
