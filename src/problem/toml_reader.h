// TableReader: typed, checked access to one toml++ table, with errors that point at the file,
// the line and the field.
//
// Every error has the form "<file>:<line>: <field>: <what>; expected <what>", where <field> is a
// path such as "inputs[0].dtype" or "sizes.rows.value". A missing key is reported at the line of
// the table that should hold it. toml++ is used with exceptions (the Debian build of the shared
// library is compiled that way); only LoadProblem's parse call catches them.
// Thread-safety: a reader only reads its table; use one per thread.
#ifndef KFORGE_PROBLEM_TOML_READER_H_
#define KFORGE_PROBLEM_TOML_READER_H_

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/status.h"

namespace kforge {

// The 1-based line where `node` starts, or 1 when unknown (null or no source information).
int LineOf(const toml::node* node);

// "a string", "an integer", "a table", ...: what the file holds, for messages.
std::string DescribeType(const toml::node& node);

// "<file>:<line>: <field>: <what>; expected <expected>".
std::string FormatSourceError(const std::string& file, int line, const std::string& field,
                              const std::string& what, const std::string& expected);

class TableReader {
 public:
  struct Entry {
    std::string key;
    const toml::node* node;
    int line;  // of the key
    int column;
  };

  // `file` names the file in messages and must outlive the reader; `path` is this table's
  // field path ("" for the root table), the prefix of every field it reports.
  TableReader(const std::string& file, const toml::table& table, std::string path);

  const toml::table& table() const { return table_; }
  // "path.key", or "key" at the root.
  std::string Field(std::string_view key) const;
  // Entries in file order (toml++ keeps tables sorted by key).
  std::vector<Entry> Entries() const;

  // An InvalidArgument about `key`, at its line, or at this table's line when `key` is absent.
  Status Error(std::string_view key, const std::string& what, const std::string& expected) const;
  // An InvalidArgument about any field, at `node`'s line.
  Status ErrorAt(const toml::node* node, const std::string& field, const std::string& what,
                 const std::string& expected) const;
  // Fails on the first key (in file order) that is not in `allowed`, listing the allowed keys.
  Status CheckKeys(const std::vector<std::string_view>& allowed) const;

  // Typed reads. When `key` is absent: fails if `required`, else leaves *out unchanged.
  // Fails when the value has another type. Integers are accepted where numbers are expected;
  // numbers must be finite.
  Status ReadString(std::string_view key, bool required, std::string* out) const;
  Status ReadInteger(std::string_view key, bool required, int64_t* out) const;
  Status ReadNumber(std::string_view key, bool required, double* out) const;
  Status ReadBool(std::string_view key, bool* out) const;
  // *out is the sub-table or array, or nullptr when absent and not required.
  Status ReadTable(std::string_view key, bool required, const toml::table** out) const;
  Status ReadArray(std::string_view key, bool required, const toml::array** out,
                   const std::string& expected = "an array") const;

 private:
  // Finds `key`; *node is nullptr when absent. Fails when absent and `required`.
  Status Find(std::string_view key, bool required, const std::string& expected,
              const toml::node** node) const;
  Status WrongType(std::string_view key, const toml::node& node, const std::string& expected) const;

  const std::string& file_;
  const toml::table& table_;
  std::string path_;
};

}  // namespace kforge

#endif  // KFORGE_PROBLEM_TOML_READER_H_
