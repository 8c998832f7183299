// Framed messages between kforge-worker's supervisor and its child (docs/worker-protocol.md).
//
// A frame is a 4-byte head length, an 8-byte blob length (both little-endian), the head (JSON
// text) and the blob (raw bytes, e.g. output tensors). The child is hostile: the supervisor
// bounds every length it reads and treats a malformed frame like a crash.
#ifndef KFORGE_WORKER_CHANNEL_H_
#define KFORGE_WORKER_CHANNEL_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/status.h"

namespace kforge {

struct Message {
  nlohmann::json head;
  std::string blob;
};

// The child's stdout and stderr, drained while the supervisor waits for a message, so that a
// chatty child never blocks on a full pipe. Keeps the last `keep_bytes`, counts everything.
struct OutputDrain {
  int fd = -1;
  size_t keep_bytes = 64 << 10;
  uint64_t flood_bytes = 64ull << 20;  // more than this in total is a flood
  std::string tail;
  uint64_t total = 0;
  bool closed = false;
  bool flooded() const { return flood_bytes > 0 && total > flood_bytes; }
  void Drain();  // reads what is there now, without blocking
};

Status SendMessage(int fd, const nlohmann::json& head, const std::string& blob = "");

// Waits for one message. Unavailable when the peer closed the socket or `drain` flooded;
// InvalidArgument for a frame over `max_blob_bytes` or a head that is not JSON.
Result<Message> ReceiveMessage(int fd, uint64_t max_blob_bytes, OutputDrain* drain = nullptr);

}  // namespace kforge

#endif  // KFORGE_WORKER_CHANNEL_H_
