// Reading recorded JSON (verdicts, bench files, store rows) for the reports without trusting
// its shape: each accessor returns an empty value when the key is missing or of another type,
// never throws. A report shows what is there and leaves out what is not.
//
// Thread-safety: free functions without shared state.
#ifndef KFORGE_REPORT_JSON_FIELDS_H_
#define KFORGE_REPORT_JSON_FIELDS_H_

#include <nlohmann/json.hpp>
#include <string>

namespace kforge::report {

using nlohmann::json;

// A store column holding JSON: null when empty, the text itself when it does not parse.
inline json ParseStored(const std::string& text) {
  if (text.empty()) return nullptr;
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

inline const json* Field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

inline std::string Str(const json& j, const char* key) {
  const json* f = Field(j, key);
  return f && f->is_string() ? f->get<std::string>() : "";
}

inline double Num(const json& j, const char* key) {
  const json* f = Field(j, key);
  return f && f->is_number() ? f->get<double>() : 0.0;
}

inline bool Bool(const json& j, const char* key, bool otherwise) {
  const json* f = Field(j, key);
  return f && f->is_boolean() ? f->get<bool>() : otherwise;
}

// The object or array under `key`, else an empty one.
inline json Obj(const json& j, const char* key) {
  const json* f = Field(j, key);
  return f && f->is_object() ? *f : json::object();
}
inline json Arr(const json& j, const char* key) {
  const json* f = Field(j, key);
  return f && f->is_array() ? *f : json::array();
}

// One line for a table cell: a string as it is, anything else as compact JSON.
inline std::string Plain(const json& j) {
  return j.is_string() ? j.get<std::string>()
                       : j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace kforge::report

#endif  // KFORGE_REPORT_JSON_FIELDS_H_
