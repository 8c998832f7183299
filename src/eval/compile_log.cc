#include "eval/compile_log.h"

#include <algorithm>
#include <cstring>
#include <regex>
#include <set>

namespace kforge {

namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

std::string Trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// "error:", "fatal error:", ptxas's "error   :": an error diagnostic, not "3 errors generated.".
bool IsErrorLine(const std::string& line) {
  for (size_t at = line.find("error"); at != std::string::npos; at = line.find("error", at + 1)) {
    size_t after = line.find_first_not_of(' ', at + 5);
    if (after != std::string::npos && line[after] == ':') return true;
  }
  return false;
}

size_t CountErrors(const std::vector<std::string>& lines, size_t from) {
  return static_cast<size_t>(std::count_if(lines.begin() + from, lines.end(), IsErrorLine));
}

bool EndsToken(char c) { return std::strchr(" \t\n'\"`", c) != nullptr; }

}  // namespace

std::string TrimCompilerLog(const std::string& log, const LogBounds& bounds) {
  std::vector<std::string> lines = SplitLines(log);
  size_t kept = 0, bytes = 0, errors = 0;
  for (; kept < lines.size(); ++kept) {
    const bool error = IsErrorLine(lines[kept]);
    if (kept == bounds.max_lines || bytes + lines[kept].size() + 1 > bounds.max_bytes) break;
    if (error && errors == bounds.max_errors) break;
    errors += error;
    bytes += lines[kept].size() + 1;
  }
  if (kept == lines.size()) return log;
  std::string out;
  for (size_t k = 0; k < kept; ++k) out += lines[k] + "\n";
  if (kept == 0) {  // one line longer than the whole budget
    out = lines[0].substr(0, bounds.max_bytes) + " [... line cut]\n";
    kept = 1;
  }
  const size_t more = lines.size() - kept, more_errors = CountErrors(lines, kept);
  out += "[... " + std::to_string(more) + " more line" + (more == 1 ? "" : "s");
  if (more_errors > 0)
    out += " (" + std::to_string(more_errors) + " error" + (more_errors == 1 ? "" : "s") + ")";
  return out + " cut ...]\n";
}

std::string RenameSourceInLog(const std::string& log, const std::string& compiled_name,
                              const std::string& candidate_name) {
  if (compiled_name.empty() || compiled_name == candidate_name) return log;
  std::string out;
  size_t pos = 0;
  for (size_t hit = log.find(compiled_name); hit != std::string::npos;
       hit = log.find(compiled_name, pos)) {
    const size_t end = hit + compiled_name.size();
    size_t start = hit;
    if (start > 0 && log[start - 1] == '/')  // a folder in front: take it off with the name
      while (start > pos && !EndsToken(log[start - 1])) --start;
    const bool whole = (start == 0 || EndsToken(log[start - 1]) || log[start - 1] == '(') &&
                       (end == log.size() || EndsToken(log[end]) || std::strchr(":(,", log[end]));
    out += log.substr(pos, start - pos) + (whole ? candidate_name : log.substr(start, end - start));
    pos = end;
  }
  return out + log.substr(pos);
}

namespace {

// The lines of `file` that hold `source` spelled one line per string literal, in order: each
// source line is looked for a few lines after the one before it (blank and short lines may be
// spelled apart), the first one anywhere, if it is long enough to be told apart.
std::vector<int> MatchLinesInOrder(const std::vector<std::string>& source,
                                   const std::vector<std::string>& file) {
  constexpr size_t kWindow = 10, kMinFirstLine = 8;
  std::vector<int> lines(source.size(), 0);
  long cursor = -1;  // index of the last file line matched
  for (size_t k = 0; k < source.size(); ++k) {
    const std::string t = Trimmed(source[k]);
    if (t.empty() || (cursor < 0 && t.size() < kMinFirstLine)) continue;
    const size_t from = static_cast<size_t>(cursor + 1);
    const size_t to = cursor < 0 ? file.size() : std::min(file.size(), from + kWindow);
    for (size_t i = from; i < to; ++i) {
      if (file[i].find(t) == std::string::npos) continue;
      lines[k] = static_cast<int>(i + 1);
      cursor = static_cast<long>(i);
      break;
    }
  }
  // A line between two found ones that are as far apart in the file as in the source (a blank
  // line, a "}") lies between them there too.
  for (size_t a = 0; a < lines.size(); ++a) {
    if (lines[a] == 0) continue;
    size_t b = a + 1;
    while (b < lines.size() && lines[b] == 0) ++b;
    if (b < lines.size() && lines[b] - lines[a] == static_cast<int>(b - a))
      for (size_t k = a + 1; k < b; ++k) lines[k] = lines[a] + static_cast<int>(k - a);
  }
  return lines;
}

}  // namespace

