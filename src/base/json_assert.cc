#include "base/json_assert.h"

#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

void JsonAssertionFailed(const char* condition) {
  throw nlohmann::detail::out_of_range::create(
      403, std::string("a JSON value lacks what was read from it (") + condition + ")", nullptr);
}

}  // namespace kforge
