#include "backend/cuda/nvcc_lanes.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/files.h"

namespace kforge {
namespace {

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The value after `flag` in `words` ("" when absent).
std::string ValueOf(const std::vector<std::string>& words, std::string_view flag) {
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == flag) return words[i + 1];
  return "";
}

bool Has(const std::vector<std::string>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// Every intermediate file a step names: each run of characters from `tmp_dir` on up to a quote,
// comma or blank (nvcc also writes them inside options: --image3=kind=elf,...,file=<path>).
std::set<std::string> TempFilesIn(std::string_view line, const std::string& tmp_dir) {
  std::set<std::string> files;
  for (size_t at = line.find(tmp_dir); at != std::string_view::npos; at = line.find(tmp_dir, at + 1)) {
    size_t end = at;
    while (end < line.size() && line[end] != '"' && line[end] != '\'' && line[end] != ',' && line[end] != ' ' &&
           line[end] != '\t')
      ++end;
    files.insert(std::string(line.substr(at, end - at)));
    at = end - 1;
  }
  return files;
}

struct Step {
  std::string line;
  std::vector<std::string> words;
  std::string tool;  // basename of the program
  std::set<std::string> temps;
};

bool IsPreprocess(const Step& s) { return Has(s.words, "-E"); }

// True when the line holds anything but words for /bin/sh: an operator, a redirection, a
// command substitution or a comment outside quotes (then `exec LINE` would not run it as nvcc).
bool HasShellOperator(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '\'' ) {
      if (c == '\'') quote = 0;
    } else if (c == '\\') {
      ++i;
    } else if (quote == '"') {
      if (c == '"') quote = 0;
      else if (c == '`' || (c == '$' && i + 1 < line.size() && line[i + 1] == '(')) return true;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (std::string_view(";&|<>`#()\n").find(c) != std::string_view::npos ||
               (c == '$' && i + 1 < line.size() && line[i + 1] == '(')) {
      return true;
    }
  }
  return quote != 0;
}

}  // namespace

