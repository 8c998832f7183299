// The exec: client (exec.h).
#include "llm/exec.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <system_error>

#include "backend/registry.h"
#include "base/files.h"
#include "kforge/llm/secrets.h"
#include "llm/limiter.h"
#include "llm/retry.h"
#include "llm/transcript.h"

extern char** environ;

namespace kforge::llm {

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr std::array<std::string_view, 5> kPlaceholders = {"prompt", "prompt_json", "input", "out",
                                                           "workdir"};
constexpr size_t kMaxAnswerFiles = 16;
constexpr uintmax_t kMaxAnswerFileBytes = 1 << 20;
constexpr uint64_t kStdoutBytes = 1 << 20;  // stdout may be the answer: keep more of it
constexpr size_t kTailLines = 40;
constexpr size_t kTailBytes = 4000;

// ---- Placeholders ------------------------------------------------------------------------------

bool IsPlaceholderName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(),
                                      [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
}

bool IsKnownPlaceholder(std::string_view name) {
  return std::find(kPlaceholders.begin(), kPlaceholders.end(), name) != kPlaceholders.end();
}

// Replaces each known "{name}" with its value; other braces stay as they are.
std::string Expand(const std::string& arg, const std::map<std::string, std::string>& values) {
  std::string out;
  for (size_t i = 0; i < arg.size();) {
    size_t close = arg[i] == '{' ? arg.find('}', i) : std::string::npos;
    std::string name = close == std::string::npos ? "" : arg.substr(i + 1, close - i - 1);
    auto it = values.find(name);
    if (it == values.end()) {
      out += arg[i++];
      continue;
    }
    out += it->second;
    i = close + 1;
  }
  return out;
}

// ---- The work folder ---------------------------------------------------------------------------

struct WorkFolder {
  fs::path dir, prompt, prompt_json, input, out;
};

Status WorkError(const std::string& who, const std::string& what) {
  return MakeLlmError(LlmErrorKind::kCommandFailed, who,
                      what + "; set workdir_root in the [exec] entry to a writable folder");
}

Result<WorkFolder> MakeWorkFolder(const fs::path& root) {
  Result<fs::path> dir = root.empty() ? MakeTempDir("exec") : MakeDirIn(root, "kforge-exec");
  if (!dir.ok()) return dir.status();
  WorkFolder w{*dir, *dir / "prompt.md", *dir / "prompt.json", *dir / "input", *dir / "out"};
  std::error_code ec;
  fs::create_directory(w.input, ec);
  if (!ec) fs::create_directory(w.out, ec);
  if (ec) return Status::IoError("cannot make folders in " + w.dir.string() + ": " + ec.message());
  return w;
}

// A request file's name as a plain name inside input/, or "" when it is not one.
std::string SafeName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) return "";
  return name;
}

std::string AnswerNote(const WorkFolder& w) {
  return "kforge runs this command in place of a language model; the request follows. Write "
         "your answer into the folder `" +
         w.out.string() +
         "`: each source file the request asks for in a file of its own named for its "
         "language (candidate.cc for C++, candidate.cu for CUDA, candidate.cl for OpenCL C, "
         "candidate.py for Python), or a text answer (such as a JSON object) in answer.md. "
         "kforge reads every file there. If you write none, it reads your answer from "
         "standard output, in the format the request asks for.\n";
}

// The messages' text; images are saved in input/ and named in their place.
Result<std::string> MessageText(const Message& message, const WorkFolder& w, int* images) {
  std::string text;
  for (const ContentPart& part : message.parts) {
    if (!part.is_image()) {
      text += part.text;
      continue;
    }
    std::string name =
        "image-" + std::to_string(++*images) + (part.mime_type == "image/png" ? ".png" : ".jpg");
    KF_RETURN_IF_ERROR(WriteFile(w.input / name, part.data.data(), part.data.size()));
    text += "\n(image: " + (w.input / name).string() + ")\n";
  }
  return text;
}

