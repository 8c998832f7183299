// Profile images: charts from verdicts, gnuplot scripts, rendering (profile_images.h).
#include "agent/profile_images.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Text that reaches gnuplot: printable ASCII without quotes or backslashes, so that it can
// neither end a quoted string nor start an escape. `max` cuts long (mangled, templated) names.
std::string Clean(const std::string& text, size_t max = 200) {
  std::string out;
  for (unsigned char c : text)
    out +=
        (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '\'') ? static_cast<char>(c) : '?';
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

// CUPTI names kernels as the compiler mangled them ("_Z4geluPKfPfx"); the chart shows what the
// source calls them ("gelu(float const*, float*, long long)"). Names that do not demangle stay.
std::string Demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* plain = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && plain ? plain : name;
  std::free(plain);
  return out;
}

double Num(const json& j, const char* key) {
  const json& v = j.is_object() && j.contains(key) ? j[key] : json();
  return v.is_number() ? v.get<double>() : 0.0;
}

// y on a roof of bandwidth `gbs` and compute rate `gflops` at intensity x: min(x * gbs, gflops).
std::string RoofFunction(const char* name, double gbs, double gflops) {
  return fmt::format("{}(x) = (x * {:.6g} < {:.6g}) ? x * {:.6g} : {:.6g}\n", name, gbs, gflops,
                     gbs, gflops);
}

// Both axes span every point and both ridge points with room on either side (factors of 8 on
// x, 3 on y: a decade or so, enough to see the slope and the flat roof).
void RooflineRanges(const RooflineChart& c, double* x0, double* x1, double* y0, double* y1) {
  std::vector<double> xs, ys;
  for (const RooflineChart::Point& p : c.points) {
    xs.push_back(p.intensity);
    ys.push_back(p.gflops);
  }
  if (c.achievable_gbs > 0 && c.achievable_gflops > 0)
    xs.push_back(c.achievable_gflops / c.achievable_gbs);
  if (c.theoretical_gbs > 0 && c.theoretical_gflops > 0)
    xs.push_back(c.theoretical_gflops / c.theoretical_gbs);
  *x0 = *std::min_element(xs.begin(), xs.end()) / 8;
  *x1 = *std::max_element(xs.begin(), xs.end()) * 8;
  for (double gbs : {c.achievable_gbs, c.theoretical_gbs})
    if (gbs > 0) ys.push_back(gbs * *x0);
  ys.push_back(std::max(c.achievable_gflops, c.theoretical_gflops));
  *y0 = *std::min_element(ys.begin(), ys.end()) / 3;
  *y1 = *std::max_element(ys.begin(), ys.end()) * 3;
}

bool ExitedNotFound(const ProcessResult& r) {
  return r.end == ProcessResult::End::kStartFailed ||
         (r.end == ProcessResult::End::kExited && r.exit_code == 127);
}

Status NotInstalled(const ProcessResult& r) {
  std::string why = r.start_error.empty() ? TailLines(r.err, 3, 400) : r.start_error;
  return Status::NotFound(fmt::format(
      "gnuplot could not be started ({}: {}); install it with `apt-get install gnuplot-nox` "
      "(kforge doctor checks it)",
      GnuplotProgram(), why));
}

// One try with one terminal line; the result says whether the PNG came out.
ProcessResult RunGnuplot(const GnuplotJob& job, const fs::path& dir, const std::string& terminal,
                         ProcessRunner& runner) {
  ProcessSpec spec;
  spec.argv = {GnuplotProgram()};
  spec.cwd = dir;
  const char* path = std::getenv("PATH");
  // HOME and the caches in the job's folder: fontconfig writes its cache there, nowhere else.
  spec.env = {{"PATH", path ? path : "/usr/bin:/bin"},
              {"HOME", dir.string()},
              {"TMPDIR", dir.string()},
              {"XDG_CACHE_HOME", dir.string()},
              {"LC_ALL", "C"}};
  spec.stdin_data = terminal + "\nset output '" + job.name + ".png'\n" + job.script;
  spec.limits.wall_seconds = 30;
  spec.limits.cpu_seconds = 30;
  spec.limits.address_space_bytes = 2ull << 30;
  spec.limits.file_size_bytes = 64ull << 20;
  return runner.Run(spec);
}

}  // namespace

