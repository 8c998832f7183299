#include "worker/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace kforge {

namespace {

constexpr uint32_t kMaxHeadBytes = 4u << 20;

Status WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::Unavailable(std::string("the other side of the worker channel is gone: ") + std::strerror(errno));
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Reads exactly n bytes from `fd`, draining `drain` whenever it has data.
Status ReadAll(int fd, char* data, size_t n, OutputDrain* drain) {
  while (n > 0) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {drain && !drain->closed ? drain->fd : -1, POLLIN, 0}};
    int r = poll(fds, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::Internal(std::string("poll: ") + std::strerror(errno));
    if (fds[1].revents) {
      drain->Drain();
      if (drain->flooded()) return Status::Unavailable("flood");
    }
    if (!fds[0].revents) continue;
    ssize_t got = read(fd, data, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Status::Unavailable("the worker's child closed the channel");
    data += got;
    n -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

}  // namespace

void OutputDrain::Drain() {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) closed = true;
    if (n <= 0) return;
    total += static_cast<uint64_t>(n);
    tail.append(buf, static_cast<size_t>(n));
    if (tail.size() > 2 * keep_bytes) tail.erase(0, tail.size() - keep_bytes);
    if (flooded()) return;
  }
}

Status SendMessage(int fd, const nlohmann::json& head, const std::string& blob) {
  std::string text = head.dump();
  unsigned char frame[12];
  uint32_t h = static_cast<uint32_t>(text.size());
  uint64_t b = blob.size();
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<unsigned char>(h >> (8 * i));
  for (int i = 0; i < 8; ++i) frame[4 + i] = static_cast<unsigned char>(b >> (8 * i));
  KF_RETURN_IF_ERROR(WriteAll(fd, reinterpret_cast<const char*>(frame), sizeof frame));
  KF_RETURN_IF_ERROR(WriteAll(fd, text.data(), text.size()));
  return WriteAll(fd, blob.data(), blob.size());
}

Result<Message> ReceiveMessage(int fd, uint64_t max_blob_bytes, OutputDrain* drain) {
  unsigned char frame[12];
  KF_RETURN_IF_ERROR(ReadAll(fd, reinterpret_cast<char*>(frame), sizeof frame, drain));
  uint32_t h = 0;
  uint64_t b = 0;
  for (int i = 0; i < 4; ++i) h |= static_cast<uint32_t>(frame[i]) << (8 * i);
  for (int i = 0; i < 8; ++i) b |= static_cast<uint64_t>(frame[4 + i]) << (8 * i);
  if (h > kMaxHeadBytes || b > max_blob_bytes)
    return Status::InvalidArgument("malformed message from the worker's child (" + std::to_string(h) + "-byte head, " +
                                   std::to_string(b) + "-byte blob)");
  Message m;
  std::string text(h, '\0');
  KF_RETURN_IF_ERROR(ReadAll(fd, text.data(), h, drain));
  m.blob.resize(static_cast<size_t>(b));
  KF_RETURN_IF_ERROR(ReadAll(fd, m.blob.data(), m.blob.size(), drain));
  m.head = nlohmann::json::parse(text, nullptr, false);
  if (m.head.is_discarded() || !m.head.is_object())
    return Status::InvalidArgument("malformed message from the worker's child (head is not a JSON object)");
  return m;
}

}  // namespace kforge
