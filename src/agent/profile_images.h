// Profile images for the performance analyst (docs/loop.md, "Profile images"): the roofline, with
// every correct attempt of the run as a point under the achievable (measured) and theoretical
// roofs, and the current best's device time per kernel from its verdict's kernel record. Drawn
// by gnuplot (Debian's gnuplot-nox) as PNG files.
//
// Three steps, each callable alone: charts from stored verdicts (pure) -> a gnuplot job, its
// script and data files (pure) -> RenderPng, which runs gnuplot through a ProcessRunner in a
// fresh folder (the one side effect; tests pass a fake runner). MakeProfileImages does all three
// and saves the files. Nothing here fails a run: a chart that cannot be drawn is a line in
// ProfileImages::left_out, and gnuplot missing is ProfileImages::gnuplot_missing.
//
// Strings from candidates (kernel names) go into data files, never into the script, and lose
// quotes, backslashes and non-ASCII bytes: gnuplot evaluates its script, not its data.
//
// Thread-safety: pure functions, except RenderPng and MakeProfileImages, which are safe to call
// from several threads when the runner is (each job has its own folder).
#ifndef KFORGE_AGENT_PROFILE_IMAGES_H_
#define KFORGE_AGENT_PROFILE_IMAGES_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/subprocess.h"
#include "kforge/status.h"

namespace kforge {

// A correct attempt as the roofline places it: arithmetic intensity flops/bytes on x, achieved
// flops / median on y.
struct AttemptPoint {
  int64_t number = 0;
  bool seed = false;
  double median_ms = 0, flops = 0, bytes = 0;
};

struct RooflineChart {
  std::string title;
  double achievable_gbs = 0, achievable_gflops = 0;    // 0: not known, that roof is not drawn
  double theoretical_gbs = 0, theoretical_gflops = 0;  // 0: not known, that roof is not drawn
  struct Point {
    int64_t number = 0;
    double intensity = 0, gflops = 0;
    enum Kind { kSeed = 0, kEarlier = 1, kBest = 2 } kind = kEarlier;
  };
  std::vector<Point> points;  // the best last
};

struct KernelChart {
  std::string title;
  struct Bar {
    std::string name;  // demangled, shortened and cleaned (see above)
    double device_ms = 0;
    int64_t calls = 0;
    enum Kind { kLibrary = 0, kOwn = 1, kCopy = 2 } kind = kLibrary;
  };
  std::vector<Bar> bars;  // longest first; kMaxKernelBars at most, the rest in one bar
};
inline constexpr size_t kMaxKernelBars = 12;

// The roofline of the best attempt (`best`, with its stored verdict JSON) among `attempts` (the
// run's correct ones; the best among them or not). The roofs come from the best's verdict:
// roofline.achievable (else fingerprint.peaks) and roofline.theoretical. Fails (with the reason,
// for the record) when the problem counts no flops or bytes, or no roof is known.
Result<RooflineChart> BuildRooflineChart(const std::string& label, const AttemptPoint& best,
                                         const nlohmann::json& best_verdict,
                                         const std::vector<AttemptPoint>& attempts);

// The best's device time per kernel name from verdict.kernels.records (GPU backends), with its
// copies and sets. Fails with the reason when the verdict has no usable record (CPU backends
// make none: then the roofline is the analyst's only image).
Result<KernelChart> BuildKernelChart(const std::string& label, const nlohmann::json& best_verdict);

// What gnuplot runs: a script (without its `set terminal` line, which RenderPng adds) that reads
// `data` files from its working folder and writes `<name>.png` there.
struct GnuplotJob {
  std::string name;  // "roofline", "kernels"
  int width = 960, height = 640;
  std::string script;
  std::map<std::string, std::string> data;  // file name -> contents
};
GnuplotJob RooflineJob(const RooflineChart& chart);
GnuplotJob KernelJob(const KernelChart& chart);

// The gnuplot program: $KFORGE_GNUPLOT, else "gnuplot" (found on PATH).
std::string GnuplotProgram();

// Runs `job` with gnuplot in a fresh temporary folder (kept when $KFORGE_KEEP_TEMP is set) through
// `runner` (sandboxed: no network, its own folder only) and returns the PNG's bytes. Tries the
// pngcairo terminal first and the libgd png terminal when this gnuplot has no cairo. NotFound when
// gnuplot cannot be started (not installed: the message says how to install it); Internal with
// gnuplot's own message when it fails or writes no PNG.
Result<std::string> RenderPng(const GnuplotJob& job, ProcessRunner& runner);

// What `kforge doctor` says of gnuplot: "gnuplot 5.4.4 (/usr/bin/gnuplot), terminal pngcairo"
// (or "png" without cairo). NotFound (saying how to install it) when it cannot be started;
// Unavailable when it has neither PNG terminal.
Result<std::string> ProbeGnuplot(ProcessRunner& runner);

struct ProfileImage {
  std::string name;            // "roofline", "kernels"
  std::filesystem::path path;  // where it was saved
  std::string png;             // the file's bytes
  std::string xxh128;          // XXH3-128 of the bytes, hex: the hash transcripts use
};

struct ProfileImages {
  std::vector<ProfileImage> images;   // in the order they are shown to the analyst
  std::vector<std::string> left_out;  // "kernels: ...", one line per chart not drawn, with why
  bool gnuplot_missing = false;       // gnuplot could not be started: no image at all
  double seconds = 0;                 // wall time spent rendering
  // {"images": [{name, file, mime_type, bytes, xxh128}], "images_left_out": [...]}; `file`
  // relative to `base`. Keys without content are left out.
  nlohmann::json ToJson(const std::filesystem::path& base) const;
};

struct ProfileImageInput {
  std::string label;  // "scale (cpp)": problem and backend, for the titles
  AttemptPoint best;
  nlohmann::json best_verdict;
  std::vector<AttemptPoint> attempts;
};

// Builds and renders both charts and saves them as <dir>/<prefix>roofline.png and
// <dir>/<prefix>kernels.png (creating `dir`). Never fails: what could not be drawn or saved is
// in left_out, and a missing gnuplot stops after the first try.
ProfileImages MakeProfileImages(const ProfileImageInput& input, const std::filesystem::path& dir,
                                const std::string& prefix, ProcessRunner& runner);

}  // namespace kforge

#endif  // KFORGE_AGENT_PROFILE_IMAGES_H_
