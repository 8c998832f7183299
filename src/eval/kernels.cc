#include "eval/kernels.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "backend/registry.h"

namespace kforge {

using nlohmann::json;

namespace {

bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `source` without // and /* */ comments (a name in a comment is not a kernel).
std::string WithoutComments(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
      if (i < s.size()) out += '\n';
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 1;
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

void AddUnique(std::vector<std::string>& v, const std::string& x) {
  if (!x.empty() && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// The function name after a `__global__` at `pos`: the last identifier before the first '('
// that does not open `__launch_bounds__(...)` or another attribute.
std::string GlobalName(const std::string& s, size_t pos) {
  std::string last;
  for (size_t i = pos; i < s.size();) {
    char c = s[i];
    if (c == ';' || c == '{' || c == '}') return "";
    if (IsIdent(c)) {
      size_t j = i;
      while (j < s.size() && IsIdent(s[j])) ++j;
      last = s.substr(i, j - i);
      i = j;
      continue;
    }
    if (c == '(') {
      if (last == "__launch_bounds__" || last == "__attribute__" || last == "__align__" || last == "alignas") {
        int depth = 0;
        for (; i < s.size(); ++i) {
          depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
          if (depth == 0) break;
        }
        ++i;
        last.clear();
        continue;
      }
      return last;
    }
    ++i;
  }
  return "";
}

// The specs' kernel decorators as one pattern, each a whole word where it starts or ends with one.
std::regex DecoratorPattern() {
  std::string alternatives;
  for (const std::string& d : KernelDecorators()) {
    std::string e;
    for (char c : d) e += std::string(std::strchr(".^$|()[]{}*+?\\", c) ? "\\" : "") + c;
    if (IsIdent(d.front())) e = "\\b" + e;
    if (IsIdent(d.back())) e += "\\b";
    alternatives += (alternatives.empty() ? "" : "|") + e;
  }
  return std::regex(alternatives.empty() ? "$^" : "(" + alternatives + ")");
}

}  // namespace

bool BuildsTorchExtension(const std::string& source) {
  return source.find("load_inline") != std::string::npos || source.find("cpp_extension") != std::string::npos;
}

std::string KernelDecoratorList() {
  std::string list;
  for (const std::string& d : KernelDecorators()) list += (list.empty() ? "" : ", ") + (d[0] == '@' ? d : "@" + d);
  return list;
}

std::vector<std::string> OwnKernelNames(const std::string& source) {
  const std::string s = WithoutComments(source);
  std::vector<std::string> names;
  for (size_t pos = s.find("__global__"); pos != std::string::npos; pos = s.find("__global__", pos + 10)) {
    bool word = (pos == 0 || !IsIdent(s[pos - 1])) && (pos + 10 >= s.size() || !IsIdent(s[pos + 10]));
    if (word) AddUnique(names, GlobalName(s, pos + 10));
  }
  // Python DSLs: the function defined after one of the specs' kernel decorators (Triton's
  // `triton.jit`, CuTe DSL's `cute.kernel`; backend/registry.h).
  static const std::regex jit = DecoratorPattern();
  static const std::regex def(R"(\bdef\s+([A-Za-z_]\w*)\s*\()");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), jit); it != std::sregex_iterator(); ++it) {
    std::smatch m;
    auto from = s.begin() + it->position() + it->length();
    if (std::regex_search(from, s.end(), m, def)) AddUnique(names, m[1].str());
  }
  return names;
}

std::vector<std::string> DeclaredNamespaces(const std::string& source) {
  static const std::regex ns(R"(\bnamespace\s+([A-Za-z_][\w:]*)\s*\{)");
  static const std::regex anonymous(R"(\bnamespace\s*\{)");
  std::vector<std::string> out;
  const std::string s = WithoutComments(source);
  // An anonymous namespace, as compilers name it: mangled "_GLOBAL__N_1" (g++, clang) or
  // "_GLOBAL__N__<hash>_<file>_<hash>" (nvcc), demangled "(anonymous namespace)".
  if (std::regex_search(s, anonymous)) {
    AddUnique(out, "_GLOBAL__N_");
    AddUnique(out, "(anonymous namespace)");
  }
  for (auto it = std::sregex_iterator(s.begin(), s.end(), ns); it != std::sregex_iterator(); ++it) {
    std::string full = (*it)[1].str();
    for (size_t start = 0; start <= full.size();) {  // a::b declares a and b
      size_t end = full.find("::", start);
      AddUnique(out, full.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 2;
    }
  }
  return out;
}

namespace {

// A mangled or demangled namespace component the candidate declared (any anonymous one when it
// declared one).
bool OwnNamespace(const std::string& part, const std::vector<std::string>& namespaces) {
  if (std::find(namespaces.begin(), namespaces.end(), part) != namespaces.end()) return true;
  return part.rfind("_GLOBAL__N_", 0) == 0 &&
         std::find(namespaces.begin(), namespaces.end(), "_GLOBAL__N_") != namespaces.end();
}

}  // namespace

bool IsOwnKernel(const std::string& name, const std::vector<std::string>& own,
                 const std::vector<std::string>& namespaces) {
  for (const std::string& n : own) {
    // Mangled, global namespace: _Z<len><name>...
    if (name.rfind("_Z" + std::to_string(n.size()) + n, 0) == 0) return true;
    // Mangled in the candidate's namespaces: _ZN<len><ns>...<len><name>...
    if (name.rfind("_ZN", 0) == 0) {
      size_t i = 3;
      bool all_own = true;
      while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
        size_t len_end = i;
        while (len_end < name.size() && std::isdigit(static_cast<unsigned char>(name[len_end]))) ++len_end;
        size_t len = std::stoul(name.substr(i, len_end - i));
        std::string part = name.substr(len_end, len);
        i = len_end + len;
        if (part == n && all_own) return true;
        all_own &= OwnNamespace(part, namespaces);
      }
    }
    // Demangled: [void ][ns::]name followed by ( < end or a Triton suffix _. A Python DSL may
    // put a prefix before the function's name (the specs' kernel_name_prefix).
    std::string d = name.rfind("void ", 0) == 0 ? name.substr(5) : name;
    static const std::vector<std::string> prefixes = KernelNamePrefixes();
    for (const std::string& prefix : prefixes)
      if (d.rfind(prefix, 0) == 0) { d = d.substr(prefix.size()); break; }
    for (;;) {
      if (d.rfind(n, 0) == 0) {
        char next = d.size() > n.size() ? d[n.size()] : '\0';
        if (next == '\0' || next == '(' || next == '<' || next == '_' || next == ' ') return true;
      }
      size_t sep = d.find("::");
      if (sep == std::string::npos) break;
      std::string part = d.substr(0, sep);
      if (!OwnNamespace(part, namespaces)) break;
      d = d.substr(sep + 2);
    }
  }
  return false;
}

namespace {

KernelAccounting Account(const json& raw, const std::string& source, double output_bytes, double bandwidth_gbs) {
  KernelAccounting a;
  if (!raw.is_object()) return a;
  a.summary = {{"source", raw.value("source", "")}, {"available", raw.value("available", false)}};
  if (!raw.value("available", false)) {
    a.summary["reason"] = raw.value("reason", "the worker made no record");
    a.warnings.push_back("kernels not accounted for: " + a.summary["reason"].get<std::string>());
    return a;
  }
  a.available = true;
  const std::vector<std::string> own = OwnKernelNames(source), namespaces = DeclaredNamespaces(source);
  double own_ms = 0, library_ms = 0;
  int64_t own_calls = 0, library_calls = 0, after_return = 0, side_after_return = 0, graph_calls = 0;
  // Kernels on the harness's own stream always end after an asynchronous launch returns; only
  // work on other streams escapes the timing events (the device-wide synchronize still waits).
  const bool harness_known = raw.contains("harness_stream") && raw["harness_stream"].is_number_integer();
  const int64_t harness = harness_known ? raw["harness_stream"].get<int64_t>() : -1;
  std::vector<int64_t> streams;
  std::vector<std::pair<double, std::string>> libraries, ran;
  json records = json::array();
  for (const json& r : raw.value("records", json::array())) {
    if (!r.is_object()) continue;
    std::string name = r.value("name", "");
    double ms = r.value("device_ms", 0.0);
    int64_t calls = r.value("calls", int64_t{0});
    bool mine = IsOwnKernel(name, own, namespaces);
    (mine ? own_ms : library_ms) += ms;
    (mine ? own_calls : library_calls) += calls;
    after_return += r.value("after_return", int64_t{0});
    bool side = false;
    for (const json& st : r.value("streams", json::array())) side |= harness_known && st.is_number_integer() && st.get<int64_t>() != harness;
    if (side) side_after_return += r.value("after_return", int64_t{0});
    if (r.value("graph", false)) graph_calls += calls;
    for (const json& st : r.value("streams", json::array()))
      if (st.is_number_integer() && std::find(streams.begin(), streams.end(), st.get<int64_t>()) == streams.end())
        streams.push_back(st.get<int64_t>());
    (mine ? ran : libraries).push_back({ms, name});
    json rec = r;
    rec["own"] = mine;
    records.push_back(rec);
  }
  std::sort(libraries.rbegin(), libraries.rend());
  const double total = own_ms + library_ms;
  a.summary["call"] = raw.value("call", "");
  a.summary["own_kernels_defined"] = own;
  a.summary["own_ms"] = own_ms;
  a.summary["own_calls"] = own_calls;
  a.summary["library_ms"] = library_ms;
  a.summary["library_calls"] = library_calls;
  a.summary["own_share"] = total > 0 ? own_ms / total : 0.0;
  a.summary["streams"] = streams.size();
  a.summary["graph_calls"] = graph_calls;
  a.summary["after_return"] = after_return;
  a.summary["side_stream_after_return"] = side_after_return;
  a.summary["memcpy"] = raw.value("memcpy", json::object());
  if (raw.contains("memset")) a.summary["memset"] = raw["memset"];
  if (raw.value("dropped", 0) > 0) a.summary["dropped"] = raw["dropped"];
  a.summary["records"] = records;
  auto top_libraries = [&] {
    std::string out;
    for (size_t i = 0; i < libraries.size() && i < 3; ++i)
      out += fmt::format("{}{} ({:.4f} ms)", i ? ", " : "", libraries[i].second.substr(0, 80), libraries[i].first);
    return out.empty() ? std::string("none") : out;
  };
  const json memcpy = raw.value("memcpy", json::object());
  if (own_calls == 0) {
    a.no_custom_kernel = true;
    std::string defined = own.empty() ? "the candidate defines no kernel (no __global__, no function after " + KernelDecoratorList() + ")"
                                      : "none of the candidate's kernels (" + fmt::format("{}", fmt::join(own, ", ")) + ") ran";
    a.message = fmt::format(
        "{} during a checking call; device kernels that ran: {}{}. Its speedup is not a custom kernel's: write the "
        "computation as a kernel of your own and launch it",
        defined, top_libraries(),
        memcpy.value("count", 0) > 0 ? fmt::format("; {} copies ({} bytes)", memcpy.value("count", 0), memcpy.value("bytes", 0)) : "");
  } else if (library_calls > 0 && bandwidth_gbs > 0 && output_bytes > 0) {
    double write_ms = output_bytes / (bandwidth_gbs * 1e6);
    a.summary["output_write_ms"] = write_ms;
    if (own_ms < write_ms) {
      a.no_custom_kernel = true;
      a.message = fmt::format(
          "the candidate's own kernels ran for {:.4f} ms, less than writing its outputs once takes ({:.0f} bytes at "
          "{:.0f} GB/s: {:.4f} ms), so library kernels produced them: {}. Write the computation as a kernel of your own",
          own_ms, output_bytes, bandwidth_gbs, write_ms, top_libraries());
    }
  }
  if (!a.no_custom_kernel && total > 0 && library_ms / total > 0.9)
    a.warnings.push_back(fmt::format("{:.0f}% of device time in library kernels: {}", 100 * library_ms / total, top_libraries()));
  if (side_after_return > 0)
    a.warnings.push_back(fmt::format("{} kernel launch(es) on streams other than the harness's ended after the "
                                     "candidate's function returned (work left running; the device-wide synchronize "
                                     "waited for it, and the supervisor's clock timed it)",
                                     side_after_return));
  if (raw.value("dropped", 0) > 0)
    a.warnings.push_back(fmt::format("the kernel record is incomplete: {} activity records dropped", raw.value("dropped", 0)));
  if (streams.size() > 1) a.warnings.push_back(fmt::format("kernels ran on {} streams", streams.size()));
  if (graph_calls > 0) a.warnings.push_back(fmt::format("{} kernel(s) ran from CUDA graphs", graph_calls));
  return a;
}

}  // namespace

KernelAccounting AccountKernels(const json& raw, const std::string& source, double output_bytes,
                                double bandwidth_gbs) {
  try {
    return Account(raw, source, output_bytes, bandwidth_gbs);
  } catch (const json::exception& e) {
    KernelAccounting a;
    a.malformed = true;
    a.message = std::string("the worker's kernel record is malformed (") + e.what() +
                "); it is made in the candidate's process, which changed it";
    a.summary = {{"available", false}, {"reason", "malformed record"}};
    return a;
  }
}

}  // namespace kforge
