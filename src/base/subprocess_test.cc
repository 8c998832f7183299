// Specifications of the sandboxed process runner. Misbehaving children come from
// testdata/sandbox_helper.cc (KFORGE_SANDBOX_HELPER) or from the shell.
#include "base/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;
using End = ProcessResult::End;

constexpr char kHelper[] = KFORGE_SANDBOX_HELPER;
constexpr uid_t kNobody = 65534;

// A fresh directory, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kforge-sandbox-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Processes whose process group is `pgid`, zombies included.
std::vector<pid_t> GroupMembers(pid_t pgid) {
  std::vector<pid_t> members;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::ifstream stat_file(it->path() / "stat");
    std::string stat;
    if (!std::getline(stat_file, stat)) continue;
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state;
    int ppid, pgrp;
    if (sscanf(stat.c_str() + paren + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid) members.push_back(std::stoi(it->path().filename().string()));
  }
  return members;
}

// Processes (host view) whose command line contains `token`.
std::vector<pid_t> ProcessesWith(const std::string& token) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    // read(), not a stream: a process that exits meanwhile fails the read with ESRCH, which
    // libstdc++'s filebuf turns into an exception.
    const int fd = open((it->path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buffer[4096];
    const ssize_t n = read(fd, buffer, sizeof buffer);
    close(fd);
    if (n > 0 && std::string(buffer, n).find(token) != std::string::npos) {
      found.push_back(std::stoi(it->path().filename().string()));
    }
  }
  return found;
}

// A token no other process has in its command line.
std::string UniqueToken() {
  static int counter = 0;
  return "kforge-token-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
}

std::string Gaps(const ProcessResult& r) {
  std::string all;
  for (const std::string& gap : r.isolation_gaps) all += gap + "; ";
  return all;
}

bool NetworkIsPrivateHere() {
  for (const std::string& line : DescribeIsolation()) {
    if (line.rfind("network: private", 0) == 0) return true;
  }
  return false;
}

// A TCP socket listening on 127.0.0.1 (never accepting: the backlog completes connects).
int ListenOnLoopback(int* port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(s, 16) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return s;
}

ProcessSpec MakeSpec(std::vector<std::string> argv, const fs::path& cwd) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.cwd = cwd;
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.limits.wall_seconds = 10;
  // The helper, wherever the build lives: a checkout below /tmp is hidden by the child's
  // private /tmp otherwise (the product does the same for kforge-worker's folder).
  spec.readable_paths.push_back(fs::path(kHelper).parent_path());
  if (!spec.argv.empty() && spec.argv[0].find('/') != std::string::npos)
    spec.readable_paths.push_back(fs::path(spec.argv[0]).parent_path());
  return spec;
}

class SandboxTest : public ::testing::Test {
 protected:
  ProcessSpec Spec(std::vector<std::string> argv) { return MakeSpec(std::move(argv), dir_.path()); }
  ProcessResult Run(const ProcessSpec& spec) { return runner_->Run(spec); }

  TempDir dir_;
  std::unique_ptr<ProcessRunner> runner_ = NewSandboxRunner();
};

// --- Normal runs. -----------------------------------------------------------------------------

TEST_F(SandboxTest, GivenAProgramThatExitsItReportsTheCodeAndBothStreams) {
  ProcessResult r = Run(Spec({"sh", "-c", "echo out; echo err >&2; exit 3"}));
  EXPECT_EQ(r.end, End::kExited) << r.Describe();
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.out_total, 4u);
  EXPECT_GT(r.pid, 0);
  EXPECT_FALSE(r.Succeeded());
  EXPECT_EQ(r.Describe(), "exited with code 3");
}

TEST_F(SandboxTest, GivenAnExitCodeAbove128ItIsNotMistakenForASignal) {
  ProcessResult r = Run(Spec({"sh", "-c", "exit 139"}));
  EXPECT_EQ(r.end, End::kExited) << r.Describe();
  EXPECT_EQ(r.exit_code, 139);
  EXPECT_EQ(r.signal, 0);
}

TEST_F(SandboxTest, GivenStdinDataItDeliversItAndThenEndOfFile) {
  ProcessSpec spec = Spec({"cat"});
  spec.stdin_data = "hello\nworld\n";
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.out, "hello\nworld\n");
}

TEST_F(SandboxTest, GivenStdinLargerThanAPipeItStreamsItWhileReadingOutput) {
  ProcessSpec spec = Spec({"cat"});
  spec.stdin_data = std::string(4 << 20, 'x');
  spec.limits.output_bytes = 16;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.out_total, 4u << 20);
  EXPECT_EQ(r.out, std::string(16, 'x'));
}

TEST_F(SandboxTest, GivenStdinTheChildNeverReadsTheParentIsNotKilledBySigpipe) {
  ProcessSpec spec = Spec({"true"});
  spec.stdin_data = std::string(4 << 20, 'x');
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
}

