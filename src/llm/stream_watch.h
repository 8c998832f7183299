// StreamWatch: reads a streamed answer as its bytes arrive, for HttpLlmClient.
//
// The transport hands it each piece of a 2xx text/event-stream body. It cuts the bytes into
// whole server-sent events, folds them with the wire's StreamFold, counts the pieces of answer
// (about one token each), tells the request's on_progress how the answer is coming along, and
// asks the transport to stop when the answer has started to repeat itself (RepeatedTailStart).
//
// Thread-safety: one StreamWatch per attempt, used from the attempt's thread only.
#ifndef KFORGE_LLM_STREAM_WATCH_H_
#define KFORGE_LLM_STREAM_WATCH_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kforge/llm/llm.h"
#include "kforge/llm/transport.h"
#include "llm/wire.h"

namespace kforge::llm {

// When the end of `text` is one block repeated, back to back, over at least kRepetitionSpan
// characters (blocks of up to kRepetitionMaxPeriod characters, seen at least three times):
// the offset where the block's second copy starts, counting from where the repetition began,
// so text.substr(0, offset) keeps what came before it and one copy.
// Otherwise std::string_view::npos. Code that merely looks alike (unrolled lines whose indices
// differ) is not exactly periodic and is never matched.
inline constexpr size_t kRepetitionSpan = 600;
inline constexpr size_t kRepetitionMaxPeriod = 400;
size_t RepeatedTailStart(std::string_view text);

class StreamWatch {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `start`: when the attempt began (first_token and elapsed count from it). `on_progress` may
  // be empty. REQUIRES: wire and clock outlive the watch.
  StreamWatch(const WireCodec& wire, bool stop_on_repetition, Clock* clock, TimePoint start,
              std::function<void(const StreamProgress&)> on_progress);

  // Takes the next piece of the body. Returns false once the answer should stop (it repeats).
  bool OnBytes(std::string_view bytes);

  // The answer once the transfer ended. After a stop for repetition: what arrived, cut to one
  // copy of the repeated block, FinishReason::kRepetition, and, unless the server had already
  // sent usage, an estimate (usage_estimated; input = prompt_bytes / 4). Otherwise the fold's
  // reply ([bad_response] for a stream that ended before its finish).
  Reply Finish(bool stopped, size_t prompt_bytes);

  std::chrono::milliseconds first_token() const { return progress_.first_token; }

 private:
  void Consume(std::string_view events);
  void Observe();
  void Report(bool force);

  std::unique_ptr<StreamFold> fold_;
  const bool stop_on_repetition_;
  Clock* const clock_;
  const TimePoint start_;
  const std::function<void(const StreamProgress&)> on_progress_;
  std::string pending_;          // Bytes after the last whole event.
  StreamProgress progress_;
  size_t seen_chars_ = 0;        // Text + reasoning characters at the last event.
  size_t checked_chars_ = 0;     // Text length at the last repetition check.
  size_t repeat_cut_ = std::string_view::npos;
  TimePoint last_report_{};
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_STREAM_WATCH_H_
