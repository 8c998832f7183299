// A small text/event-stream (Server-Sent Events) parser, per the WHATWG HTML "event stream"
// rules: lines end in LF, CRLF or CR; "field: value" (one optional space after the colon);
// lines starting with ':' are comments; "data" lines accumulate with '\n'; a blank line
// dispatches the event. Unlike a live stream, a final event not followed by a blank line is
// still returned (a stored body may lack the last newline).
//
// Thread-safety: pure function.
#ifndef KFORGE_LLM_SSE_H_
#define KFORGE_LLM_SSE_H_

#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

struct SseEvent {
  std::string event;  // Empty means the default type "message".
  std::string data;
  std::string id;
};

std::vector<SseEvent> ParseSse(std::string_view body);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_SSE_H_
