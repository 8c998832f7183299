#include "eval/compare.h"

#include <algorithm>
#include <cmath>

namespace kforge {

namespace {

std::vector<int64_t> Coords(const std::vector<int64_t>& dims, int64_t index) {
  std::vector<int64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = dims[d] ? index % dims[d] : 0;
    index = dims[d] ? index / dims[d] : 0;
  }
  return c;
}

}  // namespace

Comparison CompareOutput(const TensorShape& shape, const std::string& got,
                         const std::vector<double>& want, const Tolerance& tol) {
  Comparison c;
  size_t n = want.size();
  if (got.size() < n * DTypeSize(shape.dtype)) {
    c.pass = false;
    c.reason = "the output has " + std::to_string(got.size()) + " bytes, " + std::to_string(n * DTypeSize(shape.dtype)) + " expected";
    return c;
  }
  // The scale-aware part of the absolute bound (policies other than strict) needs RMS(ref)
  // before the elementwise test; it is taken over the finite reference values.
  double atol = tol.atol;
  if (tol.atol_rms > 0) {
    double sum2 = 0;
    for (double w : want) sum2 += std::isfinite(w) ? w * w : 0.0;
    atol += tol.atol_rms * (n ? std::sqrt(sum2 / n) : 0.0);
  }
  double err2 = 0, ref2 = 0;
  // The candidate's values are widened a chunk at a time (no copy of the output's size: a fresh
  // 16 MB buffer per output cost more in page faults than the comparison), and the largest
  // relative error is tracked by its element, divided once at the end.
  constexpr size_t kChunk = 4096;
  double out[kChunk];
  double rel_abs = 0, rel_ref = 1;  // max_rel = rel_abs / rel_ref
  const size_t esize = DTypeSize(shape.dtype);
  for (size_t start = 0; start < n; start += kChunk) {
    const size_t m = std::min(kChunk, n - start);
    ToDouble(shape.dtype, got.data() + start * esize, m, out);
    for (size_t k = 0; k < m; ++k) {
      const size_t i = start + k;
      double w = want[i], g = out[k];
      bool ok;
      if (!std::isfinite(w)) {
        ok = (std::isnan(w) && std::isnan(g)) || g == w;
      } else if (!std::isfinite(g)) {
        ok = false;
        ++c.nonfinite;
        if (std::isnan(g)) ++c.unwritten;
      } else {
        const double abs = std::fabs(g - w), aw = std::fabs(w);
        c.max_abs = std::max(c.max_abs, abs);
        if (aw > tol.atol && abs * rel_ref > rel_abs * aw) rel_abs = abs, rel_ref = aw;
        ok = abs <= atol + tol.rtol * aw;
        err2 += abs * abs;
        ref2 += w * w;
      }
      if (!ok) {
        ++c.bad_count;
        if (c.first.size() < 5) c.first.push_back({static_cast<int64_t>(i), Coords(shape.dims, static_cast<int64_t>(i)), g, w});
      }
    }
  }
  c.max_rel = rel_abs / rel_ref;
  c.ref_rms = n ? std::sqrt(ref2 / n) : 0;
  c.rms_rel = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0);
  if (c.nonfinite > 0) {
    c.pass = false;
    c.reason = std::to_string(c.nonfinite) + " elements are NaN/Inf where the reference is finite" +
               (c.unwritten ? " (" + std::to_string(c.unwritten) + " still hold the NaN poison: unwritten?)" : "");
  } else if (c.bad_count > 0) {
    c.pass = false;
    c.reason = std::to_string(c.bad_count) + " of " + std::to_string(n) +
               (tol.atol_rms > 0 ? " elements outside atol + atol_rms*RMS(ref) + rtol*|ref|"
                                 : " elements outside atol + rtol*|ref|");
  } else if (IsFloating(shape.dtype) && tol.rms > 0 && c.rms_rel > tol.rms) {
    c.pass = false;
    c.reason = "RMS-relative error " + std::to_string(c.rms_rel) + " exceeds " + std::to_string(tol.rms);
  }
  return c;
}

nlohmann::json ComparisonToJson(const Comparison& c) {
  nlohmann::json first = nlohmann::json::array();
  for (const Mismatch& m : c.first)
    first.push_back({{"index", m.index}, {"coords", m.coords}, {"got", std::isfinite(m.got) ? nlohmann::json(m.got) : nlohmann::json(std::to_string(m.got))}, {"want", m.want}});
  return {{"pass", c.pass}, {"reason", c.reason}, {"bad_count", c.bad_count},
          {"unwritten", c.unwritten}, {"nonfinite", c.nonfinite}, {"max_abs_error", c.max_abs},
          {"max_rel_error", c.max_rel}, {"rms_rel_error", std::isfinite(c.rms_rel) ? c.rms_rel : 1e308},
          {"reference_rms", c.ref_rms}, {"first_mismatches", first}};
}

bool IsDegenerate(const std::vector<double>& ref, const Tolerance& tol, std::string* why) {
  if (ref.empty()) return false;
  double mean = 0, sq = 0;
  for (double v : ref) mean += v;
  mean /= ref.size();
  for (double v : ref) sq += (v - mean) * (v - mean);
  double stdev = std::sqrt(sq / ref.size());
  double rms = std::sqrt(sq / ref.size() + mean * mean);
  if (rms <= 10 * tol.atol) {
    *why = "reference output RMS " + std::to_string(rms) + " is within 10x atol: zeros could pass the elementwise test";
    return true;
  }
  if (stdev <= 1e-6 * std::fabs(mean) || stdev == 0) {
    *why = "reference output is near-constant (mean " + std::to_string(mean) + ", stdev " + std::to_string(stdev) + ")";
    return true;
  }
  return false;
}

}  // namespace kforge