Result<std::string> PromptMarkdown(const ChatRequest& request, const WorkFolder& w) {
  std::string md = "# How to answer\n\n" + AnswerNote(w);
  if (!request.files.empty()) {
    md += "\nThe files this request is about are in `" + w.input.string() + "`:";
    for (const RequestFile& file : request.files) md += " " + SafeName(file.name);
    md += "\n";
  }
  if (!request.system.empty()) md += "\n# System\n\n" + request.system + "\n";
  int images = 0;
  for (const Message& message : request.messages) {
    KF_ASSIGN_OR_RETURN(std::string text, MessageText(message, w, &images));
    md += std::string("\n# ") + (message.role == Role::kUser ? "User" : "Assistant") + "\n\n" +
          text + "\n";
  }
  return md;
}

Status WriteInputs(const ChatRequest& request, const WorkFolder& w, const std::string& prompt) {
  for (const RequestFile& file : request.files) {
    std::string name = SafeName(file.name);
    if (name.empty()) continue;  // Not a plain name: left out rather than written elsewhere.
    KF_RETURN_IF_ERROR(WriteFileAtomic(w.input / name, file.content));
  }
  Json json = RequestToJson(request);
  json["files"] = Json::array();
  for (const RequestFile& file : request.files) json["files"].push_back(SafeName(file.name));
  KF_RETURN_IF_ERROR(WriteFileAtomic(w.prompt_json, json.dump(1)));
  return WriteFileAtomic(w.prompt, prompt);
}

// ---- Reading the answer ------------------------------------------------------------------------

struct AnswerFile {
  std::string name, content;
};

// candidate.* first, then the other files by name, then answer.*: code the command wrote as
// files comes before any code its prose quotes, since extraction takes the first block.
int Rank(const std::string& name) {
  if (name.rfind("candidate.", 0) == 0) return 0;
  if (name.rfind("answer.", 0) == 0) return 2;
  return 1;
}

bool IsProse(const std::string& name) { return Rank(name) == 2; }

Result<std::vector<AnswerFile>> ReadOutFolder(const fs::path& out, const std::string& who) {
  std::vector<AnswerFile> files;
  std::error_code ec;
  for (auto it = fs::directory_iterator(out, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.' || !it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    if (files.size() == kMaxAnswerFiles || it->file_size(ec) > kMaxAnswerFileBytes) {
      return MakeLlmError(LlmErrorKind::kBadResponse, who,
                          out.string() +
                              " holds more than 16 files or a file over 1 MiB; "
                              "write only the answer's files there");
    }
    KF_ASSIGN_OR_RETURN(std::string content, ReadFile(it->path()));
    files.push_back({name, std::move(content)});
  }
  std::sort(files.begin(), files.end(), [](const AnswerFile& a, const AnswerFile& b) {
    return std::make_pair(Rank(a.name), a.name) < std::make_pair(Rank(b.name), b.name);
  });
  return files;
}

// A fence longer than any run of backticks in the file, so that the file cannot close it.
std::string FenceFor(const std::string& content) {
  size_t longest = 0, run = 0;
  for (char c : content) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

std::string FilesAsAnswer(const std::vector<AnswerFile>& files) {
  std::string answer;
  for (const AnswerFile& file : files) {
    if (!answer.empty()) answer += "\n";
    if (IsProse(file.name)) {
      answer += file.content + "\n";
      continue;
    }
    std::string fence = FenceFor(file.content);
    std::string body = file.content;
    if (!body.empty() && body.back() != '\n') body += "\n";
    answer += fence + FenceLanguageOf(file.name) + " " + file.name + "\n" + body + fence + "\n";
  }
  return answer;
}

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// ---- Running -----------------------------------------------------------------------------------

// The command is the user's own trusted program: no sandbox, the network, no resource limits
// but the wall clock (then its process group is killed) and the output kept.
Limits ExecLimits(milliseconds timeout) {
  Limits limits;
  limits.wall_seconds = static_cast<double>(timeout.count()) / 1000.0;
  limits.cpu_seconds = 0;
  limits.address_space_bytes = 0;
  limits.file_size_bytes = 0;
  limits.max_processes = 0;
  limits.output_bytes = kStdoutBytes;
  limits.isolate_network = false;
  limits.drop_privileges = false;
  limits.isolate_processes = false;
  limits.private_filesystem = false;
  limits.seccomp = false;
  return limits;
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) line += (line.empty() ? "" : " ") + arg;
  return line.size() <= 200 ? line : line.substr(0, 197) + "...";
}

