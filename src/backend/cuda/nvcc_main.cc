// kforge-nvcc: a drop-in for nvcc that runs the host front end (cudafe++) and the device compile
// (cicc, ptxas) of one .cu side by side (nvcc_lanes.h says why that is safe). What it does not
// recognise it hands to nvcc unchanged. PyTorch's load_inline uses it through PYTORCH_NVCC
// (python_worker.cc sets it for candidate jobs); anyone may call it as they would call nvcc.
//   KFORGE_REAL_NVCC  the nvcc to drive (else $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin)
//   KFORGE_NVCC_LANES=0  run nvcc itself (for comparing)
//   KFORGE_NVCC_VERBOSE=1  say on stderr why a compile went to plain nvcc
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/files.h"
#include "backend/cuda/nvcc_lanes.h"

namespace fs = std::filesystem;
using kforge::NvccPlan;

namespace {

volatile sig_atomic_t g_groups[3] = {0, 0, 0};

void ForwardAndExit(int sig) {
  for (sig_atomic_t g : g_groups)
    if (g > 0) kill(-g, SIGKILL);
  _exit(128 + sig);
}

bool Verbose() {
  const char* v = std::getenv("KFORGE_NVCC_VERBOSE");
  return v && *v && std::strcmp(v, "0") != 0;
}

bool IsExecutable(const fs::path& p) { return !p.empty() && access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); }

// The nvcc PyTorch's cpp_extension would pick, in its order; "" when there is none.
std::string RealNvcc() {
  if (const char* e = std::getenv("KFORGE_REAL_NVCC"); e && *e) return e;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* e = std::getenv(var); e && *e && IsExecutable(fs::path(e) / "bin" / "nvcc"))
      return (fs::path(e) / "bin" / "nvcc").string();
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t start = 0; start <= p.size();) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      const fs::path candidate = fs::path(p.substr(start, end - start)) / "nvcc";
      if (end > start && IsExecutable(candidate)) return candidate.string();
      start = end + 1;
    }
  }
  return IsExecutable("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "";
}

[[noreturn]] void ExecNvcc(const std::string& nvcc, char** argv, const std::string& why, const fs::path& tmp = {}) {
  if (Verbose() && !why.empty()) std::fprintf(stderr, "kforge-nvcc: plain nvcc: %s\n", why.c_str());
  if (!tmp.empty()) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }
  argv[0] = const_cast<char*>(nvcc.c_str());
  execv(nvcc.c_str(), argv);
  std::fprintf(stderr, "kforge-nvcc: cannot run %s: %s\n", nvcc.c_str(), std::strerror(errno));
  _exit(127);
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// `nvcc --dryrun args` with TMPDIR at `tmp`: its stderr, or "" when it failed.
std::string DryRun(const std::string& nvcc, const std::vector<std::string>& args, const fs::path& tmp) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid < 0) return "";
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    setenv("TMPDIR", tmp.c_str(), 1);
    std::vector<char*> v = {const_cast<char*>(nvcc.c_str()), const_cast<char*>("--dryrun")};
    for (const std::string& a : args) v.push_back(const_cast<char*>(a.c_str()));
    v.push_back(nullptr);
    execv(nvcc.c_str(), v.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ExitCodeOf(status) == 0 ? out : "";
}

// Runs `lines` in order under /bin/sh (stopping at the first failure) in a process group of its
// own; with `log` its stdout and stderr go there.
pid_t StartLane(const std::vector<std::string>& lines, const fs::path& log, int slot) {
  std::string script = "set -e\n";
  for (const std::string& l : lines) script += l + "\n";
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!log.empty()) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) _exit(127);
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid > 0) {
    setpgid(pid, pid);
    g_groups[slot] = pid;
  }
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return ExitCodeOf(status);
}

void CopyToStderr(const fs::path& log) {
  kforge::Result<std::string> text = kforge::ReadFile(log);
  if (text.ok() && !text->empty()) (void)!write(2, text->data(), text->size());
}

