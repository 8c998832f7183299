#include "backend/host_args.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace kforge {
namespace {

// Whole copies of the pattern, for every width the judge fills with; a tail shorter than the
// pattern keeps what was there.
TEST(FillPatternTest, GivenEachWidthEveryWholeCopyHoldsThePatternAndTheTailIsUntouched) {
  const unsigned char pattern[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
  for (size_t width : {1, 2, 3, 4, 8}) {
    for (size_t bytes : {0, 1, 7, 8, 9, 4096, 4099, (1 << 20) + 5}) {
      std::string buf(bytes + 16, '\x5a');
      FillPattern(buf.data(), pattern, width, bytes);
      const size_t whole = bytes / width * width;
      for (size_t k = 0; k < whole; ++k)
        ASSERT_EQ(static_cast<unsigned char>(buf[k]), pattern[k % width]) << "width " << width << " bytes " << bytes << " at " << k;
      for (size_t k = whole; k < buf.size(); ++k)
        ASSERT_EQ(buf[k], '\x5a') << "width " << width << " bytes " << bytes << ": byte " << k << " past the copies changed";
    }
  }
}

}  // namespace
}  // namespace kforge
