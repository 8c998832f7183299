// Small file and hashing helpers. Failures are Statuses that name the path.
// Thread-safety: free functions; safe to call concurrently on different paths.
#ifndef KFORGE_BASE_FILES_H_
#define KFORGE_BASE_FILES_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "kforge/status.h"

namespace kforge {

Result<std::string> ReadFile(const std::filesystem::path& path);
// Reading a file that a sandboxed process could have written or replaced (a job folder's):
// a symbolic link is not followed (O_NOFOLLOW: a candidate's link to /dev/zero made the judge
// read until it ran out of memory), anything but a regular file is refused without waiting on
// it (O_NONBLOCK: a FIFO), and a file over `max_bytes` is refused before it is read.
Result<std::string> ReadUntrustedFile(const std::filesystem::path& path, uint64_t max_bytes);
// The same for a file of exactly `bytes` bytes, read into `out` (a widened reference's own
// memory: no buffer of the file's to allocate, fault in and copy again); another size is an
// error.
Status ReadUntrustedFileInto(const std::filesystem::path& path, void* out, size_t bytes);
// The size of a regular file, the link itself not followed; an error for anything else.
Result<uint64_t> UntrustedFileSize(const std::filesystem::path& path);

// What a folder that a hostile job writes into holds, for a bound on it (Limits::folder_bytes):
// every file, folder and link below `dir` counted at its allocated size and at least one
// kFootprintEntryBytes, so that a flood of empty files counts (each is an inode in RAM on a
// tmpfs). Walked with openat and fstatat, never following a link, at most kFootprintDepth
// folders deep (a deeper folder counts as over). Stops as soon as the count passes
// `stop_above` and returns what it had counted then; a folder that cannot be opened counts as
// its entry alone. `dir` itself must be a folder (0 when it is not).
inline constexpr uint64_t kFootprintEntryBytes = 4096;
inline constexpr int kFootprintDepth = 16;
uint64_t FolderFootprint(const std::filesystem::path& dir, uint64_t stop_above);
// The first line of a small text file (sysfs, /proc), without its newline; "" when it cannot
// be read.
std::string ReadFirstLine(const std::filesystem::path& path);
// Writes to a temporary file beside `path` and renames it: readers never see half a file.
Status WriteFileAtomic(const std::filesystem::path& path, const std::string& data);
Status WriteFile(const std::filesystem::path& path, const void* data, size_t bytes);

// 64-bit XXH3 of bytes, as 16 hex digits.
std::string HashHex(const void* data, size_t bytes);
inline std::string HashHex(const std::string& s) { return HashHex(s.data(), s.size()); }
// 128-bit XXH3 as 32 hex digits, for cache keys and the trusted store's own files.
std::string Hash128Hex(const void* data, size_t bytes);
inline std::string Hash128Hex(const std::string& s) { return Hash128Hex(s.data(), s.size()); }

// SHA-256, lowercase hex: for what a hostile process might try to forge (the workers' result
// files), where the fast non-cryptographic hashes above are not enough.
std::string Sha256Hex(const void* data, size_t bytes);
inline std::string Sha256Hex(const std::string& s) { return Sha256Hex(s.data(), s.size()); }
// The digest of an output file in a worker's job folder (result.json's "files"), from both
// workers: SHA-256 over the SHA-256 of each kDigestPieceBytes piece of the bytes, in order (of
// nothing when there are none), the pieces hashed on all cores. As hard to forge as SHA-256; a
// 64 MiB output hashes in a few milliseconds on a many-core host instead of 40. 1 MiB pieces:
// an 8 MiB output (gelu's) is eight pieces, hashed in 1.6 ms on the H200's host instead of the
// 10 ms one SHA-256 of it takes there (python/kforge_timing_probe.py).
inline constexpr size_t kDigestPieceBytes = size_t{1} << 20;
std::string PieceDigestHex(const void* data, size_t bytes);
inline std::string PieceDigestHex(const std::string& s) { return PieceDigestHex(s.data(), s.size()); }
// Writes `bytes` to `path` (created, or truncated) and returns their PieceDigestHex, in one pass
// on all cores: each piece hashed and then written at its offset while it is still in cache.
// A 32 MiB output into /dev/shm on the 2-core VM: 19 ms, against 26-30 ms hashed and then written.
Result<std::string> WritePieceDigested(const std::filesystem::path& path, const void* data, size_t bytes);

// A fresh directory under $TMPDIR (or /tmp): kforge-<tag>-XXXXXX.
Result<std::filesystem::path> MakeTempDir(const std::string& tag);
// A fresh directory for a worker's job folder, which will hold about `bytes` (its inputs and
// the outputs the worker writes back): in $KFORGE_JOB_DIR when set; else in /dev/shm when that
// is a RAM file system with room for twice `bytes` and 256 MiB besides; else as MakeTempDir.
// Tensors handed through RAM skip the disk file system's write path (on the 2-core VM that path
// was a quarter of the orchestrator's time in a judgement of gelu).
Result<std::filesystem::path> MakeJobDir(const std::string& tag, uint64_t bytes);
// A fresh folder <parent>/<tag>-XXXXXX (mode 0700; never one that already existed).
Result<std::filesystem::path> MakeDirIn(const std::filesystem::path& parent, const std::string& tag);
// MakeTempDir, and the directory and all below it removed when the process exits normally
// (std::atexit): scratch space such as a test suite's private cache, which kept reference runs
// make gigabytes large. Unless $KFORGE_KEEP_TEMP is set.
Result<std::filesystem::path> MakeScratchDir(const std::string& tag);

// kforge's cache root: $KFORGE_CACHE_DIR, else /var/cache/kforge when running as root (so the
// unprivileged sandbox user can traverse it), else $XDG_CACHE_HOME/kforge or ~/.cache/kforge.
// Created on first use.
Result<std::filesystem::path> CacheDir();

// The last `max_lines` lines of `text`, at most `max_bytes` bytes, marking what was cut.
std::string TailLines(const std::string& text, size_t max_lines, size_t max_bytes);

}  // namespace kforge

#endif  // KFORGE_BASE_FILES_H_

namespace kforge {
// Folder of the running executable (from /proc/self/exe).
std::filesystem::path ExecutableDir();
// Folder of data shipped with kforge (problems/, prompts/, include/): $KFORGE_HOME, else
// <exe>/../share/kforge when installed, else the source tree this binary was built from.
std::filesystem::path DataDir();

// The nvcc kforge compiles CUDA candidates with: $KFORGE_NVCC, else nvcc on PATH, else
// /usr/local/cuda/bin/nvcc; "" when none is executable. (CUPTI is looked for beside it.)
std::string FindNvcc();
// Called first thing by kforge, kforge-worker and the judge's benchmark: allocations up to
// 32 MB come from the heap and freed memory is kept (up to 256 MB), so the judge's tensors,
// allocated and freed over and over (8 MB outputs read back, inputs drawn), reuse pages instead
// of faulting in fresh ones each time, which on a VM cost more than the copies (a gelu
// verdict's output comparison 0.91 -> 0.56 s on the 2-core CI VM).
void TuneHeapForTensors();

}  // namespace kforge