std::string OutputOf(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "-o" || args[i] == "--output-file") && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--output-file=", 0) == 0) return args[i].substr(14);
    if (args[i].rfind("-o=", 0) == 0) return args[i].substr(3);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string nvcc = RealNvcc();
  if (nvcc.empty()) {
    std::fprintf(stderr,
                 "kforge-nvcc: nvcc not found (looked at $KFORGE_REAL_NVCC, $CUDA_HOME/bin, $CUDA_PATH/bin, PATH and "
                 "/usr/local/cuda/bin): install the CUDA toolkit or set CUDA_HOME\n");
    return 127;
  }
  if (const char* e = std::getenv("KFORGE_NVCC_LANES"); e && std::strcmp(e, "0") == 0) ExecNvcc(nvcc, argv, "");
  if (kforge::NvccArgsNeedPlainNvcc(args)) ExecNvcc(nvcc, argv, "an argument nvcc alone handles");

  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/kforge-nvcc-XXXXXX";
  if (!mkdtemp(templ.data())) ExecNvcc(nvcc, argv, "no temporary folder");
  std::error_code ec;
  const fs::path tmp = fs::canonical(templ, ec);
  if (ec) ExecNvcc(nvcc, argv, "no temporary folder", templ);

  const std::string dry = DryRun(nvcc, args, tmp);
  if (dry.empty()) ExecNvcc(nvcc, argv, "the dry run failed", tmp);
  const std::string output = OutputOf(args);
  kforge::Result<NvccPlan> planned = kforge::PlanNvccLanes(dry, tmp.string(), output);
  if (!planned.ok()) ExecNvcc(nvcc, argv, planned.status().message(), tmp);
  const NvccPlan& plan = *planned;

  for (const auto& [name, value] : plan.env) setenv(name.c_str(), value.c_str(), 1);
  setenv("TMPDIR", tmp.c_str(), 1);
  std::string seed = plan.source_path;
  for (const std::string& a : args) seed += '\0' + a;
  if (kforge::Result<std::string> source = kforge::ReadFile(plan.source_path); source.ok()) seed += '\0' + *source;
  const std::string module_id = kforge::ModuleIdFor(plan.source_name, seed);
  if (!kforge::WriteFile(plan.module_id_file, module_id.data(), module_id.size()).ok())
    ExecNvcc(nvcc, argv, "cannot write the module id", tmp);

  struct sigaction sa = {};
  sa.sa_handler = ForwardAndExit;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  const fs::path device_log = tmp / "device.log";
  const pid_t host = StartLane(plan.host, {}, 0);
  const pid_t device = StartLane(plan.device, device_log, 1);
  if (host < 0 || device < 0) {
    if (device > 0) kill(-device, SIGKILL);
    if (host > 0) kill(-host, SIGKILL);
    std::fprintf(stderr, "kforge-nvcc: fork: %s\n", std::strerror(errno));
    return 1;
  }
  // cudafe++ reports a source's errors first, as under nvcc; cicc's copy of them is not shown.
  const int host_rc = Wait(host);
  if (host_rc != 0) {
    kill(-device, SIGKILL);
    Wait(device);
    fs::remove_all(tmp, ec);
    return host_rc;
  }
  const int device_rc = Wait(device);
  CopyToStderr(device_log);
  if (device_rc != 0) {
    fs::remove_all(tmp, ec);
    return device_rc;
  }
  const int final_rc = Wait(StartLane(plan.final, {}, 2));
  if (final_rc == 0 && !plan.depfile.empty()) {
    std::vector<std::string> texts;
    for (const std::string& f : plan.preprocessed)
      if (kforge::Result<std::string> t = kforge::ReadFile(f); t.ok()) texts.push_back(*std::move(t));
    const std::string rule = kforge::DepfileFromPreprocessed(plan.dep_target, texts);
    if (!kforge::WriteFile(plan.depfile, rule.data(), rule.size()).ok()) {
      std::fprintf(stderr, "kforge-nvcc: cannot write the dependency file %s\n", plan.depfile.c_str());
      fs::remove_all(tmp, ec);
      return 1;
    }
  }
  fs::remove_all(tmp, ec);
  return final_rc;
}
