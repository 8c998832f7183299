#include "backend/host_args.h"

#include <algorithm>
#include <cstring>

namespace kforge {

// Whole copies of the pattern (a tail shorter than it stays as it was). One byte is a memset;
// a wider one is laid down once and then copied onto itself in doubling spans: a memcpy call
// per element (the first version) made a 16 MB canary fill cost 120 ms.
void FillPattern(void* dst, const void* pattern, size_t pattern_bytes, size_t bytes) {
  char* d = static_cast<char*>(dst);
  if (pattern_bytes == 0) return;
  const size_t total = bytes / pattern_bytes * pattern_bytes;
  if (total == 0) return;
  if (pattern_bytes == 1) {
    std::memset(d, *static_cast<const unsigned char*>(pattern), total);
    return;
  }
  std::memcpy(d, pattern, pattern_bytes);
  for (size_t done = pattern_bytes; done < total;) {
    const size_t n = std::min(done, total - done);  // a multiple of pattern_bytes: copies stay aligned to it
    std::memcpy(d + done, d, n);
    done += n;
  }
}

}  // namespace kforge