TEST_F(SandboxTest, GivenAnEnvironmentTheChildSeesExactlyIt) {
  ProcessSpec spec = Spec({"env"});
  spec.env["A"] = "1";
  spec.env["Z"] = "two words";
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.out, "A=1\nPATH=/usr/bin:/bin\nZ=two words\n");
}

TEST_F(SandboxTest, GivenNoPathInTheEnvironmentItSearchesTheParentsPath) {
  ProcessSpec spec = Spec({"env"});
  spec.env.clear();
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe() << " " << r.start_error;
  EXPECT_EQ(r.out, "");
}

// A copy of the helper that user nobody can reach, for tests that search PATH or run as
// nobody themselves (the build folder may sit under a private folder such as mktemp -d).
fs::path VisibleHelper() {
  static const fs::path copy = [] {
    std::string pattern = (fs::temp_directory_path() / "kforge-helper-XXXXXX").string();
    fs::path dir = mkdtemp(pattern.data());
    chmod(dir.c_str(), 0755);
    fs::copy_file(kHelper, dir / "sandbox_helper");
    chmod((dir / "sandbox_helper").c_str(), 0755);
    return dir / "sandbox_helper";
  }();
  return copy;
}

TEST_F(SandboxTest, GivenAPathInTheEnvironmentItSearchesThatPathNotTheParents) {
  const fs::path helper = VisibleHelper();
  ProcessSpec spec = Spec({helper.filename().string(), "threads", "0"});
  spec.env["PATH"] = "/nonexistent:" + helper.parent_path().string();
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.out, "0\n");
}

TEST_F(SandboxTest, GivenManyThreadsCallingRunEachGetsItsOwnResult) {
  std::vector<ProcessResult> results(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      ProcessSpec spec = Spec({"sh", "-c", "echo $X"});
      spec.env["X"] = std::to_string(i);
      results[i] = Run(spec);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(results[i].out, std::to_string(i) + "\n");
}

// --- Failing to start. ------------------------------------------------------------------------

TEST_F(SandboxTest, GivenAMissingProgramItReportsStartFailedWithTheReason) {
  ProcessResult r = Run(Spec({"kforge-no-such-program", "x"}));
  EXPECT_EQ(r.end, End::kStartFailed);
  EXPECT_NE(r.start_error.find("'kforge-no-such-program'"), std::string::npos) << r.start_error;
  EXPECT_NE(r.start_error.find("No such file or directory"), std::string::npos) << r.start_error;
  EXPECT_NE(r.start_error.find("PATH=/usr/bin:/bin"), std::string::npos) << r.start_error;
  EXPECT_EQ(r.Describe().rfind("could not start: cannot run", 0), 0u) << r.Describe();
}

TEST_F(SandboxTest, GivenAMissingWorkingDirectoryItReportsStartFailed) {
  ProcessSpec spec = Spec({"true"});
  spec.cwd = dir_.path() / "missing";
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kStartFailed);
  EXPECT_NE(r.start_error.find("missing"), std::string::npos) << r.start_error;
}

TEST_F(SandboxTest, GivenAnEmptyCommandItReportsStartFailed) {
  ProcessResult r = Run(Spec({}));
  EXPECT_EQ(r.end, End::kStartFailed);
  EXPECT_EQ(r.start_error, "empty command");
}

// --- Crashes and limits. ----------------------------------------------------------------------

TEST_F(SandboxTest, GivenASegfaultItReportsSignal11) {
  ProcessResult r = Run(Spec({kHelper, "segv"}));
  EXPECT_EQ(r.end, End::kSignaled) << r.Describe();
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.Describe(), "killed by signal 11 (SIGSEGV: Segmentation fault)");
}

TEST_F(SandboxTest, GivenAnAbortItReportsSigabrt) {
  ProcessResult r = Run(Spec({kHelper, "abort"}));
  EXPECT_EQ(r.end, End::kSignaled) << r.Describe();
  EXPECT_EQ(r.signal, SIGABRT);
}

TEST_F(SandboxTest, GivenAHangItKillsTheChildAtTheWallClockLimit) {
  ProcessSpec spec = Spec({"sleep", "1000"});
  spec.limits.wall_seconds = 1;
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kTimedOut) << r.Describe();
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_GE(r.wall_seconds, 1.0);
  EXPECT_LT(r.wall_seconds, 2.5);
  EXPECT_EQ(r.Describe(), "timed out after 1.0 s");
}

TEST_F(SandboxTest, GivenASigkillFromOutsideTheDescriptionPointsAtTheOutOfMemoryKiller) {
  // The kernel's OOM killer sends SIGKILL; kforge's own kills are timeouts and floods.
  ProcessResult r = Run(Spec({"sh", "-c", "kill -9 $$"}));
  ASSERT_EQ(r.end, End::kSignaled) << r.Describe();
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_NE(r.Describe().find("from outside kforge"), std::string::npos) << r.Describe();
  EXPECT_NE(r.Describe().find("out-of-memory killer"), std::string::npos) << r.Describe();
  EXPECT_NE(r.Describe().find("peak resident memory"), std::string::npos) << r.Describe();
}