std::string Tail(const std::string& text) { return Trim(TailLines(text, kTailLines, kTailBytes)); }

// What the command said last: stderr's tail, else stdout's (some CLIs report errors there).
std::string OutputTail(const ProcessResult& r) {
  if (std::string err = Tail(r.err); !err.empty()) return "; its stderr ends:\n" + err + "\n";
  if (std::string out = Tail(r.out); !out.empty()) return "; its stdout ends:\n" + out + "\n";
  return "; it printed nothing";
}

class ExecClient : public LlmClient {
 public:
  ExecClient(ExecSettings settings, ExecEnv env)
      : settings_(std::move(settings)), env_(std::move(env)), limiter_(settings_.max_concurrency) {}

  Result<ChatResponse> Complete(const ChatRequest& request) override {
    KF_RETURN_IF_ERROR(env_.ledger->CheckBudget());
    Result<WorkFolder> made = MakeWorkFolder(settings_.workdir_root);
    if (!made.ok()) return WorkError(settings_.name, made.status().message());
    const WorkFolder& w = *made;
    Result<std::string> prompt = PromptMarkdown(request, w);
    Status written = prompt.ok() ? WriteInputs(request, w, *prompt) : prompt.status();
    if (!written.ok()) return WorkError(settings_.name, written.message());
    ConcurrencyLimiter::Slot slot = limiter_.Acquire();
    const auto start = env_.clock->Now();
    ProcessSpec spec = Spec(w, *prompt);
    ProcessResult run = env_.runner->Run(spec);
    milliseconds took = std::chrono::duration_cast<milliseconds>(env_.clock->Now() - start);
    Result<ChatResponse> response = Answer(spec, run, w, took);
    Finish(w, response.ok(), took);
    return response;
  }

  std::string Describe() const override { return settings_.name; }

 private:
  ProcessSpec Spec(const WorkFolder& w, const std::string& prompt) const {
    std::map<std::string, std::string> values = {{"prompt", w.prompt.string()},
                                                 {"prompt_json", w.prompt_json.string()},
                                                 {"input", w.input.string()},
                                                 {"out", w.out.string()},
                                                 {"workdir", w.dir.string()}};
    ProcessSpec spec;
    for (const std::string& arg : settings_.command) spec.argv.push_back(Expand(arg, values));
    if (settings_.cwd == "workdir")
      spec.cwd = w.dir;
    else if (settings_.cwd != "current")
      spec.cwd = settings_.cwd;
    // Scrubbed per call: a key loaded after this client was made is withheld too.
    spec.env = ScrubEnvironment(env_.environment, env_.key_env_names, settings_.env_passthrough);
    if (settings_.stdin_prompt) spec.stdin_data = prompt;
    spec.limits = ExecLimits(settings_.timeout);
    return spec;
  }

  Result<ChatResponse> Answer(const ProcessSpec& spec, const ProcessResult& run,
                              const WorkFolder& w, milliseconds took) const {
    if (!run.Succeeded()) return Failure(spec, run, w);
    KF_ASSIGN_OR_RETURN(std::vector<AnswerFile> files, ReadOutFolder(w.out, settings_.name));
    std::string text = files.empty() ? Trim(run.out) : FilesAsAnswer(files);
    if (text.empty()) {
      return MakeLlmError(LlmErrorKind::kBadResponse, settings_.name,
                          "`" + CommandLine(spec.argv) + "` exited 0 but wrote no file in " +
                              w.out.string() + " and nothing on stdout" + OutputTail(run) +
                              "; make it write the candidate to {out}/candidate.<ext> or print "
                              "the answer (docs/llm.md, \"Coding-agent CLIs (exec:)\")");
    }
    if (files.empty() && run.out_total > run.out.size()) {
      return MakeLlmError(LlmErrorKind::kBadResponse, settings_.name,
                          "the answer on stdout is longer than 1 MiB and was cut; write it to "
                          "a file in {out} instead");
    }
    ChatResponse response;
    response.text = std::move(text);
    response.finish_reason = FinishReason::kStop;
    response.raw_finish_reason = "exit 0";
    response.latency = response.total_time = took;
    response.model = settings_.name;
    response.reasoning = Log(spec, run, files);
    env_.ledger->Record(settings_.name, Usage{}, std::nullopt);
    return response;
  }

