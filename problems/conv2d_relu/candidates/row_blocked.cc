// Optimized `conv2d_relu` for the cpp backend: output-channel x output-row register blocking.
//
// A task computes one output row i of up to six output channels for one image. Along the row
// it takes 16 columns at a time in two 8-lane registers per channel (GCC vector types, twelve
// accumulators): for each (c, u, v) it loads 16 consecutive inputs of row i + u of channel c,
// shifted by v, and multiplies them by one broadcast weight per channel. Input rows are read
// contiguously, so no im2col copy is needed, and bias + ReLU are applied in registers before
// the store. The last partial block of a row is moved back to end at the row's end (it
// recomputes a few columns, with identical results) so no load runs past the row; rows
// narrower than 8 take a scalar path. Tasks (image, channel block, row) are split over
// OpenMP threads.
//
// Tunables (kforge optimize): KF_CHANNELS output channels per block and KF_COL_VECS 8-column
// vectors per block along the row (KF_CHANNELS * KF_COL_VECS accumulators; the default 6 x 2
// uses 12 of the 16 AVX registers). Rows narrower than 8 * KF_COL_VECS but at least 8 wide
// are done 8 columns at a time with the same end-of-row shift.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kforge_cpu.h"

namespace {

typedef float F8 __attribute__((vector_size(32)));

#define KF_CHANNELS 6  // kforge:tune [2, 3, 4, 6, 8]
#define KF_COL_VECS 2  // kforge:tune [1, 2, 3]

constexpr int64_t kChannels = KF_CHANNELS;  // output channels per block
constexpr int kColVecs = KF_COL_VECS;       // 8-column vectors per block along the row
static_assert(kChannels >= 1 && kColVecs >= 1, "bad tunables");

inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }

struct Shape {
  int64_t in_c, out_c, h, w, k, oh, ow;
};

// Output columns [j0, j0 + 8 * NV) of row i for channels [o0, o0 + Rows) of one image.
// xb: the image's input; y0: output channel o0's plane of that image.
template <int Rows, int NV>
void Block(const Shape& s, const float* xb, const float* weight, const float* bias, int64_t o0,
           int64_t i, int64_t j0, float* y0) {
  F8 acc[Rows][NV];
  for (int r = 0; r < Rows; ++r)
    for (int q = 0; q < NV; ++q) acc[r][q] = F8{};
  const int64_t filter = s.in_c * s.k * s.k;  // weights per output channel
  const float* wo = weight + o0 * filter;
  for (int64_t c = 0; c < s.in_c; ++c) {
    for (int64_t u = 0; u < s.k; ++u) {
      const float* xrow = xb + (c * s.h + i + u) * s.w + j0;
      const float* wrow = wo + (c * s.k + u) * s.k;
      for (int64_t v = 0; v < s.k; ++v) {
        F8 xv[NV];
        for (int q = 0; q < NV; ++q) xv[q] = Load8(xrow + v + 8 * q);
        for (int r = 0; r < Rows; ++r) {
          const float wt = wrow[r * filter + v];
          for (int q = 0; q < NV; ++q) acc[r][q] += wt * xv[q];
        }
      }
    }
  }
  const F8 zero = {};
  for (int r = 0; r < Rows; ++r) {
    float* yr = y0 + r * s.oh * s.ow + i * s.ow + j0;
    for (int q = 0; q < NV; ++q) {
      const F8 v = acc[r][q] + bias[o0 + r];
      Store8(yr + 8 * q, v > zero ? v : zero);
    }
  }
}

// Rows narrower than 8 columns: one output at a time.
void ScalarRow(const Shape& s, const float* xb, const float* weight, const float* bias, int64_t o0,
               int64_t rows, int64_t i, float* y0) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* wo = weight + (o0 + r) * s.in_c * s.k * s.k;
    for (int64_t j = 0; j < s.ow; ++j) {
      float sum = 0.0f;
      for (int64_t c = 0; c < s.in_c; ++c)
        for (int64_t u = 0; u < s.k; ++u)
          for (int64_t v = 0; v < s.k; ++v)
            sum += xb[(c * s.h + i + u) * s.w + j + v] * wo[(c * s.k + u) * s.k + v];
      sum += bias[o0 + r];
      y0[r * s.oh * s.ow + i * s.ow + j] = sum > 0.0f ? sum : 0.0f;
    }
  }
}

template <int Rows>
void Row(const Shape& s, const float* xb, const float* weight, const float* bias, int64_t o0,
         int64_t i, float* y0) {
  if (s.ow < 8) return ScalarRow(s, xb, weight, bias, o0, Rows, i, y0);
  constexpr int64_t kCols = 8 * kColVecs;
  if (s.ow < kCols) {
    for (int64_t j0 = 0; j0 < s.ow; j0 += 8)
      Block<Rows, 1>(s, xb, weight, bias, o0, i, std::min(j0, s.ow - 8), y0);
    return;
  }
  for (int64_t j0 = 0; j0 < s.ow; j0 += kCols)
    Block<Rows, kColVecs>(s, xb, weight, bias, o0, i, std::min(j0, s.ow - kCols), y0);
}

// Row<1> ... Row<kChannels> by channel count, for the last channel block.
using RowFn = void (*)(const Shape&, const float*, const float*, const float*, int64_t, int64_t,
                       float*);
template <size_t... I>
constexpr std::array<RowFn, kChannels + 1> RowTable(std::index_sequence<I...>) {
  return {nullptr, Row<static_cast<int>(I) + 1>...};
}
constexpr std::array<RowFn, kChannels + 1> kRowByRows =
    RowTable(std::make_index_sequence<kChannels>{});

}  // namespace

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  const float* weight = static_cast<const float*>(kf_input(a, "weight")->data);
  const float* bias = static_cast<const float*>(kf_input(a, "bias")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t batch = kf_attr_i(a, "batch");
  Shape s;
  s.in_c = kf_attr_i(a, "in_channels");
  s.out_c = kf_attr_i(a, "out_channels");
  s.h = kf_attr_i(a, "height");
  s.w = kf_attr_i(a, "width");
  s.k = kf_attr_i(a, "kernel");
  s.oh = s.h - s.k + 1;
  s.ow = s.w - s.k + 1;
  const int64_t channel_blocks = (s.out_c + kChannels - 1) / kChannels;
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t ob = 0; ob < channel_blocks; ++ob) {
      for (int64_t i = 0; i < s.oh; ++i) {
        const int64_t o0 = ob * kChannels;
        kRowByRows[std::min(kChannels, s.out_c - o0)](s, x + b * s.in_c * s.h * s.w, weight, bias,
                                                      o0, i, y + (b * s.out_c + o0) * s.oh * s.ow);
      }
    }
  }
  return 0;
}
