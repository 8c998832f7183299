// Progress of a forge run for people: a live status line on a terminal, plain log lines
// otherwise. Thread-safety: Report may be called from several threads.
#ifndef KFORGE_LOOP_PROGRESS_H_
#define KFORGE_LOOP_PROGRESS_H_

#include <memory>
#include <mutex>
#include <string>

namespace kforge {

struct ProgressState {
  int64_t run_id = 0;
  std::string phase;         // "seed", "functional", "optimize", "tune", "done"
  int64_t attempt = 0;
  std::string last_status;   // verdict of the last attempt
  double best_ms = 0, seed_ms = 0, sol_percent = 0;
  int64_t tokens = 0;
  double cost_usd = 0;
  double elapsed_s = 0, budget_s = 0;  // budget 0: none
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void Report(const ProgressState& s, const std::string& event) = 0;
  // A live update that may come many times a second (a streamed answer's tokens): the terminal
  // view shows each; plain lines show one every kTickLineSeconds at most.
  virtual void Tick(const ProgressState& s, const std::string& event) { (void)s, (void)event; }
  virtual void Finish() {}
};

inline constexpr double kTickLineSeconds = 30;

// Chooses the terminal view when `fd` is a terminal, else plain lines.
std::unique_ptr<ProgressSink> NewProgressSink(int fd);
// Discards everything (tests).
std::unique_ptr<ProgressSink> NewSilentProgress();

}  // namespace kforge

#endif  // KFORGE_LOOP_PROGRESS_H_
