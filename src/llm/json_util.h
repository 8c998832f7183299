// Lenient readers for provider JSON: a missing or mistyped field reads as empty/zero, so one
// unexpected field never breaks a parse; required fields are checked by the caller.
//
// Thread-safety: pure functions.
#ifndef KFORGE_LLM_JSON_UTIL_H_
#define KFORGE_LLM_JSON_UTIL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kforge::llm {

using Json = nlohmann::json;

// Parses JSON text. On failure returns nullopt and sets *error to a short description (never
// the text itself).
std::optional<Json> ParseJson(std::string_view text, std::string* error);

// The member `key` of an object when present and not null; else nullptr.
const Json* Member(const Json& object, std::string_view key);
// Member if it is an object / array / string; else nullptr.
const Json* ObjectMember(const Json& object, std::string_view key);
const Json* ArrayMember(const Json& object, std::string_view key);
// The string member, or "" when absent or not a string.
std::string StringMember(const Json& object, std::string_view key);
// The integer member, or 0 when absent or not a number.
int64_t IntMember(const Json& object, std::string_view key);
// A string member, or an integer member written in decimal (vLLM's integer error codes).
std::string StringOrIntMember(const Json& object, std::string_view key);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_JSON_UTIL_H_
