// What a compile_error's `compiler_output` shows (docs/verdict-schema.md): the compiler's first
// errors within a bounded size, at locations that name the candidate's own files and lines.
// One policy for every toolchain: g++ and nvcc (eval/compiler.cc) and the kernel builds that
// happen while a candidate runs (OpenCL's clBuildProgram, reported by the worker).
//
// Pure functions of their arguments. Thread-safety: safe to call from any thread.
#ifndef KFORGE_EVAL_COMPILE_LOG_H_
#define KFORGE_EVAL_COMPILE_LOG_H_

#include <string>
#include <vector>

namespace kforge {

// The bounds of a trimmed log.
struct LogBounds {
  size_t max_lines = 60;
  size_t max_bytes = 16 << 10;
  size_t max_errors = 10;  // error diagnostics kept; the ones after them are mostly follow-ups
};

// The head of `log`: whole lines from the start, stopping before the line that would pass
// `bounds` (an error diagnostic past max_errors counts as passing them). What was cut is said
// on a last line, "[... 40 more lines (7 errors) cut ...]". A log within the bounds is returned
// as it is.
std::string TrimCompilerLog(const std::string& log, const LogBounds& bounds = {});

// `log` with the file name the compiler was given (`compiled_name`, "candidate.cc", also behind
// a folder: "/tmp/kforge-compile-x/candidate.cc") replaced by `candidate_name` wherever it
// names a location ("candidate.cc:12:5", "candidate.cu(12)", "In file included from ...").
std::string RenameSourceInLog(const std::string& log, const std::string& compiled_name,
                              const std::string& candidate_name);

// One of the candidate's files, by the name a log should show ("tiled.cpp", "tiled.cl").
struct CandidateFile {
  std::string name;
  std::string text;
};

// Where a kernel source built at run time lies in the candidate's files.
struct KernelSourceMap {
  std::string file;  // the file that holds it; empty when it was found in none
  std::vector<int>
      lines;  // lines[k]: the line of `file` holding the source's line k + 1; 0: unknown
};

// Finds `source` in `files`: verbatim (a sibling .cl file, a raw string literal), else line by
// line in order (a string spelled as one "...\n" literal per line); the file with the most
// lines found wins. Sources assembled at run time (snprintf, macros) map partly or not at all.
KernelSourceMap LocateKernelSource(const std::string& source,
                                   const std::vector<CandidateFile>& files);

// A driver's build log for `source` (OpenCL's clBuildProgram) written like g++'s diagnostics:
// every location in the kernel (PoCL's "error: /home/u/.cache/pocl/kcache/tempfile_x.cl:3:16:
// msg", NVIDIA's "<kernel>:3:16: error: msg", AMD's "/tmp/OCL1T0.cl:3:16: error: msg") becomes
// "file:line:column: error: msg" at the candidate's own line through `map` ("kernel source
// line 3, column 16" where the map does not know it), and every error and warning is followed
// by the offending source line and a caret, unless the driver printed them itself. No name of
// the driver's temporary file is left. Locations in the driver's own headers (*.h) are kept.
std::string MapKernelBuildLog(const std::string& log, const std::string& source,
                              const KernelSourceMap& map);

}  // namespace kforge

#endif  // KFORGE_EVAL_COMPILE_LOG_H_
