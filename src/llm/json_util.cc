#include "llm/json_util.h"

namespace kforge::llm {

std::optional<Json> ParseJson(std::string_view text, std::string* error) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.what() quotes the bytes it stopped at; report only the position.
    *error =
        "invalid JSON at byte " + std::to_string(e.byte) + " of " + std::to_string(text.size());
    return std::nullopt;
  }
}

const Json* Member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json* ObjectMember(const Json& object, std::string_view key) {
  const Json* member = Member(object, key);
  return member && member->is_object() ? member : nullptr;
}

const Json* ArrayMember(const Json& object, std::string_view key) {
  const Json* member = Member(object, key);
  return member && member->is_array() ? member : nullptr;
}

std::string StringMember(const Json& object, std::string_view key) {
  const Json* member = Member(object, key);
  return member && member->is_string() ? member->get<std::string>() : std::string();
}

int64_t IntMember(const Json& object, std::string_view key) {
  const Json* member = Member(object, key);
  if (!member || !member->is_number()) return 0;
  return member->is_number_float() ? static_cast<int64_t>(member->get<double>())
                                   : member->get<int64_t>();
}

std::string StringOrIntMember(const Json& object, std::string_view key) {
  const Json* member = Member(object, key);
  if (!member) return "";
  if (member->is_string()) return member->get<std::string>();
  if (member->is_number_integer()) return std::to_string(member->get<int64_t>());
  return "";
}

}  // namespace kforge::llm
