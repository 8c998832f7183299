#include "problem/toml_reader.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "fmt/format.h"

namespace kforge {

int LineOf(const toml::node* node) {
  if (node == nullptr || node->source().begin.line == 0) return 1;
  return static_cast<int>(node->source().begin.line);
}

std::string DescribeType(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string FormatSourceError(const std::string& file, int line, const std::string& field,
                              const std::string& what, const std::string& expected) {
  return fmt::format("{}:{}: {}: {}; expected {}", file, line, field, what, expected);
}

TableReader::TableReader(const std::string& file, const toml::table& table, std::string path)
    : file_(file), table_(table), path_(std::move(path)) {}

std::string TableReader::Field(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return fmt::format("{}.{}", path_, key);
}

std::vector<TableReader::Entry> TableReader::Entries() const {
  std::vector<Entry> entries;
  for (const auto& [key, node] : table_) {
    const toml::source_position& at = key.source().begin;
    entries.push_back(
        {std::string(key.str()), &node, static_cast<int>(at.line), static_cast<int>(at.column)});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  return entries;
}

Status TableReader::Error(std::string_view key, const std::string& what,
                          const std::string& expected) const {
  const toml::node* node = table_.get(key);
  return ErrorAt(node != nullptr ? node : &table_, Field(key), what, expected);
}

Status TableReader::ErrorAt(const toml::node* node, const std::string& field,
                            const std::string& what, const std::string& expected) const {
  return Status::InvalidArgument(FormatSourceError(file_, LineOf(node), field, what, expected));
}

Status TableReader::CheckKeys(const std::vector<std::string_view>& allowed) const {
  for (const Entry& entry : Entries()) {
    if (std::find(allowed.begin(), allowed.end(), entry.key) != allowed.end()) continue;
    std::string list;
    for (std::string_view key : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", key);
    return Status::InvalidArgument(FormatSourceError(file_, entry.line, Field(entry.key),
                                                     fmt::format("unknown key '{}'", entry.key),
                                                     "one of " + list));
  }
  return Status::Ok();
}

Status TableReader::Find(std::string_view key, bool required, const std::string& expected,
                         const toml::node** node) const {
  *node = table_.get(key);
  if (*node == nullptr && required) return Error(key, "required key is missing", expected);
  return Status::Ok();
}

Status TableReader::WrongType(std::string_view key, const toml::node& node,
                              const std::string& expected) const {
  return ErrorAt(&node, Field(key), "got " + DescribeType(node), expected);
}

Status TableReader::ReadString(std::string_view key, bool required, std::string* out) const {
  const toml::node* node;
  KF_RETURN_IF_ERROR(Find(key, required, "a string", &node));
  if (node == nullptr) return Status::Ok();
  if (!node->is_string()) return WrongType(key, *node, "a string");
  *out = node->as_string()->get();
  return Status::Ok();
}

Status TableReader::ReadInteger(std::string_view key, bool required, int64_t* out) const {
  const toml::node* node;
  KF_RETURN_IF_ERROR(Find(key, required, "an integer", &node));
  if (node == nullptr) return Status::Ok();
  if (!node->is_integer()) return WrongType(key, *node, "an integer");
  *out = node->as_integer()->get();
  return Status::Ok();
}

Status TableReader::ReadNumber(std::string_view key, bool required, double* out) const {
  const toml::node* node;
  KF_RETURN_IF_ERROR(Find(key, required, "a number", &node));
  if (node == nullptr) return Status::Ok();
  if (node->is_integer()) {
    *out = static_cast<double>(node->as_integer()->get());
    return Status::Ok();
  }
  if (!node->is_floating_point()) return WrongType(key, *node, "a number");
  double value = node->as_floating_point()->get();
  if (!std::isfinite(value)) {
    return ErrorAt(node, Field(key), fmt::format("got {}", value), "a finite number");
  }
  *out = value;
  return Status::Ok();
}

Status TableReader::ReadBool(std::string_view key, bool* out) const {
  const toml::node* node;
  KF_RETURN_IF_ERROR(Find(key, false, "true or false", &node));
  if (node == nullptr) return Status::Ok();
  if (!node->is_boolean()) return WrongType(key, *node, "true or false");
  *out = node->as_boolean()->get();
  return Status::Ok();
}

Status TableReader::ReadTable(std::string_view key, bool required, const toml::table** out) const {
  const toml::node* node;
  std::string expected = fmt::format("a table ([{}])", Field(key));
  KF_RETURN_IF_ERROR(Find(key, required, expected, &node));
  *out = nullptr;
  if (node == nullptr) return Status::Ok();
  if (!node->is_table()) return WrongType(key, *node, expected);
  *out = node->as_table();
  return Status::Ok();
}

Status TableReader::ReadArray(std::string_view key, bool required, const toml::array** out,
                              const std::string& expected) const {
  const toml::node* node;
  KF_RETURN_IF_ERROR(Find(key, required, expected, &node));
  *out = nullptr;
  if (node == nullptr) return Status::Ok();
  if (!node->is_array()) return WrongType(key, *node, expected);
  *out = node->as_array();
  return Status::Ok();
}

}  // namespace kforge