Result<RooflineChart> BuildRooflineChart(const std::string& label, const AttemptPoint& best,
                                         const json& verdict,
                                         const std::vector<AttemptPoint>& attempts) {
  if (best.flops <= 0 || best.bytes <= 0)
    return Status::InvalidArgument(
        "roofline: the problem counts no flops or no bytes, so its kernels have no place on it");
  const json roof = verdict.value("roofline", json::object());
  const json achievable = roof.value("achievable", json::object());
  const json peaks = verdict.value("fingerprint", json::object()).value("peaks", json::object());
  const json theoretical = roof.value("theoretical", json::object());
  RooflineChart c;
  c.achievable_gbs = Num(achievable, "bandwidth_gbs") > 0 ? Num(achievable, "bandwidth_gbs")
                                                          : Num(peaks, "bandwidth_gbs");
  c.achievable_gflops =
      Num(achievable, "gflops") > 0 ? Num(achievable, "gflops") : Num(peaks, "fp32_gflops");
  c.theoretical_gbs = Num(theoretical, "bandwidth_gbs");
  c.theoretical_gflops = Num(theoretical, "gflops");
  if (!(c.achievable_gbs > 0 && c.achievable_gflops > 0) &&
      !(c.theoretical_gbs > 0 && c.theoretical_gflops > 0))
    return Status::NotFound("roofline: the verdict has neither achievable nor theoretical peaks");
  auto point = [](const AttemptPoint& a, RooflineChart::Point::Kind kind) {
    return RooflineChart::Point{a.number, a.flops / a.bytes, a.flops / (a.median_ms * 1e-3) / 1e9,
                                kind};
  };
  for (const AttemptPoint& a : attempts)
    if (a.number != best.number && a.median_ms > 0 && a.flops > 0 && a.bytes > 0)
      c.points.push_back(
          point(a, a.seed ? RooflineChart::Point::kSeed : RooflineChart::Point::kEarlier));
  c.points.push_back(point(best, RooflineChart::Point::kBest));
  // Three significant digits: a first correct kernel can be far below 0.1% SOL.
  c.title = Clean(fmt::format("roofline: {}, best attempt {} at {:.3g}% SOL", label, best.number,
                              Num(roof, "sol_percent")));
  return c;
}

Result<KernelChart> BuildKernelChart(const std::string& label, const json& verdict) {
  if (!verdict.contains("kernels") || !verdict["kernels"].is_object())
    return Status::NotFound("kernels: the verdict has no kernel record (CPU backends make none)");
  const json& k = verdict["kernels"];
  if (!k.value("available", true))
    return Status::NotFound("kernels: no kernel record: " +
                            k.value("reason", std::string("not made")));
  KernelChart c;
  for (const json& r : k.value("records", json::array())) {
    if (!r.is_object()) continue;
    c.bars.push_back({Clean(Demangle(r.value("name", std::string("?"))), 48), Num(r, "device_ms"),
                      r.value("calls", int64_t{0}),
                      r.value("own", false) ? KernelChart::Bar::kOwn : KernelChart::Bar::kLibrary});
  }
  if (c.bars.empty()) return Status::NotFound("kernels: the kernel record holds no kernel");
  std::stable_sort(c.bars.begin(), c.bars.end(),
                   [](const auto& a, const auto& b) { return a.device_ms > b.device_ms; });
  if (c.bars.size() > kMaxKernelBars) {
    KernelChart::Bar rest{fmt::format("({} more kernels)", c.bars.size() - (kMaxKernelBars - 1)), 0,
                          0, KernelChart::Bar::kLibrary};
    for (size_t i = kMaxKernelBars - 1; i < c.bars.size(); ++i) {
      rest.device_ms += c.bars[i].device_ms;
      rest.calls += c.bars[i].calls;
    }
    c.bars.resize(kMaxKernelBars - 1);
    c.bars.push_back(rest);
  }
  for (const char* copy : {"memcpy", "memset"}) {
    const json m = k.value(copy, json::object());
    if (Num(m, "count") > 0)
      c.bars.push_back({copy, Num(m, "device_ms"), static_cast<int64_t>(Num(m, "count")),
                        KernelChart::Bar::kCopy});
  }
  c.title = Clean(fmt::format("device time per kernel: {}, one checking call ({})", label,
                              k.value("source", std::string("record"))));
  return c;
}