KernelSourceMap LocateKernelSource(const std::string& source,
                                   const std::vector<CandidateFile>& files) {
  const std::vector<std::string> src = SplitLines(source);
  KernelSourceMap best{"", std::vector<int>(src.size(), 0)};
  if (source.empty()) return best;
  for (const CandidateFile& f : files) {
    const size_t at = f.text.find(source);
    if (at == std::string::npos) continue;
    const int first = 1 + static_cast<int>(std::count(f.text.begin(), f.text.begin() + at, '\n'));
    for (size_t k = 0; k < src.size(); ++k) best.lines[k] = first + static_cast<int>(k);
    best.file = f.name;
    return best;
  }
  long best_found = 0;
  for (const CandidateFile& f : files) {
    std::vector<int> lines = MatchLinesInOrder(src, SplitLines(f.text));
    const long found = std::count_if(lines.begin(), lines.end(), [](int l) { return l > 0; });
    if (found > best_found) best = {f.name, std::move(lines)}, best_found = found;
  }
  return best;
}

namespace {

// One diagnostic's location and text, parsed from a driver's log line.
struct Diagnostic {
  std::string file;          // as the driver named it
  int line = 0, column = 0;  // column 0: none given
  std::string severity;      // "error", "warning", "note", ... or empty
  std::string message;
};

bool ParseDiagnostic(const std::string& text, Diagnostic* d) {
  // PoCL puts the severity first ("error: FILE:3:16: msg"); clang, NVIDIA and AMD after it.
  static const std::regex kLocation(
      R"(^(?:(fatal error|error|warning|note|remark): )?([^\s:]+):(\d+)(?::(\d+))?:\s*(?:(fatal error|error|warning|note|remark):\s*)?(.*)$)");
  std::smatch m;
  if (!std::regex_match(text, m, kLocation)) return false;
  d->file = m[2];
  d->line = std::stoi(m[3]);
  d->column = m[4].matched ? std::stoi(m[4]) : 0;
  d->severity = m[1].matched ? std::string(m[1]) : std::string(m[5]);
  d->message = m[6];
  return d->line > 0 && d->line < (1 << 24) && d->column < (1 << 24);
}

// Locations in the driver's own headers and pseudo-files are not in the kernel source.
bool InKernelSource(const std::string& file) {
  auto ends = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return file.size() >= n && file.compare(file.size() - n, n, suffix) == 0;
  };
  return !ends(".h") && !ends(".hpp") && !ends(".inc") && file != "<built-in>" &&
         file != "<command line>" && file != "<command-line>" && file != "<scratch space>";
}

// gcc's way of showing the offending line: "   57 |   float global = 1.0f;" and a caret under
// the column (tabs kept, so that the caret lines up).
std::string SourceSnippet(int shown_line, const std::string& text, int column) {
  std::string number = std::to_string(shown_line);
  std::string gutter = std::string(number.size() < 5 ? 5 - number.size() : 0, ' ');
  std::string out = gutter + number + " | " + text + "\n";
  if (column <= 0) return out;
  std::string pad;
  for (int c = 0; c + 1 < column; ++c)
    pad += c < static_cast<int>(text.size()) && text[c] == '\t' ? '\t' : ' ';
  return out + std::string(std::max<size_t>(5, number.size()), ' ') + " | " + pad + "^\n";
}

}  // namespace

std::string MapKernelBuildLog(const std::string& log, const std::string& source,
                              const KernelSourceMap& map) {
  const std::vector<std::string> src = SplitLines(source), lines = SplitLines(log);
  std::set<std::string> driver_names;  // the driver's names for the kernel, to take off everywhere
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    Diagnostic d;
    if (!ParseDiagnostic(lines[i], &d) || !InKernelSource(d.file)) {
      out += lines[i] + "\n";
      continue;
    }
    if (d.file.find('/') != std::string::npos) driver_names.insert(d.file);
    const bool known = d.line <= static_cast<int>(src.size());
    const int mapped = known && !map.file.empty() ? map.lines[d.line - 1] : 0;
    std::string where = mapped > 0 ? map.file + ":" + std::to_string(mapped)
                                   : "kernel source line " + std::to_string(d.line);
    if (d.column > 0) where += (mapped > 0 ? ":" : ", column ") + std::to_string(d.column);
    out += where + ": " + (d.severity.empty() ? "" : d.severity + ": ") + d.message + "\n";
    const bool shows_source =
        d.severity == "error" || d.severity == "fatal error" || d.severity == "warning";
    if (!shows_source || !known) continue;
    const std::string& text = src[d.line - 1];
    const bool printed =
        i + 1 < lines.size() && !Trimmed(text).empty() && Trimmed(lines[i + 1]) == Trimmed(text);
    if (!printed) out += SourceSnippet(mapped > 0 ? mapped : d.line, text, d.column);
  }
  const std::string shown = map.file.empty() ? "kernel source" : map.file;
  for (const std::string& name : driver_names) {
    for (size_t at = out.find(name); at != std::string::npos;
         at = out.find(name, at + shown.size()))
      out.replace(at, name.size(), shown);
  }
  return out;
}

}  // namespace kforge