std::vector<std::string> ShellWords(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      in_word = true;
      for (++i; i < line.size() && line[i] != '\''; ++i) word += line[i];
    } else if (c == '"') {
      in_word = true;
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && std::string_view("\"\\$`").find(line[i + 1]) != std::string_view::npos)
          ++i;
        word += line[i];
      }
    } else if (c == '\\' && i + 1 < line.size()) {
      in_word = true;
      word += line[++i];
    } else {
      in_word = true;
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

bool NvccArgsNeedPlainNvcc(const std::vector<std::string>& args) {
  static const std::set<std::string, std::less<>> kPlain = {
      "-E", "--preprocess", "-M", "-MM", "-MD", "-MMD", "-MF", "-MT", "-MP",
      "--generate-dependencies", "--generate-nonsystem-dependencies", "--generate-nonsystem-dependencies-with-compile",
      "--dependency-target-name", "--dependency-drive-prefix", "-dryrun", "--dryrun", "-keep", "--keep", "-keep-dir",
      "--keep-dir", "-save-temps", "--save-temps", "-V", "--version", "-h", "--help", "-run", "--run", "-dc", "--device-c", "-dw", "--device-w", "-dlink", "--device-link",
      "-lib", "--lib", "-ptx", "--ptx", "-cubin", "--cubin", "-fatbin", "--fatbin", "-optix-ir", "--optix-ir",
      "-cuda", "--cuda", "-link", "--link", "-v", "--verbose", "-x", "--x", "-odir", "--output-directory",
      "-time", "--time", "-fdevice-time-trace", "--fdevice-time-trace", "-ftime-trace", "--ftime-trace",
      "-G", "--device-debug", "-lto", "-dlto", "--dlink-time-opt", "-optf", "--options-file"};
  // Options whose next argument is their value ("-Xptxas -v" asks ptxas, not nvcc, for -v).
  static const std::set<std::string, std::less<>> kTakesValue = {
      "-Xptxas", "--ptxas-options", "-Xcompiler", "--compiler-options", "-Xcudafe", "-Xlinker", "--linker-options",
      "-Xnvlink", "--nvlink-options", "-Xarchive", "--archive-options", "-o", "--output-file", "-I", "--include-path",
      "-isystem", "--system-include", "-D", "--define-macro", "-U", "--undefine-macro", "-L", "--library-path", "-l",
      "--library", "-include", "--pre-include", "-ccbin", "--compiler-bindir", "--dependency-output", "-arch",
      "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code", "-std", "--std", "-maxrregcount",
      "--maxrregcount", "-t", "--threads"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (kTakesValue.count(a)) {
      ++i;
      continue;
    }
    if (a == "-rdc" || a == "--relocatable-device-code") {
      if (i + 1 >= args.size() || args[++i] != "false") return true;
      continue;
    }
    const std::string name = a.substr(0, a.find('='));
    if (kPlain.count(a) || kPlain.count(name)) return true;
    if (StartsWith(a, "-rdc=") && a != "-rdc=false") return true;
    if (StartsWith(a, "--relocatable-device-code=") && a != "--relocatable-device-code=false") return true;
    if (StartsWith(a, "-arch=lto") || StartsWith(a, "-code=lto") || a.find("code=lto") != std::string::npos) return true;
  }
  return false;
}

Result<NvccPlan> PlanNvccLanes(std::string_view dryrun, const std::string& tmp_dir, const std::string& output) {
  if (tmp_dir.size() < 2 || tmp_dir.back() == '/') return Status::InvalidArgument("the dry run's folder must be a path without a trailing '/'");
  const std::string tmp = tmp_dir + "/";
  NvccPlan plan;
  std::vector<Step> steps;
  bool filter = false;
  for (size_t start = 0; start < dryrun.size();) {
    size_t end = dryrun.find('\n', start);
    if (end == std::string_view::npos) end = dryrun.size();
    std::string_view line = dryrun.substr(start, end - start);
    start = end + 1;
    if (!StartsWith(line, "#$ ")) {
      if (!line.empty()) return Status::InvalidArgument(fmt::format("not a dry run step: '{}'", line.substr(0, 120)));
      continue;
    }
    line.remove_prefix(3);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (StartsWith(line, "-- Filter Dependencies -- > ")) {
      if (filter) return Status::InvalidArgument("two dependency filters");
      filter = true;
      plan.depfile = std::string(line.substr(std::string_view("-- Filter Dependencies -- > ").size()));
      continue;
    }
    if (StartsWith(line, "--")) return Status::InvalidArgument(fmt::format("an unknown step of nvcc's own: '{}'", line));
    // A variable: NAME=VALUE before the first command (nvcc's profile: PATH, CICC_PATH, ...).
    const size_t eq = line.find('=');
    if (steps.empty() && eq != std::string_view::npos && eq > 0 &&
        std::all_of(line.begin(), line.begin() + eq, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
      std::string name(line.substr(0, eq)), value(line.substr(eq + 1));
      auto it = std::find_if(plan.env.begin(), plan.env.end(), [&](const auto& kv) { return kv.first == name; });
      if (it != plan.env.end()) it->second = value;
      else plan.env.emplace_back(name, value);
      continue;
    }
    if (HasShellOperator(line)) return Status::InvalidArgument(fmt::format("a step with a shell operator: '{}'", line.substr(0, 120)));
    Step s;
    s.line = std::string(line);
    s.words = ShellWords(line);
    if (s.words.empty()) continue;
    s.tool = Basename(s.words[0]);
    s.temps = TempFilesIn(line, tmp);
    steps.push_back(std::move(s));
  }
  if (filter && output.empty()) return Status::InvalidArgument("a dependency file without -o names no target");

  // cudafe++: exactly one, writing the module id; its input comes from the host preprocess.
  int front = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].tool != "cudafe++") continue;
    if (front >= 0) return Status::InvalidArgument("more than one cudafe++ step (several sources)");
    front = static_cast<int>(i);
  }
  if (front < 0) return Status::InvalidArgument("no cudafe++ step");
  Step& fe = steps[front];
  plan.module_id_file = ValueOf(fe.words, "--module_id_file_name");
  const std::string gen_c = ValueOf(fe.words, "--gen_c_file_name");
  plan.source_name = ValueOf(fe.words, "--orig_src_file_name");
  plan.source_path = ValueOf(fe.words, "--orig_src_path_name");
  if (!Has(fe.words, "--gen_module_id_file") || !StartsWith(plan.module_id_file, tmp) || !StartsWith(gen_c, tmp))
    return Status::InvalidArgument("cudafe++ does not write the module id and its output into the dry run's folder");
  const std::string& fe_input = fe.words.back();
  int host_pp = -1;
  for (int i = 0; i < front; ++i)
    if (IsPreprocess(steps[i]) && ValueOf(steps[i].words, "-o") == fe_input) host_pp = i;
  if (host_pp < 0) return Status::InvalidArgument("no host preprocess before cudafe++");

  // The final part: from the first step that reads cudafe++'s output on, in nvcc's order.
  size_t final_start = steps.size();
  for (size_t i = front + 1; i < steps.size(); ++i)
    if (steps[i].temps.count(gen_c)) {
      final_start = i;
      break;
    }
  if (final_start == steps.size()) return Status::InvalidArgument("no step compiles cudafe++'s output");

  // The host chain names only its own files and the module id; the device chain never names
  // them but the module id, and is made of the tools nvcc runs for device code.
  const std::set<std::string> host_files = {fe_input, gen_c, plan.module_id_file};
  for (const std::string& f : steps[host_pp].temps)
    if (!host_files.count(f)) return Status::InvalidArgument(fmt::format("the host preprocess names '{}'", f));
  for (const std::string& f : fe.temps)
    if (!host_files.count(f)) return Status::InvalidArgument(fmt::format("cudafe++ names '{}'", f));
  bool cicc = false;
  for (size_t i = 0; i < final_start; ++i) {
    if (static_cast<int>(i) == host_pp || static_cast<int>(i) == front) continue;
    const Step& s = steps[i];
    for (const std::string& f : s.temps)
      if (f != plan.module_id_file && host_files.count(f))
        return Status::InvalidArgument(fmt::format("the device step '{}' names the host chain's '{}'", s.tool, f));
    if (s.tool == "cicc") cicc = true;
    else if (s.tool == "rm") {
      if (s.words.size() != 2 || !StartsWith(s.words[1], tmp)) return Status::InvalidArgument("an rm outside the dry run's folder");
    } else if (s.tool != "ptxas" && s.tool != "fatbinary" && !IsPreprocess(s)) {
      return Status::InvalidArgument(fmt::format("an unknown device step '{}'", s.tool));
    }
  }
  if (!cicc) return Status::InvalidArgument("no cicc step");
  for (size_t i = final_start; i < steps.size(); ++i)
    if (steps[i].tool == "cudafe++" || steps[i].tool == "cicc" || steps[i].tool == "ptxas")
      return Status::InvalidArgument(fmt::format("a {} step after the host compile", steps[i].tool));

  // nvcc ignores an rm of a file a tool did not write (fatbinary's .fatbin with --embedded-fatbin).
  auto step_of = [&](size_t i) {
    const Step& s = steps[i];
    return NvccStep{static_cast<int>(i), s.tool == "rm" ? "rm -f " + s.line.substr(s.line.find("rm") + 2) : s.line};
  };
  plan.host.push_back(step_of(host_pp));
  // cudafe++ reads the module id instead of writing one: the flag goes as a whole word.
  NvccStep fe_step = step_of(front);
  const std::string flag = " --gen_module_id_file ";
  const size_t at = (fe_step.line + " ").find(flag);
  if (at == std::string::npos) return Status::InvalidArgument("cudafe++'s --gen_module_id_file is not a word of its own");
  fe_step.line.erase(at, flag.size() - 1);
  plan.host.push_back(std::move(fe_step));
  for (size_t i = 0; i < final_start; ++i) {
    if (static_cast<int>(i) == host_pp || static_cast<int>(i) == front) continue;
    plan.device.push_back(step_of(i));
    if (IsPreprocess(steps[i])) plan.preprocessed.push_back(ValueOf(steps[i].words, "-o"));
  }
  for (size_t i = final_start; i < steps.size(); ++i) plan.final.push_back(step_of(i));
  if (filter) {
    plan.dep_target = output;
    plan.preprocessed.insert(plan.preprocessed.begin(), fe_input);
  } else {
    plan.preprocessed.clear();
  }
  return plan;
}