TEST_F(SandboxTest, GivenACpuSpinItIsEndedByTheCpuLimit) {
  ProcessSpec spec = Spec({kHelper, "spin"});
  spec.limits.cpu_seconds = 1;
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kSignaled) << r.Describe();
  EXPECT_TRUE(r.signal == SIGXCPU || r.signal == SIGKILL) << r.signal;
  // The kernel counts the limit on the scheduler's exact runtime; rusage's user and system
  // times, sampled at ticks, read 0.85 to 0.89 s at load 7 on the 2-core VM.
  EXPECT_GE(r.cpu_seconds, 0.7);
  EXPECT_NE(r.Describe().find("CPU time limit of 1 s"), std::string::npos) << r.Describe();
}

TEST_F(SandboxTest, GivenAHugeAllocationItFailsInsideTheAddressSpaceLimit) {
  ProcessSpec spec = Spec({kHelper, "oom"});
  spec.limits.address_space_bytes = 1ull << 30;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.end == End::kSignaled || (r.end == End::kExited && r.exit_code != 0))
      << r.Describe();
  EXPECT_LT(r.max_rss_kb, 1100 << 10);
}

TEST_F(SandboxTest, GivenWritesPastTheFileSizeLimitItReportsSigxfsz) {
  ProcessSpec spec = Spec({kHelper, "fsize", std::to_string(4 << 20)});
  spec.limits.file_size_bytes = 1 << 20;
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kSignaled) << r.Describe();
  EXPECT_EQ(r.signal, SIGXFSZ);
  EXPECT_LE(fs::file_size(dir_.path() / "big"), 1u << 20);
}

TEST_F(SandboxTest, GivenAForkBombItIsContainedAndNothingOfItRemains) {
  ProcessSpec spec = Spec({kHelper, "forkbomb"});
  spec.limits.max_processes = 16;
  spec.limits.wall_seconds = 2;
  spec.limits.own_uid = true;  // as kforge-worker jobs run (as root)
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = Run(spec);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.end, End::kTimedOut) << r.Describe();
  EXPECT_LT(seconds, 5.0);
  // RLIMIT_NPROC counts every task of the sandbox user, and the limit is set from the count
  // at start; other sandboxes exiting meanwhile (parallel ctest) free a few slots.
  EXPECT_LE(std::count(r.out.begin(), r.out.end(), '+'), 64) << "forks that succeeded";
  EXPECT_TRUE(GroupMembers(r.pid).empty());
}

TEST_F(SandboxTest, GivenMaxProcessesItAlsoLimitsThreads) {
  ProcessSpec spec = Spec({kHelper, "threads", "64"});
  spec.limits.max_processes = 8;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_LT(std::stoi(r.out), 8) << "threads started";
}

TEST_F(SandboxTest, GivenAFloodOfOutputItKillsTheChildAndKeepsOnlyTheCap) {
  ProcessSpec spec = Spec({"head", "-c", "1G", "/dev/zero"});
  spec.limits.output_bytes = 1024;
  spec.limits.output_kill_bytes = 8 << 20;
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kOutputFlood) << r.Describe();
  EXPECT_EQ(r.out.size(), 1024u);
  EXPECT_GT(r.out_total, 8u << 20);
  EXPECT_LT(r.out_total, 64u << 20);
  EXPECT_LT(r.wall_seconds, 5.0);
  EXPECT_NE(r.Describe().find("(limit 8 MB)"), std::string::npos) << r.Describe();
}

// A job folder lies on the host's /dev/shm: RAM no process owns. Files of up to the file size
// limit each, or many empty ones, end the child once the folder holds more than folder_bytes.
TEST_F(SandboxTest, GivenAFolderLimitLargeFilesInTheWorkingFolderEndTheChild) {
  ProcessSpec spec = Spec({"sh", "-c", "i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/zero > big_$i; i=$((i+1)); done; sleep 30"});
  spec.limits.folder_bytes = 8 << 20;
  spec.limits.wall_seconds = 20;
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kFolderFlood) << r.Describe();
  EXPECT_GT(r.folder_bytes, 8u << 20);
  EXPECT_LT(r.wall_seconds, 10.0);
  EXPECT_NE(r.Describe().find("working folder grew past its limit of 8 MB"), std::string::npos) << r.Describe();
}

TEST_F(SandboxTest, GivenAFolderLimitAFloodOfEmptyFilesAndFoldersEndsTheChild) {
  ProcessSpec spec = Spec({"sh", "-c", "mkdir -p d/e; i=0; while [ $i -lt 5000 ]; do : > d/e/f_$i; i=$((i+1)); done; sleep 30"});
  spec.limits.folder_bytes = 1 << 20;  // 256 files at 4 KB each
  spec.limits.wall_seconds = 20;
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kFolderFlood) << r.Describe();
  EXPECT_LT(r.wall_seconds, 10.0);
}

