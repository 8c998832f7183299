// kforge-nvcc: nvcc's own steps for one .cu file, with the host front end and the device
// compile run side by side instead of one after the other.
//
// nvcc compiles a .cu in two chains that meet only at the end: the host chain (preprocess,
// cudafe++) and the device chain (preprocess, cicc, ptxas, fatbinary); the host compile of
// cudafe++'s output then includes the device chain's fatbinary and stub. nvcc runs them in
// sequence; the only thing the device chain takes from the host chain is the module id, which
// cudafe++ writes (--gen_module_id_file) and cicc reads. Written beforehand (ModuleIdFor) and
// read by both, the chains are independent. A load_inline source that includes PyTorch's
// headers spends about a third of its build in cudafe++ and another third in cicc
// (docs/python-worker.md, "load_inline builds"), so the two side by side take a third off.
//
// The plan comes from `nvcc --dryrun`, run with TMPDIR at a private folder so that every
// intermediate file nvcc names lies in it; a dry run this does not recognise in every step
// (relocatable device code, several sources, -keep, an unknown tool) gets no plan, and the
// caller runs nvcc itself. Pure: no process is started here (nvcc_main.cc runs the plan).
#ifndef KFORGE_BACKEND_CUDA_NVCC_LANES_H_
#define KFORGE_BACKEND_CUDA_NVCC_LANES_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kforge/status.h"

namespace kforge {

// One step of nvcc's: its shell command line and its place in nvcc's own order.
struct NvccStep {
  int order = 0;
  std::string line;
};

struct NvccPlan {
  // The dry run's variables (PATH, CICC_PATH, NVVMIR_LIBRARY_DIR, ...), set for every step.
  std::vector<std::pair<std::string, std::string>> env;
  // Command lines as nvcc would run them (`rm` made `rm -f`: nvcc ignores a missing file); none
  // holds a shell operator, so each runs as `exec LINE` under /bin/sh.
  std::vector<NvccStep> host;    // the host preprocess, then cudafe++ (reading the module id)
  std::vector<NvccStep> device;  // device preprocess, cicc, ptxas, fatbinary, in nvcc's order
  std::vector<NvccStep> final;   // the host compile and what follows (a link with -shared)
  std::string module_id_file;    // written before both chains start
  std::string source_name;       // --orig_src_file_name ("cuda.cu")
  std::string source_path;       // --orig_src_path_name
  // nvcc's "-- Filter Dependencies -- > FILE" (--dependency-output): the file as the dry run
  // prints it (unquoted), the rule's target, and the preprocessed files whose line markers name
  // the dependencies.
  std::string depfile;
  std::string dep_target;
  std::vector<std::string> preprocessed;
};

// Arguments with which kforge-nvcc leaves everything to nvcc, without a dry run: those that do
// not compile one source to an object or library (-E, -M, --version, --dryrun, ...), those that
// keep intermediate files, relocatable device code (whose module id links translation units),
// and options files (which could hold any of these).
bool NvccArgsNeedPlainNvcc(const std::vector<std::string>& args);

// The plan for `nvcc --dryrun` stderr `dryrun` whose intermediate files lie below `tmp_dir`;
// `output` is nvcc's -o (the dependency rule's target). An error says which step it did not
// recognise.
Result<NvccPlan> PlanNvccLanes(std::string_view dryrun, const std::string& tmp_dir, const std::string& output);

// A module id in nvcc's form (_<8 hex>_<length>_<name>_<8 hex>, name the source's file name with
// every other character than letters, digits and '_' made '_'), from a digest of `seed` (the
// source's bytes, path and arguments): two sources never share one.
std::string ModuleIdFor(const std::string& source_name, const std::string& seed);

// The line markers of preprocessed texts (# <line> "<file>" ...) as a Makefile rule for
// `target`: every file once, in order of first appearance, without <built-in> and the like.
std::string DepfileFromPreprocessed(const std::string& target, const std::vector<std::string>& texts);

// Shell words of a command line as /bin/sh would split it (quotes and backslashes removed,
// nothing expanded); for reading the dry run's steps, never for running them.
std::vector<std::string> ShellWords(std::string_view line);

}  // namespace kforge

#endif  // KFORGE_BACKEND_CUDA_NVCC_LANES_H_
