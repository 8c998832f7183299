#include "eval/static_check.h"

#include <regex>

namespace kforge {

std::string StripComments(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  enum { kCode, kLine, kBlock, kString, kChar } state = kCode;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i], next = i + 1 < s.size() ? s[i + 1] : '\0';
    switch (state) {
      case kCode:
        if (c == '/' && next == '/') { state = kLine; ++i; continue; }
        if (c == '/' && next == '*') { state = kBlock; ++i; continue; }
        if (c == '"') state = kString;
        if (c == '\'') state = kChar;
        out += c;
        break;
      case kLine:
        if (c == '\n') { state = kCode; out += c; }
        break;
      case kBlock:
        if (c == '*' && next == '/') { state = kCode; ++i; }
        else if (c == '\n') out += c;
        break;
      case kString:
      case kChar:
        out += c;
        if (c == '\\' && next) { out += next; ++i; }
        else if ((state == kString && c == '"') || (state == kChar && c == '\'')) state = kCode;
        break;
    }
  }
  return out;
}

std::string StripPythonComments(const std::string& s) {
  // Whole-line comments only; '#' lines of C/CUDA sources held in strings are code.
  static const std::regex comment(R"(^[ \t]*#(?!\s*(include|define|pragma|if|ifdef|ifndef|endif|else|elif|undef)\b)[^\n]*)",
                                  std::regex::multiline);
  return std::regex_replace(s, comment, "");
}

std::vector<std::string> StaticCheck(const std::string& source, const std::vector<DenyRule>& rules, bool python) {
  std::string code = python ? StripPythonComments(source) : StripComments(source);
  std::vector<std::string> findings;
  for (const DenyRule& rule : rules) {
    std::regex re(rule.pattern, std::regex::ECMAScript | std::regex::multiline);
    std::smatch m;
    if (!std::regex_search(code, m, re)) continue;
    size_t line = 1 + std::count(code.begin(), code.begin() + m.position(0), '\n');
    findings.push_back("line " + std::to_string(line) + ": " + rule.reason + ": `" + m.str(0) + "`");
  }
  return findings;
}

}  // namespace kforge
