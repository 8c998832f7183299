// StreamWatch (stream_watch.h).
#include "llm/stream_watch.h"

#include <algorithm>
#include <cstring>

namespace kforge::llm {

namespace {

using std::chrono::milliseconds;

// How often on_progress hears about an answer (besides its first piece).
constexpr milliseconds kReportEvery{1000};
// New characters between two repetition checks (a check is one memcmp per period).
constexpr size_t kCheckEvery = 64;

// The end of the last whole event in `bytes` (just after its blank line), or 0 if none ended.
size_t EndOfWholeEvents(std::string_view bytes) {
  size_t end = 0;
  for (std::string_view blank : {"\n\n", "\r\n\r\n", "\r\r"}) {
    size_t at = bytes.rfind(blank);
    if (at != std::string_view::npos) end = std::max(end, at + blank.size());
  }
  return end;
}

}  // namespace

size_t RepeatedTailStart(std::string_view text) {
  const size_t n = text.size();
  for (size_t period = 1; period <= kRepetitionMaxPeriod; ++period) {
    const size_t span = std::max(kRepetitionSpan, 3 * period);
    if (span > n) break;
    const char* begin = text.data() + (n - span);
    // Periodic over the span: every character equals the one a period before it.
    if (std::memcmp(begin + period, begin, span - period) != 0) continue;
    // Where the repetition began: extend it back while it stays periodic.
    size_t start = n - span;
    while (start > 0 && text[start - 1] == text[start - 1 + period]) --start;
    return start + period;
  }
  return std::string_view::npos;
}

StreamWatch::StreamWatch(const WireCodec& wire, bool stop_on_repetition, Clock* clock,
                         TimePoint start, std::function<void(const StreamProgress&)> on_progress)
    : fold_(wire.NewStreamFold()),
      stop_on_repetition_(stop_on_repetition),
      clock_(clock),
      start_(start),
      on_progress_(std::move(on_progress)) {}

bool StreamWatch::OnBytes(std::string_view bytes) {
  pending_.append(bytes);
  const size_t end = EndOfWholeEvents(pending_);
  if (end > 0) {
    Consume(std::string_view(pending_).substr(0, end));
    pending_.erase(0, end);
  }
  return repeat_cut_ == std::string_view::npos;
}

void StreamWatch::Consume(std::string_view events) {
  for (const SseEvent& event : ParseSse(events)) {
    fold_->Add(event);
    Observe();
    if (repeat_cut_ != std::string_view::npos) return;
  }
}

// Counts a piece of answer when the text or reasoning grew, reports, and checks for repetition.
void StreamWatch::Observe() {
  const ChatResponse& partial = fold_->partial();
  const size_t chars = partial.text.size() + partial.reasoning.size();
  if (chars == seen_chars_) return;
  seen_chars_ = chars;
  progress_.tokens += 1;
  progress_.chars = static_cast<int64_t>(partial.text.size());
  progress_.elapsed = std::chrono::duration_cast<milliseconds>(clock_->Now() - start_);
  const bool first = progress_.tokens == 1;
  if (first) progress_.first_token = progress_.elapsed;
  Report(first);
  if (!stop_on_repetition_ || partial.text.size() < checked_chars_ + kCheckEvery) return;
  checked_chars_ = partial.text.size();
  repeat_cut_ = RepeatedTailStart(partial.text);
}

void StreamWatch::Report(bool force) {
  if (!on_progress_) return;
  const TimePoint now = clock_->Now();
  if (!force && now - last_report_ < kReportEvery) return;
  last_report_ = now;
  on_progress_(progress_);
}

Reply StreamWatch::Finish(bool stopped, size_t prompt_bytes) {
  if (!pending_.empty() && !stopped) {
    Consume(pending_);  // A last event without its blank line.
    pending_.clear();
  }
  if (repeat_cut_ == std::string_view::npos || !stopped) return fold_->Finish();
  ChatResponse response = fold_->partial();
  response.text.resize(repeat_cut_);
  response.finish_reason = FinishReason::kRepetition;
  response.raw_finish_reason = "stopped by kforge: the answer repeated itself";
  if (response.usage.output_tokens == 0) {
    response.usage.output_tokens = progress_.tokens;
    if (response.usage.input_tokens == 0) {
      response.usage.input_tokens = static_cast<int64_t>(prompt_bytes / 4);
    }
    response.usage_estimated = true;
  }
  return Reply::Ok(std::move(response));
}

}  // namespace kforge::llm