// Points: `intensity gflops "#N" kind`; the plot draws each kind as its own series (1/0 leaves
// a point out of a series) and labels every point with its attempt number.
GnuplotJob RooflineJob(const RooflineChart& c) {
  GnuplotJob job{"roofline"};
  job.height = 720;  // the key sits below the plot: inside, it would hide a roof or a point
  std::string& points = job.data["points.dat"];
  for (const RooflineChart::Point& p : c.points)
    points += fmt::format("{:.6g} {:.6g} \"#{}{}\" {}\n", p.intensity, p.gflops, p.number,
                          p.kind == RooflineChart::Point::kBest   ? " best"
                          : p.kind == RooflineChart::Point::kSeed ? " seed"
                                                                  : "",
                          static_cast<int>(p.kind));
  double x0, x1, y0, y1;
  RooflineRanges(c, &x0, &x1, &y0, &y1);
  std::string& s = job.script;
  s += fmt::format(
      "set title \"{}\"\nset logscale xy\nset xrange [{:.6g}:{:.6g}]\nset yrange [{:.6g}:{:.6g}]\n",
      c.title, x0, x1, y0, y1);
  s += "set xlabel \"arithmetic intensity (flop/byte)\"\nset ylabel \"GFLOP/s\"\n"
       "set grid\nset key below\nset samples 500\n";
  std::vector<std::string> plots;
  if (c.theoretical_gbs > 0 && c.theoretical_gflops > 0) {
    s += RoofFunction("theoretical", c.theoretical_gbs, c.theoretical_gflops);
    plots.push_back(
        fmt::format("theoretical(x) title \"theoretical peaks: {:.4g} GB/s, {:.4g} GFLOP/s\" lw 2 "
                    "dt 2 lc rgb \"#555555\"",
                    c.theoretical_gbs, c.theoretical_gflops));
  }
  if (c.achievable_gbs > 0 && c.achievable_gflops > 0) {
    s += RoofFunction("achievable", c.achievable_gbs, c.achievable_gflops);
    plots.push_back(
        fmt::format("achievable(x) title \"achievable (measured) peaks: {:.4g} GB/s, {:.4g} "
                    "GFLOP/s\" lw 2 lc rgb \"#1f77b4\"",
                    c.achievable_gbs, c.achievable_gflops));
  }
  plots.push_back(
      "'points.dat' using 1:($4==0?$2:1/0) title \"seed\" with points pt 4 ps 1.5 lc rgb "
      "\"#7f7f7f\"");
  plots.push_back(
      "'points.dat' using 1:($4==1?$2:1/0) title \"earlier attempts\" with points pt 6 ps 1.5 lc "
      "rgb \"#2ca02c\"");
  plots.push_back(
      "'points.dat' using 1:($4==2?$2:1/0) title \"current best\" with points pt 7 ps 2.2 lc rgb "
      "\"#d62728\"");
  plots.push_back("'points.dat' using 1:2:3 notitle with labels left offset 1.2,0 font \",9\"");
  s += "plot ";
  for (size_t i = 0; i < plots.size(); ++i) s += (i ? ", \\\n     " : "") + plots[i];
  s += "\n";
  return job;
}

// Bars: `"name" device_ms calls kind`, one series per kind so that the key names the colours.
GnuplotJob KernelJob(const KernelChart& c) {
  GnuplotJob job{"kernels"};
  std::string& bars = job.data["kernels.dat"];
  double top = 0;
  for (const KernelChart::Bar& b : c.bars) {
    bars += fmt::format("\"{}\" {:.6g} {} {}\n", b.name, b.device_ms, b.calls,
                        static_cast<int>(b.kind));
    top = std::max(top, b.device_ms);
  }
  std::string& s = job.script;
  s += fmt::format("set title \"{}\"\nset style fill solid 0.8 border -1\nset boxwidth 0.6\n",
                   c.title);
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [0:{:.6g}]\n", c.bars.size() - 0.5,
                   top > 0 ? top * 1.2 : 1.0);
  s += "set ylabel \"device time (ms)\"\nset xtics rotate by -30 left font \",9\"\nset bmargin "
       "10\nset grid ytics\nset key top right\n";
  s += "plot 'kernels.dat' using 0:($4==1?$2:0):xtic(1) title \"own kernels\" with boxes lc rgb "
       "\"#d62728\", \\\n"
       "     'kernels.dat' using 0:($4==0?$2:0) title \"library kernels\" with boxes lc rgb "
       "\"#1f77b4\", \\\n"
       "     'kernels.dat' using 0:($4==2?$2:0) title \"copies and sets\" with boxes lc rgb "
       "\"#7f7f7f\", \\\n"
       "     'kernels.dat' using 0:2:(sprintf(\"%.4g ms, %d calls\", $2, $3)) notitle with labels offset "
       "0,0.8 font \",9\"\n";
  return job;
}

std::string GnuplotProgram() {
  const char* env = std::getenv("KFORGE_GNUPLOT");
  return env && *env ? env : "gnuplot";
}

