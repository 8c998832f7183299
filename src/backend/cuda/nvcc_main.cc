// kforge-nvcc: a drop-in for nvcc that runs the host front end (cudafe++) and the device compile
// (cicc, ptxas) of one .cu side by side (nvcc_lanes.h says why that is safe). What it does not
// recognise it hands to nvcc unchanged. PyTorch's load_inline uses it through PYTORCH_NVCC
// (python_worker.cc sets it for candidate jobs), the cuda backend for its builds (compiler.cc).
//   KFORGE_REAL_NVCC  the nvcc to drive, a path or a name on PATH (else $CUDA_HOME/bin,
//                     $CUDA_PATH/bin, PATH, /usr/local/cuda/bin: PyTorch's order)
//   KFORGE_NVCC_LANES=0  run nvcc itself (for comparing)
//   KFORGE_NVCC_VERBOSE=1  say on stderr why a compile went to plain nvcc
//
// What the caller sees is what nvcc's run would show: each step's output is kept and replayed
// in nvcc's order, up to the first step that fails in that order (a device step that nvcc runs
// before the failed host step is waited for); the exit code is that step's. Every step runs in
// this process's group (a group kill reaches them all), as `exec LINE` under /bin/sh, with
// PR_SET_PDEATHSIG; SIGINT, SIGTERM and SIGHUP are passed on to the running steps, and once
// they have ended the temporary folder goes and the signal ends this process too.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/nvcc_lanes.h"
#include "base/files.h"

extern char** environ;

namespace fs = std::filesystem;
using kforge::NvccPlan;
using kforge::NvccStep;