  // The command's own record, kept as the response's reasoning (and so in transcripts).
  std::string Log(const ProcessSpec& spec, const ProcessResult& run,
                  const std::vector<AnswerFile>& files) const {
    std::string from = files.empty() ? "stdout" : "";
    for (const AnswerFile& file : files) from += (from.empty() ? "files " : ", ") + file.name;
    std::string log = "exec: `" + CommandLine(spec.argv) + "` " + run.Describe() + " in " +
                      std::to_string(run.wall_seconds) + " s; the answer came from " + from + "\n";
    std::string err = Tail(run.err);
    if (!err.empty()) log += "stderr (tail):\n" + err + "\n";
    std::string out = Tail(run.out);
    if (!files.empty() && !out.empty()) log += "stdout (tail):\n" + out + "\n";
    return Redact(log);
  }

  Status Failure(const ProcessSpec& spec, const ProcessResult& run, const WorkFolder& w) const {
    const std::string command = "`" + CommandLine(spec.argv) + "`";
    const std::string kept = "; its work folder " + w.dir.string() + " is kept";
    switch (run.end) {
      case ProcessResult::End::kStartFailed:
        return MakeLlmError(LlmErrorKind::kCommandFailed, settings_.name,
                            "could not start " + command + ": " + run.start_error +
                                "; check `command` of its [exec] entry (is the program "
                                "installed and on PATH?)" +
                                kept);
      case ProcessResult::End::kTimedOut:
        return MakeLlmError(LlmErrorKind::kTimeout, settings_.name,
                            command + " did not finish within timeout_s (" +
                                std::to_string(settings_.timeout.count() / 1000) +
                                " s) and was stopped" + OutputTail(run) + kept +
                                "; raise timeout_s, or run the command by hand there to see "
                                "where it waits (a login, a question)");
      default:
        return MakeLlmError(LlmErrorKind::kCommandFailed, settings_.name,
                            command + " " + run.Describe() + OutputTail(run) + kept +
                                "; run the command by hand there to see what it needs (a "
                                "login, a flag, a model name)");
    }
  }

  // A failed call's folder is kept and its error names it; a kept successful one is logged.
  void Finish(const WorkFolder& w, bool ok, milliseconds took) const {
    if (!ok) return;
    if (settings_.keep_workdir) {
      env_.log(settings_.name + ": answered in " + FormatSeconds(took) +
               "; work folder kept: " + w.dir.string());
      return;
    }
    std::error_code ec;
    fs::remove_all(w.dir, ec);
  }

  const ExecSettings settings_;
  const ExecEnv env_;
  ConcurrencyLimiter limiter_;
};

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool Listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Environment ScrubEnvironment(const Environment& environment,
                             const std::vector<std::string>& key_env_names,
                             const std::vector<std::string>& passthrough) {
  Environment kept;
  for (const auto& [name, value] : environment) {
    bool withheld = StartsWith(name, "KFORGE_") || Listed(key_env_names, name) ||
                    EndsWith(name, "_API_KEY") || ContainsSecret(value);
    if (!withheld || Listed(passthrough, name)) kept[name] = value;
  }
  return kept;
}

Environment ProcessEnvironment() {
  Environment environment;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    environment[std::string(text.substr(0, equals))] = std::string(text.substr(equals + 1));
  }
  return environment;
}

Status CheckExecCommand(const std::vector<std::string>& command) {
  for (const std::string& arg : command) {
    for (size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
      size_t close = arg.find('}', open);
      if (close == std::string::npos) break;
      std::string name = arg.substr(open + 1, close - open - 1);
      if (IsPlaceholderName(name) && !IsKnownPlaceholder(name)) {
        return Status::InvalidArgument("has the unknown placeholder {" + name +
                                       "}; known: {prompt} {prompt_json} {input} {out} {workdir}");
      }
    }
  }
  return Status::Ok();
}

std::unique_ptr<LlmClient> NewExecClient(ExecSettings settings, ExecEnv env) {
  return std::make_unique<ExecClient>(std::move(settings), std::move(env));
}

}  // namespace kforge::llm