TEST_F(SandboxTest, GivenAFolderLimitAJobWithinItEndsAsItWould) {
  ProcessSpec spec = Spec({"sh", "-c", "head -c 1048576 /dev/zero > a; sleep 0.1; echo done"});
  spec.limits.folder_bytes = 8 << 20;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  EXPECT_EQ(r.out, "done\n");
}

// What a job keeps in a tmpfs is no process's memory: when RAM runs out, the kernel must end a
// job, not the judge.
TEST_F(SandboxTest, GivenAnyJobTheOutOfMemoryKillerTakesItFirst) {
  ProcessResult r = Run(Spec({"cat", "/proc/self/oom_score_adj"}));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  EXPECT_EQ(r.out, "1000\n");
}

TEST_F(SandboxTest, GivenOutputBeyondTheKeptBytesItCountsTheRest) {
  ProcessSpec spec = Spec({"head", "-c", "1M", "/dev/zero"});
  spec.limits.output_bytes = 1000;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_EQ(r.out_total, 1u << 20);
}

TEST_F(SandboxTest, GivenABackgroundGrandchildRunReturnsAtOnceAndKillsIt) {
  ProcessResult r = Run(Spec({"sh", "-c", "sleep 100 & echo hi"}));
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_LT(r.wall_seconds, 2.0);
  EXPECT_TRUE(GroupMembers(r.pid).empty());
}

TEST_F(SandboxTest, GivenADescendantThatLeavesTheGroupRunStillReturnsWithinTheGracePeriod) {
  // Without a PID namespace the escapee (own session) keeps stdout open and is out of reach
  // of the group kill. Run() must still return, after a bounded drain.
  ProcessSpec spec = Spec({"sh", "-c", "setsid sh -c 'echo $$; exec sleep 100' & sleep 0.3"});
  spec.limits.isolate_processes = false;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_LT(r.wall_seconds, 2.0);
  const pid_t escapee = atoi(r.out.c_str());
  if (escapee > 0) {
    kill(escapee, SIGKILL);
    waitpid(escapee, nullptr, 0);  // re-parented to this process (subreaper)
  }
}

// The attack that motivated PID namespaces: a fork()ed child setsid()s and spins as nobody.
TEST_F(SandboxTest, GivenADescendantThatCallsSetsidNothingOfItOutlivesTheRun) {
  const std::string token = UniqueToken();
  ProcessSpec spec = Spec({kHelper, "escape", token});
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  EXPECT_EQ(r.out, "started\n");
  if (!r.pid_namespace) GTEST_SKIP() << "no PID namespace here: " << Gaps(r);
  EXPECT_TRUE(ProcessesWith(token).empty()) << "the setsid() grandchild survived the run";
  EXPECT_LT(r.wall_seconds, 2.0);
}

TEST_F(SandboxTest, GivenNoPidNamespaceTheSetsidEscapeeIsSeen) {
  // The control for the test above: the scan does find an escapee that survived.
  const std::string token = UniqueToken();
  ProcessSpec spec = Spec({kHelper, "escape", token});
  spec.limits.isolate_processes = false;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  EXPECT_FALSE(r.pid_namespace);
  const std::vector<pid_t> survivors = ProcessesWith(token);
  EXPECT_EQ(survivors.size(), 1u);
  for (pid_t pid : survivors) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);  // re-parented to this process (subreaper)
  }
  // So is the zombie of the escapee's parent, outside the group that Run() reaps.
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

TEST_F(SandboxTest, GivenAPidNamespaceTheChildSeesOnlyItsOwnProcesses) {
  ProcessResult r = Run(Spec({kHelper, "procs"}));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  if (!r.pid_namespace) GTEST_SKIP() << "no PID namespace here: " << Gaps(r);
  // The init (1) and the helper itself (2).
  EXPECT_EQ(r.out, "1 2 \n");
}

TEST_F(SandboxTest, GivenManyRunsItLeaksNoFileDescriptorsOrChildren) {
  auto open_fds = [] {
    std::error_code ec;
    return std::distance(fs::directory_iterator("/proc/self/fd", ec), fs::directory_iterator());
  };
  const auto before = open_fds();
  for (int i = 0; i < 20; ++i) Run(Spec({"sh", "-c", "echo x; sleep 5 & exit 1"}));
  Run(Spec({"kforge-no-such-program"}));
  EXPECT_EQ(open_fds(), before);
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1) << "a child of the test process was left behind";
}

// --- Isolation. -------------------------------------------------------------------------------