namespace {

// --- Signals: passed on to the running steps (async-signal-safe: atomics and kill). ----------

std::atomic<int> g_signal{0};
std::atomic<pid_t> g_running[3] = {0, 0, 0};  // per lane: the step running now
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void PassOn(int sig) {
  g_signal.store(sig);
  for (std::atomic<pid_t>& p : g_running)
    if (pid_t pid = p.load(); pid > 0) kill(pid, sig);
}

// Handlers for the signals this process was not started ignoring (nohup keeps SIGHUP ignored).
void CatchSignals() {
  for (int sig : kSignals) {
    struct sigaction old = {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa = {};
    sa.sa_handler = PassOn;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

[[noreturn]] void EndBySignal(int sig, const fs::path& tmp) {
  std::error_code ec;
  if (!tmp.empty()) fs::remove_all(tmp, ec);
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(128 + sig);
}

// --- Finding nvcc. -------------------------------------------------------------------------

bool Verbose() {
  const char* v = std::getenv("KFORGE_NVCC_VERBOSE");
  return v && *v && std::strcmp(v, "0") != 0;
}

bool IsExecutable(const fs::path& p) {
  std::error_code ec;
  return !p.empty() && access(p.c_str(), X_OK) == 0 && !fs::is_directory(p, ec);
}

bool IsSelf(const fs::path& p) {
  std::error_code ec, ec2;
  const fs::path self = fs::canonical("/proc/self/exe", ec), other = fs::canonical(p, ec2);
  return !ec && !ec2 && self == other;
}

// `name` on PATH, leaving out kforge-nvcc itself; "" when there is none.
std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  const std::string p = path;
  for (size_t start = 0; start <= p.size();) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const fs::path candidate = fs::path(end > start ? p.substr(start, end - start) : ".") / name;
    if (IsExecutable(candidate) && !IsSelf(candidate)) return candidate.string();
    start = end + 1;
  }
  return "";
}

// The nvcc to drive, or "" with `error` saying why.
std::string RealNvcc(std::string* error) {
  if (const char* e = std::getenv("KFORGE_REAL_NVCC"); e && *e) {
    const std::string named = e;
    const std::string path = named.find('/') == std::string::npos ? OnPath(named) : named;
    if (path.empty() || !IsExecutable(path)) {
      *error = "KFORGE_REAL_NVCC='" + named + "' is not an executable program (a path, or a name on PATH)";
      return "";
    }
    if (IsSelf(path)) {
      *error = "KFORGE_REAL_NVCC='" + named + "' is kforge-nvcc itself: name the CUDA toolkit's nvcc";
      return "";
    }
    return path;
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* e = std::getenv(var); e && *e && IsExecutable(fs::path(e) / "bin" / "nvcc") && !IsSelf(fs::path(e) / "bin" / "nvcc"))
      return (fs::path(e) / "bin" / "nvcc").string();
  if (std::string p = OnPath("nvcc"); !p.empty()) return p;
  if (IsExecutable("/usr/local/cuda/bin/nvcc") && !IsSelf("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  *error = "nvcc not found (looked at $KFORGE_REAL_NVCC, $CUDA_HOME/bin, $CUDA_PATH/bin, PATH and /usr/local/cuda/bin): "
           "install the CUDA toolkit or set CUDA_HOME";
  return "";
}

[[noreturn]] void ExecNvcc(const std::string& nvcc, char** argv, const std::string& why, const fs::path& tmp = {}) {
  if (Verbose() && !why.empty()) std::fprintf(stderr, "kforge-nvcc: plain nvcc: %s\n", why.c_str());
  std::error_code ec;
  if (!tmp.empty()) fs::remove_all(tmp, ec);
  if (int sig = g_signal.load()) EndBySignal(sig, {});
  for (int sig : kSignals) {  // as they were given to this process, for nvcc
    struct sigaction old = {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == PassOn) signal(sig, SIG_DFL);
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

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return ExitCodeOf(status);
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// `nvcc --dryrun args` with TMPDIR at `tmp`. Its steps come on stderr; anything on stdout
// (--list-gpu-arch, ...) means the arguments ask for more than a compile. False when it failed.
bool DryRun(const std::string& nvcc, const std::vector<std::string>& args, const fs::path& tmp, std::string* steps) {
  const fs::path out = tmp / "dryrun.out";
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "TMPDIR=", 7) != 0) env.emplace_back(*e);
  env.push_back("TMPDIR=" + tmp.string());
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> v = {const_cast<char*>(nvcc.c_str()), const_cast<char*>("--dryrun")};
  for (const std::string& a : args) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) _exit(127);
    dup2(fd, 1);
    dup2(fds[1], 2);
    execve(nvcc.c_str(), v.data(), envp.data());
    _exit(127);
  }
  g_running[0] = pid;
  close(fds[1]);
  *steps = ReadAll(fds[0]);
  close(fds[0]);
  const int rc = WaitFor(pid);
  g_running[0] = 0;
  std::error_code ec;
  return rc == 0 && fs::file_size(out, ec) == 0 && !ec;
}

// --- Running the plan. ---------------------------------------------------------------------

struct Lane {
  std::vector<NvccStep> steps;
  int slot = 0;
  std::atomic<int> limit{INT_MAX};  // steps of this order or later are not started
  std::mutex start;                 // held while a step is forked and published
  int failed_order = -1;
  int rc = 0;
  std::vector<int> ran;  // orders of the steps started
};

struct Runner {
  std::vector<std::string> env;  // the caller's, the dry run's variables, TMPDIR
  fs::path tmp;
  std::vector<char*> Envp() {
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    return envp;
  }
  fs::path Log(int order, int fd) const { return tmp / ("step-" + std::to_string(order) + (fd == 1 ? ".out" : ".err")); }
};

// One step, `exec LINE` under /bin/sh; with `keep` its stdout and stderr go to its log files.
// -1 when it was not started (past the lane's limit, or a signal came).
int RunStep(Runner& r, Lane& lane, const NvccStep& step, bool keep) {
  std::vector<char*> envp = r.Envp();
  const std::string script = "exec " + step.line;
  const std::string out = r.Log(step.order, 1).string(), err = r.Log(step.order, 2).string();
  const pid_t parent = getpid();
  pid_t pid;
  {
    std::lock_guard<std::mutex> hold(lane.start);
    if (step.order >= lane.limit.load() || g_signal.load()) return -1;
    lane.ran.push_back(step.order);
    pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      for (int sig : kSignals) signal(sig, SIG_DFL);
      if (keep) {
        const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0) _exit(127);
        dup2(o, 1);
        dup2(e, 2);
      }
      execle("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr), envp.data());
      _exit(127);
    }
    if (pid < 0) {
      const std::string why = std::string("kforge-nvcc: fork: ") + std::strerror(errno) + "\n";
      if (keep) (void)kforge::WriteFile(err, why.data(), why.size());
      else (void)!write(2, why.data(), why.size());
      return 1;
    }
    g_running[lane.slot] = pid;
  }
  if (int sig = g_signal.load()) kill(pid, sig);  // a signal between the check and the publication
  const int rc = WaitFor(pid);
  g_running[lane.slot] = 0;
  return rc;
}

void RunLane(Runner& r, Lane& lane, bool keep) {
  for (const NvccStep& step : lane.steps) {
    const int rc = RunStep(r, lane, step, keep);
    if (rc < 0) return;
    if (rc != 0) {
      lane.failed_order = step.order;
      lane.rc = rc;
      return;
    }
  }
}

void Replay(const Runner& r, std::vector<int> orders, int up_to) {
  std::sort(orders.begin(), orders.end());
  for (int order : orders) {
    if (order > up_to) break;
    for (int fd : {1, 2}) {
      kforge::Result<std::string> text = kforge::ReadFile(r.Log(order, fd));
      if (text.ok() && !text->empty()) (void)!write(fd, text->data(), text->size());
    }
  }
}

std::string ValueOfArg(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(flag + "=", 0) == 0) return args[i].substr(flag.size() + 1);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::string error;
  const std::string nvcc = RealNvcc(&error);
  if (nvcc.empty()) {
    std::fprintf(stderr, "kforge-nvcc: %s\n", error.c_str());
    return 127;
  }
  if (const char* e = std::getenv("KFORGE_NVCC_LANES"); e && std::strcmp(e, "0") == 0) ExecNvcc(nvcc, argv, "");
  if (kforge::NvccArgsNeedPlainNvcc(args)) ExecNvcc(nvcc, argv, "an argument nvcc alone handles");
  for (const char* var : {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"})
    if (const char* e = std::getenv(var); e && *e) ExecNvcc(nvcc, argv, std::string(var) + " is set");

  CatchSignals();
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/kforge-nvcc-XXXXXX";
  if (!mkdtemp(templ.data())) ExecNvcc(nvcc, argv, "no temporary folder");
  std::error_code ec;
  Runner r;
  r.tmp = fs::canonical(templ, ec);
  if (ec) ExecNvcc(nvcc, argv, "no temporary folder", templ);

  std::string dry;
  if (!DryRun(nvcc, args, r.tmp, &dry)) ExecNvcc(nvcc, argv, "the dry run failed or wrote to stdout", r.tmp);
  std::string output = ValueOfArg(args, "-o");
  if (output.empty()) output = ValueOfArg(args, "--output-file");
  kforge::Result<NvccPlan> planned = kforge::PlanNvccLanes(dry, r.tmp.string(), output);
  if (!planned.ok()) ExecNvcc(nvcc, argv, planned.status().message(), r.tmp);
  const NvccPlan& plan = *planned;
  // The dry run prints the dependency file unquoted: it must be the argument's, word for word.
  if (!plan.depfile.empty() && plan.depfile != ValueOfArg(args, "--dependency-output"))
    ExecNvcc(nvcc, argv, "a dependency file other than --dependency-output's", r.tmp);

  std::string seed = plan.source_path;
  for (const std::string& a : args) seed += '\0' + a;
  if (kforge::Result<std::string> source = kforge::ReadFile(plan.source_path); source.ok()) seed += '\0' + *source;
  const std::string module_id = kforge::ModuleIdFor(plan.source_name, seed);
  if (!kforge::WriteFile(plan.module_id_file, module_id.data(), module_id.size()).ok())
    ExecNvcc(nvcc, argv, "cannot write the module id", r.tmp);

  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    const bool replaced = name == "TMPDIR" || std::any_of(plan.env.begin(), plan.env.end(), [&](const auto& kv) { return kv.first == name; });
    if (!replaced) r.env.push_back(entry);
  }
  for (const auto& [name, value] : plan.env) r.env.push_back(name + "=" + value);
  r.env.push_back("TMPDIR=" + r.tmp.string());

  Lane host, device;
  host.steps = plan.host;
  host.slot = 0;
  device.steps = plan.device;
  device.slot = 1;
  std::thread device_thread([&] { RunLane(r, device, true); });
  RunLane(r, host, true);
  if (host.rc != 0) {
    // nvcc runs the device steps before the failed one first: those are waited for, no others.
    {
      std::lock_guard<std::mutex> hold(device.start);
      device.limit = host.failed_order;
    }
    if (pid_t pid = g_running[1].load(); pid > 0) {
      // The step now running, if it comes after the failed one in nvcc's order, is not nvcc's.
      std::lock_guard<std::mutex> hold(device.start);
      if (!device.ran.empty() && device.ran.back() > host.failed_order) kill(pid, SIGKILL);
    }
  }
  device_thread.join();
  if (int sig = g_signal.load()) EndBySignal(sig, r.tmp);

  std::vector<int> ran = host.ran;
  ran.insert(ran.end(), device.ran.begin(), device.ran.end());
  int failed = INT_MAX, rc = 0;
  for (const Lane* lane : {&host, &device}) {
    if (lane->rc != 0 && lane->failed_order < failed) {
      failed = lane->failed_order;
      rc = lane->rc;
    }
  }
  Replay(r, ran, failed);
  if (rc != 0) {
    fs::remove_all(r.tmp, ec);
    return rc;
  }

  Lane last;
  last.steps = plan.final;
  last.slot = 2;
  RunLane(r, last, false);
  if (int sig = g_signal.load()) EndBySignal(sig, r.tmp);
  if (last.rc == 0 && !plan.depfile.empty()) {
    std::vector<std::string> texts;
    for (const std::string& f : plan.preprocessed)
      if (kforge::Result<std::string> t = kforge::ReadFile(f); t.ok()) texts.push_back(*std::move(t));
    const std::string rule = kforge::DepfileFromPreprocessed(plan.dep_target, texts);
    if (!kforge::WriteFile(plan.depfile, rule.data(), rule.size()).ok()) {
      std::fprintf(stderr, "kforge-nvcc: cannot write the dependency file %s\n", plan.depfile.c_str());
      fs::remove_all(r.tmp, ec);
      return 1;
    }
  }
  fs::remove_all(r.tmp, ec);
  return last.rc;
}
