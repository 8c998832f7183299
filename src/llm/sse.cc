#include "llm/sse.h"

namespace kforge::llm {

namespace {

// Splits off the next line (without its terminator) and advances `body` past it.
std::string_view NextLine(std::string_view* body) {
  size_t end = body->find_first_of("\r\n");
  if (end == std::string_view::npos) {
    std::string_view line = *body;
    body->remove_prefix(body->size());
    return line;
  }
  std::string_view line = body->substr(0, end);
  size_t skip = (body->substr(end, 2) == "\r\n") ? 2 : 1;
  body->remove_prefix(end + skip);
  return line;
}

struct Pending {
  SseEvent event;
  bool has_data = false;
};

void ApplyField(std::string_view line, Pending* pending) {
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    pending->event.event = std::string(value);
  } else if (field == "data") {
    if (pending->has_data) pending->event.data.push_back('\n');
    pending->event.data.append(value);
    pending->has_data = true;
  } else if (field == "id") {
    pending->event.id = std::string(value);
  }  // "retry" and unknown fields are ignored.
}

void Dispatch(Pending* pending, std::vector<SseEvent>* events) {
  if (pending->has_data) events->push_back(std::move(pending->event));
  *pending = Pending();
}

}  // namespace

std::vector<SseEvent> ParseSse(std::string_view body) {
  std::vector<SseEvent> events;
  Pending pending;
  while (!body.empty()) {
    std::string_view line = NextLine(&body);
    if (line.empty()) {
      Dispatch(&pending, &events);
    } else if (line.front() != ':') {
      ApplyField(line, &pending);
    }
  }
  Dispatch(&pending, &events);
  return events;
}

}  // namespace kforge::llm
