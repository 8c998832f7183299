#include "llm/sse.h"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

TEST(ParseSseTest, GivenEventsSeparatedByBlankLinesItReturnsEach) {
  std::vector<SseEvent> events = ParseSse("event: a\ndata: 1\n\nevent: b\ndata: 2\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "a");
  EXPECT_EQ(events[0].data, "1");
  EXPECT_EQ(events[1].event, "b");
  EXPECT_EQ(events[1].data, "2");
}

TEST(ParseSseTest, GivenCrLfOrCrLineEndsItSplitsTheSame) {
  EXPECT_EQ(ParseSse("data: x\r\n\r\ndata: y\r\n\r\n").size(), 2u);
  EXPECT_EQ(ParseSse("data: x\r\rdata: y\r\r").size(), 2u);
}

TEST(ParseSseTest, GivenSeveralDataLinesTheyAreJoinedWithNewlines) {
  std::vector<SseEvent> events = ParseSse("data: {\ndata: \"a\": 1\ndata: }\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "{\n\"a\": 1\n}");
}

TEST(ParseSseTest, GivenCommentsAndUnknownFieldsTheyAreIgnored) {
  std::vector<SseEvent> events = ParseSse(": keep-alive\nretry: 10\nfoo: bar\ndata:x\nid: 7\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x");  // No space after the colon is fine too.
  EXPECT_EQ(events[0].id, "7");
}

TEST(ParseSseTest, GivenNoFinalBlankLineTheLastEventIsStillReturned) {
  std::vector<SseEvent> events = ParseSse("event: message_stop\ndata: {\"type\":\"message_stop\"}");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "message_stop");
}

TEST(ParseSseTest, GivenOnlyAnEventLineWithoutDataNothingIsDispatched) {
  EXPECT_TRUE(ParseSse("event: ping\n\n").empty());
  EXPECT_TRUE(ParseSse("").empty());
  EXPECT_TRUE(ParseSse("{\"not\": \"sse\"}\n\n....\n").empty());
}

}  // namespace
}  // namespace kforge::llm