std::string ModuleIdFor(const std::string& source_name, const std::string& seed) {
  std::string name = source_name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  const std::string digest = Sha256Hex(seed);
  return fmt::format("_{}_{}_{}_{}", digest.substr(0, 8), name.size(), name, digest.substr(8, 8));
}

namespace {

// A file name of a line marker, its C escapes undone; "" when the line is no marker.
std::string MarkerFile(std::string_view line) {
  if (line.size() < 4 || line[0] != '#' || line[1] != ' ' || !std::isdigit(static_cast<unsigned char>(line[2]))) return "";
  const size_t quote = line.find('"');
  if (quote == std::string_view::npos) return "";
  std::string file;
  for (size_t i = quote + 1; i < line.size() && line[i] != '"'; ++i) {
    if (line[i] == '\\' && i + 1 < line.size()) ++i;
    file += line[i];
  }
  return file;
}

// A name as Make reads it: blanks, '#' and '\' escaped, '$' doubled.
std::string MakeEscaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '#' || c == '\\') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

}  // namespace

std::string DepfileFromPreprocessed(const std::string& target, const std::vector<std::string>& texts) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const std::string& text : texts) {
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (text[start] == '#') {
        std::string f = MarkerFile(std::string_view(text).substr(start, end - start));
        if (!f.empty() && f[0] != '<' && seen.insert(f).second) files.push_back(std::move(f));
      }
      start = end + 1;
    }
  }
  std::string out = MakeEscaped(target) + " :";
  for (const std::string& f : files) out += " \\\n    " + MakeEscaped(f);
  return out + "\n";
}

}  // namespace kforge