Result<std::string> RenderPng(const GnuplotJob& job, ProcessRunner& runner) {
  KF_ASSIGN_OR_RETURN(fs::path dir, MakeTempDir("plot"));
  // $KFORGE_KEEP_TEMP keeps the folder (script input, data, PNG) for looking at a chart's making.
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      if (!std::getenv("KFORGE_KEEP_TEMP")) fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  for (const auto& [name, text] : job.data) KF_RETURN_IF_ERROR(WriteFileAtomic(dir / name, text));
  // pngcairo draws antialiased lines and text; the libgd png terminal is the fallback of
  // gnuplot builds without cairo. `noenhanced`: underscores in kernel names stay underscores.
  const std::string size = fmt::format("size {},{}", job.width, job.height);
  ProcessResult r = RunGnuplot(
      job, dir, "set terminal pngcairo " + size + " font \"DejaVu Sans,11\" noenhanced", runner);
  if (ExitedNotFound(r)) return NotInstalled(r);
  if (!r.Succeeded() && r.err.find("terminal") != std::string::npos)
    r = RunGnuplot(job, dir, "set terminal png " + size + " noenhanced", runner);
  if (!r.Succeeded())
    return Status::Internal(
        fmt::format("gnuplot {} ({}): {}", job.name, r.Describe(), TailLines(r.err, 5, 800)));
  Result<std::string> png = ReadFile(dir / (job.name + ".png"));
  if (!png.ok() || png->rfind("\x89PNG\r\n\x1a\n", 0) != 0)
    return Status::Internal("gnuplot " + job.name + " wrote no PNG: " + TailLines(r.err, 5, 800));
  return *png;
}

Result<std::string> ProbeGnuplot(ProcessRunner& runner) {
  KF_ASSIGN_OR_RETURN(fs::path dir, MakeTempDir("plot"));
  GnuplotJob probe{"probe"};
  probe.script =
      "print sprintf(\"%.1f.%s\", GPVAL_VERSION, GPVAL_PATCHLEVEL)\nprint GPVAL_TERMINALS\n";
  ProcessResult r = RunGnuplot(probe, dir, "", runner);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ExitedNotFound(r)) return NotInstalled(r);
  if (!r.Succeeded())
    return Status::Unavailable(
        fmt::format("gnuplot {}: {}", r.Describe(), TailLines(r.err, 3, 400)));
  // print writes to stderr: the version line, then the terminals separated by spaces.
  const std::string version = r.err.substr(0, r.err.find('\n'));
  const std::string terminals = " " + r.err + " ";
  const char* terminal = terminals.find(" pngcairo ") != std::string::npos ? "pngcairo"
                         : terminals.find(" png ") != std::string::npos    ? "png"
                                                                           : nullptr;
  if (!terminal)
    return Status::Unavailable("gnuplot " + version + " has no PNG terminal; install gnuplot-nox");
  return fmt::format("gnuplot {} ({}), terminal {}", version, GnuplotProgram(), terminal);
}

json ProfileImages::ToJson(const fs::path& base) const {
  json j = json::object();
  for (const ProfileImage& i : images)
    j["images"].push_back({{"name", i.name},
                           {"file", i.path.lexically_relative(base).string()},
                           {"mime_type", "image/png"},
                           {"bytes", i.png.size()},
                           {"xxh128", i.xxh128}});
  if (!left_out.empty()) j["images_left_out"] = left_out;
  return j;
}

ProfileImages MakeProfileImages(const ProfileImageInput& in, const fs::path& dir,
                                const std::string& prefix, ProcessRunner& runner) {
  const auto t0 = std::chrono::steady_clock::now();
  ProfileImages out;
  std::vector<GnuplotJob> jobs;
  Result<RooflineChart> roofline =
      BuildRooflineChart(in.label, in.best, in.best_verdict, in.attempts);
  if (roofline.ok())
    jobs.push_back(RooflineJob(*roofline));
  else
    out.left_out.push_back(roofline.status().message());
  Result<KernelChart> kernels = BuildKernelChart(in.label, in.best_verdict);
  if (kernels.ok())
    jobs.push_back(KernelJob(*kernels));
  else
    out.left_out.push_back(kernels.status().message());
  for (const GnuplotJob& job : jobs) {
    Result<std::string> png = RenderPng(job, runner);
    if (!png.ok() && png.status().code() == StatusCode::kNotFound) {
      out.gnuplot_missing = true;
      out.left_out = {png.status().message()};  // no image at all: that is the one reason
      break;
    }
    const fs::path path = dir / (prefix + job.name + ".png");
    std::error_code ec;
    fs::create_directories(dir, ec);
    Status saved = png.ok() ? WriteFileAtomic(path, *png) : png.status();
    if (!saved.ok()) {
      out.left_out.push_back(job.name + ": " + saved.message());
      continue;
    }
    out.images.push_back({job.name, path, *png, Hash128Hex(*png)});
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace kforge