TEST_F(SandboxTest, GivenAPrivateNetworkTheChildCannotReachTheHostsLoopback) {
  int port = 0;
  int listener = ListenOnLoopback(&port);
  ASSERT_GE(listener, 0);
  ProcessSpec spec = Spec({kHelper, "connect", std::to_string(port)});
  spec.limits.seccomp = false;  // which refuses AF_INET sockets anyway
  spec.limits.isolate_network = false;
  ProcessResult shared = Run(spec);
  EXPECT_TRUE(shared.Succeeded()) << "control run must connect: " << shared.out;
  spec.limits.isolate_network = true;
  ProcessResult isolated = Run(spec);
  close(listener);
  EXPECT_EQ(isolated.network_private, NetworkIsPrivateHere());
  if (!isolated.network_private) GTEST_SKIP() << "no private network namespace on this machine";
  EXPECT_EQ(isolated.end, End::kExited);
  EXPECT_EQ(isolated.exit_code, 1) << isolated.out;
}

TEST_F(SandboxTest, GivenRootEveryIsolationMechanismIsActive) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: the mechanisms depend on user namespaces here";
  ProcessResult r = Run(Spec({"true"}));
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_TRUE(r.network_private);
  EXPECT_TRUE(r.pid_namespace);
  EXPECT_TRUE(r.private_fs);
  EXPECT_TRUE(r.seccomp);
  EXPECT_TRUE(r.isolation_gaps.empty()) << Gaps(r);
}

TEST_F(SandboxTest, GivenIsolationSwitchedOffNoneIsReportedActiveOrMissing) {
  ProcessSpec spec = Spec({"true"});
  spec.limits.isolate_network = spec.limits.isolate_processes = false;
  spec.limits.private_filesystem = spec.limits.seccomp = false;
  ProcessResult r = Run(spec);
  EXPECT_TRUE(r.Succeeded()) << r.Describe();
  EXPECT_FALSE(r.network_private || r.pid_namespace || r.private_fs || r.seccomp);
  EXPECT_TRUE(r.isolation_gaps.empty()) << Gaps(r);
}

