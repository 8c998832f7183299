#include "base/files.h"
#include "base/parallel.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kforge {
namespace {

namespace fs = std::filesystem;

TEST(ParallelForTest, RunsEveryIndexOnceWhateverTheThreadCount) {
  for (size_t threads : {size_t{1}, size_t{2}, size_t{3}, size_t{64}}) {
    std::vector<std::atomic<int>> seen(1000);
    ParallelFor(seen.size(), [&](size_t i) { seen[i].fetch_add(1); }, threads);
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "index " << i << ", " << threads << " threads";
  }
  int calls = 0;
  ParallelFor(0, [&](size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<fs::path> d = MakeTempDir("files-test");
    ASSERT_TRUE(d.ok());
    dir_ = *d;
  }
  void TearDown() override {
    unsetenv("KFORGE_JOB_DIR");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

// Sizes around the read's buffer: empty, one byte, a page, and a tensor's worth.
// PieceDigestHex by its definition, from whole-buffer SHA-256s of the pieces (the Python worker's
// FileSink must agree: kforge_pyhash_test.py checks the same definition there).
std::string DigestByDefinition(const std::string& bytes) {
  std::string concatenated;
  for (size_t at = 0; at < bytes.size(); at += kDigestPieceBytes) {
    std::string hex = Sha256Hex(bytes.substr(at, kDigestPieceBytes));
    for (size_t i = 0; i < hex.size(); i += 2) concatenated += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return Sha256Hex(concatenated);
}

TEST(PieceDigestTest, IsTheSha256OfThePiecesSha256sInOrder) {
  std::string bytes(2 * kDigestPieceBytes + 12345, '\0');
  std::mt19937_64 rng(7);
  for (char& c : bytes) c = static_cast<char>(rng());
  for (size_t n : {size_t{0}, size_t{1}, kDigestPieceBytes - 1, kDigestPieceBytes, kDigestPieceBytes + 1, bytes.size()}) {
    std::string part = bytes.substr(0, n);
    EXPECT_EQ(PieceDigestHex(part), DigestByDefinition(part)) << n;
  }
  EXPECT_EQ(PieceDigestHex(std::string()), Sha256Hex(std::string()));  // no pieces: the SHA-256 of nothing
  std::string changed = bytes;
  changed[kDigestPieceBytes + 7] ^= 1;
  EXPECT_NE(PieceDigestHex(changed), PieceDigestHex(bytes));
  // Two pieces swapped are another file.
  std::string swapped = bytes.substr(kDigestPieceBytes, kDigestPieceBytes) + bytes.substr(0, kDigestPieceBytes);
  EXPECT_NE(PieceDigestHex(swapped), PieceDigestHex(bytes.substr(0, 2 * kDigestPieceBytes)));
}

TEST_F(FilesTest, WritePieceDigestedWritesTheBytesAndReturnsTheirPieceDigest) {
  std::string bytes(3 * kDigestPieceBytes + 777, '\0');
  std::mt19937_64 rng(11);
  for (char& c : bytes) c = static_cast<char>(rng());
  const fs::path path = dir_ / "out.bin";
  for (size_t n : {bytes.size(), size_t{0}, size_t{1}, kDigestPieceBytes, kDigestPieceBytes + 1}) {  // longest first: then truncated
    const std::string part = bytes.substr(0, n);
    Result<std::string> digest = WritePieceDigested(path, part.data(), part.size());
    ASSERT_TRUE(digest.ok()) << digest.status().message();
    EXPECT_EQ(*digest, PieceDigestHex(part)) << n;
    EXPECT_EQ(ReadFile(path).value(), part) << n;
  }
  Result<std::string> nowhere = WritePieceDigested(dir_ / "no" / "such" / "folder", bytes.data(), 10);
  ASSERT_FALSE(nowhere.ok());
  EXPECT_NE(nowhere.status().message().find("cannot write"), std::string::npos) << nowhere.status().message();
}

TEST_F(FilesTest, ReadFileReturnsExactlyTheFilesBytes) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{3} << 20}) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 131 + 7);
    const fs::path f = dir_ / ("f" + std::to_string(n));
    ASSERT_TRUE(WriteFile(f, bytes.data(), bytes.size()).ok());
    Result<std::string> got = ReadFile(f);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, bytes) << n << " bytes";
  }
  EXPECT_FALSE(ReadFile(dir_ / "missing").ok());
}

TEST_F(FilesTest, ReadUntrustedFileIntoFillsTheBufferAndRefusesAnotherSize) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{4097}, size_t{3} << 20}) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 131 + 7);
    const fs::path f = dir_ / ("g" + std::to_string(n));
    ASSERT_TRUE(WriteFile(f, bytes.data(), bytes.size()).ok());
    std::string into(n, 'x');
    ASSERT_TRUE(ReadUntrustedFileInto(f, into.data(), n).ok()) << n;
    EXPECT_EQ(into, bytes) << n << " bytes";
    EXPECT_EQ(ReadUntrustedFile(f, n).value(), bytes);
    EXPECT_EQ(UntrustedFileSize(f).value(), n);
    std::string other(n + 1, 'x');
    Status s = ReadUntrustedFileInto(f, other.data(), n + 1);
    EXPECT_NE(s.message().find("holds " + std::to_string(n) + " bytes, not " + std::to_string(n + 1)), std::string::npos) << s.message();
    if (n > 0) {
      EXPECT_FALSE(ReadUntrustedFileInto(f, other.data(), n - 1).ok());
      EXPECT_FALSE(ReadUntrustedFile(f, n - 1).ok());  // over the cap: refused before it is read
    }
  }
  std::string none;
  EXPECT_EQ(ReadUntrustedFileInto(dir_ / "missing", none.data(), 0).code(), StatusCode::kNotFound);
}

