// Specifications of the sandbox's user id leases (base/sandbox_uids.h).
#include "base/sandbox_uids.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;

class UidLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kforge-uids-test-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path lock() const { return dir_ / "uids.lock"; }
  // An unused part of the product's range, so that no product run holds one of these ids.
  UidRange Range(uint32_t count) const { return {1879048192u + 4096u + 97u, count}; }

  fs::path dir_;
};

TEST_F(UidLeaseTest, GivenAFreeRangeEachLeaseGetsAnotherIdUntilNoneIsLeft) {
  std::string error;
  std::vector<UidLease> leases;
  std::set<uid_t> ids;
  for (int k = 0; k < 3; ++k) {
    leases.push_back(LeaseSandboxUid(lock(), Range(3), &error));
    ASSERT_TRUE(leases.back().held()) << error;
    ids.insert(leases.back().uid());
  }
  EXPECT_EQ(ids.size(), 3u);
  for (uid_t id : ids) {
    EXPECT_GE(id, Range(3).first);
    EXPECT_LT(id, Range(3).first + 3);
  }
  UidLease none = LeaseSandboxUid(lock(), Range(3), &error);
  EXPECT_FALSE(none.held());
  EXPECT_NE(error.find("every id"), std::string::npos) << error;
  // A lease that ends gives its id back.
  const uid_t freed = leases[1].uid();
  leases[1] = UidLease();
  error.clear();
  UidLease again = LeaseSandboxUid(lock(), Range(3), &error);
  ASSERT_TRUE(again.held()) << error;
  EXPECT_EQ(again.uid(), freed);
}

// A forked process that runs `step` (true: it worked), says so, and then waits to be killed.
// Returns its pid, or -1 when the step failed.
template <typename Step>
pid_t PausedAfter(Step step) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    const char c = step() ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  const bool ok = pid > 0 && read(ready[0], &c, 1) == 1 && c == 'y';
  close(ready[0]);
  close(ready[1]);
  if (!ok && pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  return ok ? pid : -1;
}

TEST_F(UidLeaseTest, GivenALeaseHeldByAnotherProcessItIsNotLeasedAgain) {
  const pid_t pid = PausedAfter([&] {
    std::string error;
    static UidLease lease;  // held until the process is killed
    lease = LeaseSandboxUid(lock(), Range(1), &error);
    return lease.held();
  });
  ASSERT_GT(pid, 0) << "the other process could not lease the id";
  std::string error;
  EXPECT_FALSE(LeaseSandboxUid(lock(), Range(1), &error).held());
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // The holder died: its lease went with it.
  error.clear();
  EXPECT_TRUE(LeaseSandboxUid(lock(), Range(1), &error).held()) << error;
}

TEST_F(UidLeaseTest, GivenAProcessRunningAsAnIdThatIdIsSkipped) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: cannot start a process as another user";
  const uid_t busy = Range(1).first;
  const pid_t pid = PausedAfter([&] { return setresuid(busy, busy, busy) == 0; });
  ASSERT_GT(pid, 0) << "could not start a process as " << busy;
  std::string error;
  EXPECT_FALSE(LeaseSandboxUid(lock(), Range(1), &error).held());
  EXPECT_NE(error.find("in use"), std::string::npos) << error;
  UidLease next = LeaseSandboxUid(lock(), Range(2), &error);
  ASSERT_TRUE(next.held()) << error;
  EXPECT_EQ(next.uid(), busy + 1);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST_F(UidLeaseTest, GivenALockFileOthersCanOpenItRefusesIt) {
  { std::ofstream(lock()) << ""; }
  ASSERT_EQ(chmod(lock().c_str(), 0644), 0);
  std::string error;
  EXPECT_FALSE(LeaseSandboxUid(lock(), Range(2), &error).held());
  EXPECT_NE(error.find("0600"), std::string::npos) << error;
}

TEST(SandboxUidRangeTest, ItReadsTheEnvironmentAndRefusesNonsense) {
  std::string error;
  setenv("KFORGE_SANDBOX_UIDS", "200000:64", 1);
  UidRange r = SandboxUidRange(&error);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(r.first, 200000u);
  EXPECT_EQ(r.count, 64u);
  for (const char* bad : {"0:10", "5", "5:", "x:3", "100:0", "2147483000:1000"}) {
    error.clear();
    setenv("KFORGE_SANDBOX_UIDS", bad, 1);
    r = SandboxUidRange(&error);
    EXPECT_NE(error.find("FIRST:COUNT"), std::string::npos) << bad;
    EXPECT_EQ(r.first, UidRange().first) << bad;
  }
  unsetenv("KFORGE_SANDBOX_UIDS");
}

}  // namespace
}  // namespace kforge