TEST_F(SandboxTest, GivenAPrivateFilesystemWritesOutsideItsFoldersFailAndItsTmpIsItsOwn) {
  const std::string token = UniqueToken();
  const fs::path build = fs::path(kHelper).parent_path();
  const std::vector<std::string> outside = {"/etc/" + token, (build / token).string(), "/" + token};
  const std::vector<std::string> private_tmp = {"/tmp/" + token, "/var/tmp/" + token,
                                                "/dev/shm/" + token};
  std::vector<std::string> argv = {kHelper, "write", "inside"};
  argv.insert(argv.end(), outside.begin(), outside.end());
  argv.insert(argv.end(), private_tmp.begin(), private_tmp.end());
  ProcessSpec spec = Spec(argv);
  spec.limits.drop_privileges = false;  // even root cannot write there
  ProcessResult r = Run(spec);
  if (!r.private_fs) GTEST_SKIP() << "no private filesystem here: " << Gaps(r);
  EXPECT_EQ(r.end, End::kExited) << r.Describe() << r.err;
  EXPECT_NE(r.out.find("inside: ok\n"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_.path() / "inside"));
  for (const std::string& path : outside) {
    EXPECT_NE(r.out.find(path + ": EROFS\n"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(path)) << path;
  }
  for (const std::string& path : private_tmp) {
    EXPECT_NE(r.out.find(path + ": ok\n"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(path)) << path << " outlived the run";
  }
}

TEST_F(SandboxTest, GivenWritablePathsTheChildMayWriteThereAndNowhereElse) {
  TempDir cache, other;
  const uid_t owner = geteuid() == 0 ? kNobody : geteuid();  // the sandbox user may write
  ASSERT_EQ(chown(cache.path().c_str(), owner, owner == kNobody ? kNobody : getegid()), 0);
  ASSERT_EQ(chown(other.path().c_str(), owner, owner == kNobody ? kNobody : getegid()), 0);
  const std::string listed = (cache.path() / "f").string();
  const std::string unlisted = (other.path() / "f").string();
  ProcessSpec spec = Spec({kHelper, "write", listed, unlisted});
  spec.writable_paths = {cache.path()};
  ProcessResult r = Run(spec);
  if (!r.private_fs) GTEST_SKIP() << "no private filesystem here: " << Gaps(r);
  EXPECT_NE(r.out.find(listed + ": ok\n"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(listed));
  // The unlisted folder lies in /tmp: the child's /tmp is a fresh tmpfs without it.
  EXPECT_NE(r.out.find(unlisted + ": ENOENT\n"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(unlisted));
}

TEST_F(SandboxTest, GivenAReadablePathBelowTmpTheChildSeesItReadOnly) {
  TempDir shared;  // below /tmp, which the child's private tmpfs would hide
  chmod(shared.path().c_str(), 0755);
  { std::ofstream(shared.path() / "lock") << "seen"; }
  const std::string lock = (shared.path() / "lock").string();
  const std::string planted = (shared.path() / "planted").string();
  ProcessSpec spec = Spec({"sh", "-c", "cat " + lock + "; echo; " + kHelper + " write " + planted});
  spec.readable_paths.push_back(shared.path());
  ProcessResult r = Run(spec);
  if (!r.private_fs) GTEST_SKIP() << "no private filesystem here: " << Gaps(r);
  EXPECT_EQ(r.out, "seen\n" + planted + ": EROFS\n") << r.err;
  EXPECT_FALSE(fs::exists(planted));
}

// The invoking user's home is behind a private tmpfs: run as that user, a candidate's
// `#include "$HOME/..."` put a 0600 file into the compiler's log. What programs need from it
// stays: the install prefix of the program run (a virtual environment, a toolkit: lib/ beside
// bin/) and ~/.local/lib (pip --user).
TEST_F(SandboxTest, GivenAHomeFolderTheChildSeesOnlyTheProgramsPrefixAndLocalLibInIt) {
  // As root the child runs as nobody: the home must be one nobody could read, so that only the
  // tmpfs hides it (a build below a 0700 folder would hide it by its mode alone).
  const fs::path base = geteuid() == 0 ? fs::path("/var/lib") : fs::path(kHelper).parent_path();
  std::string pattern = (base / "kforge-home-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr) << base;
  const fs::path home = pattern;
  chmod(home.c_str(), 0755);
  for (const fs::path& d : {home / "tool" / "bin", home / "tool" / "lib", home / ".local" / "lib"}) fs::create_directories(d);
  for (const fs::path& d : {home / "tool", home / "tool" / "bin", home / "tool" / "lib", home / ".local", home / ".local" / "lib"})
    chmod(d.c_str(), 0755);
  fs::copy_file("/bin/cat", home / "tool" / "bin" / "cat");
  chmod((home / "tool" / "bin" / "cat").c_str(), 0755);
  { std::ofstream(home / "tool" / "lib" / "data.txt") << "library "; }
  { std::ofstream(home / ".local" / "lib" / "site.txt") << "site "; }
  { std::ofstream(home / "secret.txt") << "secret"; }
  const char* old = getenv("HOME");
  const std::string saved = old ? old : "";
  setenv("HOME", home.c_str(), 1);
  ProcessResult r = Run(Spec({(home / "tool" / "bin" / "cat").string(), (home / "tool" / "lib" / "data.txt").string(),
                              (home / ".local" / "lib" / "site.txt").string(), (home / "secret.txt").string()}));
  if (old) setenv("HOME", saved.c_str(), 1); else unsetenv("HOME");
  std::error_code ec;
  fs::remove_all(home, ec);
  if (!r.private_fs) GTEST_SKIP() << "no private filesystem here: " << Gaps(r);
  EXPECT_EQ(r.out, "library site ") << r.err;
  EXPECT_NE(r.err.find("secret.txt: No such file or directory"), std::string::npos) << r.err;
}

TEST_F(SandboxTest, GivenAWritablePathThatDoesNotExistItReportsStartFailed) {
  ProcessSpec spec = Spec({"true"});
  spec.writable_paths = {dir_.path() / "missing"};
  ProcessResult r = Run(spec);
  EXPECT_EQ(r.end, End::kStartFailed);
  EXPECT_NE(r.start_error.find("missing"), std::string::npos) << r.start_error;
}

TEST_F(SandboxTest, GivenTheSeccompFilterOnlyUnixSocketsCanBeCreated) {
  ProcessResult r = Run(Spec({kHelper, "sockets"}));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  if (!r.seccomp) GTEST_SKIP() << "no seccomp filter here: " << Gaps(r);
  EXPECT_EQ(r.out, "inet=EPERM netlink=EPERM unix=ok pair=ok\n");
  ProcessSpec unfiltered = Spec({kHelper, "sockets"});
  unfiltered.limits.seccomp = false;
  r = Run(unfiltered);
  EXPECT_EQ(r.out.rfind("inet=ok", 0), 0u) << "control run: " << r.out;
}

TEST_F(SandboxTest, GivenTheSeccompFilterPtraceIsRefused) {
  ProcessResult r = Run(Spec({kHelper, "ptrace"}));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  if (!r.seccomp) GTEST_SKIP() << "no seccomp filter here: " << Gaps(r);
  EXPECT_EQ(r.out, "child=EPERM parent=EPERM\n");
}

TEST_F(SandboxTest, GivenTheSeccompFilterPerfEventsAreRefusedUnlessAllowed) {
  ProcessSpec spec = Spec({kHelper, "perf"});
  spec.limits.drop_privileges = false;  // perf_event_paranoid does not stop root
  ProcessResult r = Run(spec);
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  if (!r.seccomp) GTEST_SKIP() << "no seccomp filter here: " << Gaps(r);
  EXPECT_EQ(r.out, "perf=EPERM\n");
  if (geteuid() != 0) GTEST_SKIP() << "not root: perf_event_paranoid may refuse the allowed call";
  spec.limits.allow_perf_events = true;
  r = Run(spec);
  EXPECT_TRUE(r.seccomp);
  EXPECT_EQ(r.out, "perf=ok\n");
}

// A killed kforge must not leave its sandboxes running: the outer child dies with it
// (PDEATHSIG), the init with the outer child, the namespace with the init.
TEST_F(SandboxTest, GivenTheParentIsKilledNothingOfTheRunSurvives) {
  const std::string token = UniqueToken();
  const pid_t parent = fork();
  if (parent == 0) {
    ProcessSpec spec = Spec({kHelper, "spin", token});
    spec.limits.wall_seconds = 30;
    NewSandboxRunner()->Run(spec);
    _exit(0);
  }
  ASSERT_GT(parent, 0);
  bool started = false;
  for (int i = 0; i < 500 && !started; ++i) {
    started = !ProcessesWith(token).empty();
    if (!started) usleep(10000);
  }
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  ASSERT_TRUE(started) << "the sandboxed spinner never ran";
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = ProcessesWith(token).empty();
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "the sandbox outlived its parent";
  while (waitpid(-1, nullptr, WNOHANG) > 0) {  // orphans re-parented here (subreaper)
  }
}

TEST_F(SandboxTest, GivenRootItRunsTheChildAsNobodyInAWritableDirectory) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: there is no user to switch from";
  ProcessResult r = Run(Spec({"sh", "-c", "id -u; id -G; echo data > f"}));
  EXPECT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  EXPECT_EQ(r.out, "65534\n65534\n");
  struct stat st = {};
  ASSERT_EQ(stat((dir_.path() / "f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
}

TEST_F(SandboxTest, GivenOwnUidEachRunAtOnceGetsAnIdOfItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: there is no user to switch from";
  constexpr int kRuns = 4;
  TempDir dirs[kRuns];
  std::vector<ProcessResult> results(kRuns);
  std::vector<std::thread> threads;
  for (int k = 0; k < kRuns; ++k) {
    threads.emplace_back([&, k] {
      ProcessSpec spec = MakeSpec({"sh", "-c", "id -u; id -g; sleep 0.5; echo data > f"}, dirs[k].path());
      spec.limits.own_uid = true;
      results[k] = Run(spec);
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint32_t> ids;
  for (int k = 0; k < kRuns; ++k) {
    const ProcessResult& r = results[k];
    ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.err << Gaps(r);
    EXPECT_EQ(r.out, std::to_string(r.uid) + "\n65534\n");
    EXPECT_GE(r.uid, 1879048192u);
    ids.insert(r.uid);
    struct stat st = {};
    ASSERT_EQ(stat((dirs[k].path() / "f").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, r.uid);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kRuns)) << "runs at the same time shared an id";
  // Without own_uid the run is nobody, as before.
  ProcessResult plain = Run(Spec({"id", "-u"}));
  EXPECT_EQ(plain.out, "65534\n");
  EXPECT_EQ(plain.uid, kNobody);
}

// RLIMIT_NPROC counts the tasks of a user id. A neighbour that started first, as the same id,
// got its limit from a smaller count; a fork bomb then takes every slot up to its own limit
// and the neighbour can start no thread (an honest candidate judged runtime_error). With ids
// of their own, the neighbour keeps its whole allowance.
TEST_F(SandboxTest, GivenAForkBombBesideARunWithAnIdOfItsOwnTheNeighbourStillStartsItsThreads) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: without a user switch the runs share the caller's count";
  TempDir other;
  ProcessResult neighbour;
  std::thread t([&] {
    ProcessSpec spec = MakeSpec({"sh", "-c", std::string("sleep 1.5; exec ") + kHelper + " threads 12"}, other.path());
    spec.limits.own_uid = true;
    spec.limits.max_processes = 16;
    neighbour = Run(spec);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ProcessSpec bomb = Spec({kHelper, "forkbomb"});
  bomb.limits.own_uid = true;
  bomb.limits.max_processes = 16;
  bomb.limits.wall_seconds = 3;
  ProcessResult b = Run(bomb);
  t.join();
  EXPECT_EQ(b.end, End::kTimedOut) << b.Describe();
  ASSERT_TRUE(neighbour.Succeeded()) << neighbour.Describe() << neighbour.err;
  EXPECT_EQ(neighbour.out, "12\n") << "threads the neighbour started";
  EXPECT_NE(neighbour.uid, b.uid);
}

TEST_F(SandboxTest, GivenRootAndAProgramInAPrivateFolderItRunsAStagedCopyAsNobody) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: nothing is staged for an unprivileged caller";
  TempDir secret;  // mkdtemp makes it 0700: nobody cannot enter it
  ASSERT_EQ(chmod(secret.path().c_str(), 0700), 0);
  const fs::path program = secret.path() / "helper";
  fs::copy_file(kHelper, program);
  ProcessResult r = Run(Spec({program.string(), "threads", "0"}));
  EXPECT_TRUE(r.Succeeded()) << r.Describe() << r.err;
  // The same program again reuses the staged copy; a changed one gets a new copy.
  ProcessResult again = Run(Spec({program.string(), "threads", "0"}));
  EXPECT_TRUE(again.Succeeded()) << again.Describe() << again.err;
}

// Runs as nobody (in a forked test process) what the root tests check for root: the
// unprivileged path (user namespace, RLIMIT_NPROC). Returns 0, or which check failed.
int CheckUnprivilegedPath(const fs::path& cwd, int port) {
  if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) return 10;
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  for (const std::string& line : DescribeIsolation())
    fprintf(stderr, "  [as nobody] %s\n", line.c_str());
  ProcessSpec spec = MakeSpec({VisibleHelper().string(), "connect", std::to_string(port)}, cwd);
  ProcessResult r = runner->Run(spec);
  if (r.network_private != NetworkIsPrivateHere()) return 11;
  if (r.network_private && r.Succeeded()) return 12;  // connected despite a private network
  spec = MakeSpec({VisibleHelper().string(), "forkbomb"}, cwd);
  spec.limits.max_processes = 16;
  spec.limits.wall_seconds = 2;
  r = runner->Run(spec);
  if (r.end != End::kTimedOut) {
    fprintf(stderr, "  [as nobody] fork bomb: %s %s\n", r.Describe().c_str(), r.err.c_str());
    return 13;
  }
  if (std::count(r.out.begin(), r.out.end(), '+') > 16) return 14;
  if (!GroupMembers(r.pid).empty()) return 15;
  const std::string token = UniqueToken();
  r = runner->Run(MakeSpec({VisibleHelper().string(), "escape", token}, cwd));
  if (!r.Succeeded()) return 16;
  if (r.pid_namespace && !ProcessesWith(token).empty()) return 17;
  // The read-only folder is the helper's copy, which the test made world-readable: the build
  // folder may sit below a folder `nobody` cannot enter (a clone in `mktemp -d`, mode 0700), and
  // then it is not in the view at all (ENOENT, not EROFS).
  r = runner->Run(MakeSpec({VisibleHelper().string(), "write", "inside", "/tmp/" + token,
                            (VisibleHelper().parent_path() / token).string()},
                           cwd));
  if (r.private_fs && r.out.find(": EROFS") == std::string::npos) {
    fprintf(stderr, "  [as nobody] write: %s out=[%s] err=[%s]\n", r.Describe().c_str(), r.out.c_str(), r.err.c_str());
    return 18;
  }
  if (fs::exists("/tmp/" + token)) return 19;
  return 0;
}

TEST(SandboxUnprivilegedTest, GivenANonRootCallerItIsolatesAndContainsAsWell) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become an unprivileged user for the test";
  VisibleHelper();  // copied while still root
  TempDir dir;
  ASSERT_EQ(chown(dir.path().c_str(), kNobody, kNobody), 0);
  int port = 0;
  int listener = ListenOnLoopback(&port);
  ASSERT_GE(listener, 0);
  pid_t pid = fork();
  if (pid == 0) _exit(CheckUnprivilegedPath(dir.path(), port));
  ASSERT_GT(pid, 0);
  int status = -1;
  for (int i = 0; i < 3000 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(10000);
  close(listener);
  if (status == -1) kill(pid, SIGKILL);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed check (see CheckUnprivilegedPath)";
}

TEST(DescribeIsolationTest, ItNamesEveryMechanism) {
  std::vector<std::string> lines = DescribeIsolation();
  for (const std::string& line : lines) fprintf(stderr, "  %s\n", line.c_str());
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[0].rfind("network: ", 0), 0u);
  EXPECT_EQ(lines[1].rfind("user: ", 0), 0u);
  EXPECT_EQ(lines[2].rfind("processes: ", 0), 0u);
  EXPECT_EQ(lines[3].rfind("filesystem: ", 0), 0u);
  EXPECT_EQ(lines[4].rfind("seccomp: ", 0), 0u);
}

// --- Describe(). ------------------------------------------------------------------------------

TEST(DescribeTest, ItSaysHowTheChildEnded) {
  ProcessResult r;
  r.end = End::kSignaled;
  r.signal = SIGXFSZ;
  r.limits.file_size_bytes = 1 << 20;
  EXPECT_EQ(r.Describe(),
            "killed by signal 25 (SIGXFSZ: File size limit exceeded): file size limit of 1 MB "
            "reached");
  r.end = End::kOutputFlood;
  r.out_total = 70 << 20;
  r.limits.output_kill_bytes = 64 << 20;
  EXPECT_EQ(r.Describe(), "killed: wrote 70 MB of output (limit 64 MB)");
  r.end = End::kTimedOut;
  r.limits.wall_seconds = 10;
  EXPECT_EQ(r.Describe(), "timed out after 10.0 s");
  r.end = End::kStartFailed;
  r.start_error = "cannot run 'x': No such file or directory";
  EXPECT_EQ(r.Describe(), "could not start: cannot run 'x': No such file or directory");
}

}  // namespace
}  // namespace kforge
