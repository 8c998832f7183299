#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

// Without json_assert.h this reads past the end of the object's map (NDEBUG): a crash now and
// then, or a value made of whatever memory lay there.
TEST(JsonAssertTest, GivenAMissingKeyReadThroughAConstReferenceItThrowsAJsonError) {
  const nlohmann::json report = nlohmann::json::parse(R"({"device_ms": "x"})");
  EXPECT_THROW(static_cast<void>(report["input_hashes_after"] != report["input_hashes_before"]),
               nlohmann::json::out_of_range);
  try {
    static_cast<void>(report["threads_after"].get<int>());
    ADD_FAILURE() << "no exception";
  } catch (const nlohmann::json::exception& e) {
    EXPECT_EQ(e.id, 403);
    EXPECT_NE(std::string(e.what()).find("lacks what was read"), std::string::npos) << e.what();
  }
}

TEST(JsonAssertTest, GivenAPresentKeyTheConstReadIsUnchanged) {
  const nlohmann::json report = nlohmann::json::parse(R"({"threads_after": 3})");
  EXPECT_EQ(report["threads_after"].get<int>(), 3);
}

}  // namespace