// What a sandboxed process may leave in a job folder in place of an output: a link to an endless
// device or to a file it could not read itself, a FIFO no one writes. None is followed, waited on
// or read.
TEST_F(FilesTest, ReadUntrustedFileRefusesLinksFifosAndDevicesWithoutWaiting) {
  const fs::path real = dir_ / "real";
  ASSERT_TRUE(WriteFileAtomic(real, "1234").ok());
  fs::create_symlink("/dev/zero", dir_ / "zero");
  fs::create_symlink(real, dir_ / "link");
  ASSERT_EQ(mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  for (const char* name : {"zero", "link", "fifo"}) {
    Result<std::string> r = ReadUntrustedFile(dir_ / name, 1 << 20);
    EXPECT_FALSE(r.ok()) << name;
    std::string four(4, 'x');
    EXPECT_FALSE(ReadUntrustedFileInto(dir_ / name, four.data(), 4).ok()) << name;
    EXPECT_FALSE(UntrustedFileSize(dir_ / name).ok()) << name;
  }
  EXPECT_NE(ReadUntrustedFile(dir_ / "link", 16).status().message().find("symbolic link"), std::string::npos);
  EXPECT_NE(ReadUntrustedFile(dir_ / "fifo", 16).status().message().find("not a regular file"), std::string::npos);
  EXPECT_FALSE(ReadUntrustedFile("/dev/zero", 16).ok());
}

TEST_F(FilesTest, ReadFirstLineStopsAtTheNewlineAndIsEmptyForAMissingFile) {
  const fs::path f = dir_ / "size";
  ASSERT_TRUE(WriteFileAtomic(f, "2048K\nsecond\n").ok());
  EXPECT_EQ(ReadFirstLine(f), "2048K");
  EXPECT_EQ(ReadFirstLine(dir_ / "missing"), "");
}

TEST_F(FilesTest, AJobFolderGoesWhereKforgeJobDirSays) {
  setenv("KFORGE_JOB_DIR", dir_.c_str(), 1);
  Result<fs::path> job = MakeJobDir("job", 1 << 20);
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->parent_path(), dir_);
  EXPECT_TRUE(fs::is_directory(*job));
  EXPECT_EQ(fs::status(*job).permissions() & fs::perms::all, fs::perms::owner_all);
}

// In RAM when /dev/shm is a RAM file system with room; never there for a job larger than it.
TEST_F(FilesTest, AJobFolderIsInRamOnlyWhenItFits) {
  struct statfs info {};
  const bool ram = statfs("/dev/shm", &info) == 0 && info.f_type == TMPFS_MAGIC && access("/dev/shm", W_OK) == 0;
  Result<fs::path> small = MakeJobDir("job", 1 << 20);
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(small->parent_path() == "/dev/shm", ram) << *small;
  Result<fs::path> huge = MakeJobDir("job", uint64_t{1} << 50);
  ASSERT_TRUE(huge.ok()) << huge.status().message();
  EXPECT_NE(huge->parent_path(), "/dev/shm") << *huge;
  fs::remove_all(*small);
  fs::remove_all(*huge);
}

TEST(FolderFootprintTest, CountsEveryEntryAtAPageOrMoreAndFollowsNoLink) {
  Result<fs::path> dir = MakeTempDir("footprint");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(FolderFootprint(*dir, UINT64_MAX), 0u);
  { std::ofstream(*dir / "small") << "x"; }
  fs::create_directories(*dir / "a" / "b");
  { std::ofstream(*dir / "a" / "b" / "big") << std::string(1 << 20, 'y'); }
  fs::create_symlink("/usr", *dir / "link");
  const uint64_t total = FolderFootprint(*dir, UINT64_MAX);
  // small, a, b, link: a page each; big: its 1 MiB (a file system may allocate a little more).
  EXPECT_GE(total, (1u << 20) + 4 * kFootprintEntryBytes);
  EXPECT_LT(total, (1u << 20) + 64 * kFootprintEntryBytes);
  // It stops once past the bound: it never walks the rest of a flood.
  EXPECT_GT(FolderFootprint(*dir, 100), 100u);
  EXPECT_LE(FolderFootprint(*dir, 100), (1u << 20) + 2 * kFootprintEntryBytes + 100);
  // A folder deeper than any job needs counts as over the bound.
  fs::path deep = *dir;
  for (int i = 0; i < kFootprintDepth + 1; ++i) deep /= "d";
  fs::create_directories(deep);
  EXPECT_GT(FolderFootprint(*dir, 1u << 30), 1u << 30);
  EXPECT_EQ(FolderFootprint(*dir / "link", UINT64_MAX), 0u) << "a link is not a folder to walk";
  EXPECT_EQ(FolderFootprint(*dir / "small", UINT64_MAX), 0u);
  fs::remove_all(*dir);
}

}  // namespace
}  // namespace kforge
