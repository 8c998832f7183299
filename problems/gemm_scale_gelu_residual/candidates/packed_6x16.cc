// Optimized `gemm_scale_gelu_residual` for the cpp backend: packed weight panels, a 6x16
// register-blocked kernel and the whole tail (bias, scale, tanh-GELU, residual) fused into the
// epilogue.
//
// weight is [out_features, in_features]; the kernel wants, for 16 output features at a time,
// their weights along p contiguously, so weight is first packed (transposed in blocks) into
// panels panel[p][0..15] = weight[j0..j0+15][p], zero-padded past out_features. Each 6x16 block
// of y is accumulated in twelve 8-lane registers (GCC vector types) over the whole
// in_features range: per p two panel loads, six broadcasts of x, twelve multiply-adds. The
// tail runs in registers before the single store. GELU uses the identity
// 0.5 * z * (1 + tanh(u)) = z / (1 + exp(-2u)), which has no cancellation for negative z, with a
// vectorizable exp (libm's is a scalar call, and without -ffast-math GCC will not vectorize the
// selects it needs). OpenMP threads take whole panels (pack, then every row block), so the only
// synchronization is the barrier at the end; row tails use the same kernel with fewer rows,
// column tails are stored through a small buffer. The panels live in kforge's scratch memory.
//
// Tunables (kforge optimize): KF_MR rows per register block (KF_MR x 16 needs 2 * KF_MR vector
// accumulators; 6 fills 12 of the 16 AVX registers, 8 spills). KF_KC splits in_features into
// blocks of that many steps (0: all of them): a block's slice of the panels stays in L1 while
// every row block runs against it; y holds the raw partial sums between blocks (stored and
// reloaded as float, so the sum is the same as without blocking) and the epilogue runs after
// the last block. KF_PANELS panels form one OpenMP task (16 * KF_PANELS output features);
// within a k block each block of x rows is reused across them while it is in L1.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kforge_cpu.h"

namespace {

typedef float F8 __attribute__((vector_size(32)));

#define KF_MR 6  // kforge:tune [3, 4, 5, 6, 8]
#define KF_KC 0  // kforge:tune [0, 64, 128, 256, 512]
#define KF_PANELS 1  // kforge:tune [1, 2, 4]

constexpr int64_t kMr = KF_MR;          // rows of y per block
constexpr int64_t kNr = 16;             // output features per block (two vectors)
constexpr int64_t kKc = KF_KC;          // steps along in_features per block, 0: all of them
constexpr int64_t kPanels = KF_PANELS;  // panels per OpenMP task
static_assert(kMr >= 1 && kKc >= 0 && kPanels >= 1, "bad tunables");

inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
inline F8 Splat(float s) { return F8{s, s, s, s, s, s, s, s}; }

typedef int32_t I8 __attribute__((vector_size(32)));

// exp(x) per lane, a few ulp on [-87, 88]; lanes are clamped to that range (exp(-87) is about
// 1e-38, exp(88) about 1.6e38). x = n*ln2 + r, |r| <= ln2/2; Taylor series of exp(r) to r^7
// (truncation below 1e-8 relative); 2^n built in the exponent bits.
inline F8 Exp8(F8 x) {
  x = x < Splat(-87.0f) ? Splat(-87.0f) : x;
  x = x > Splat(88.0f) ? Splat(88.0f) : x;
  const F8 shift = Splat(12582912.0f);  // 1.5*2^23: rounds to an integer kept in the low bits
  const F8 t = x * 1.44269504088896341f + shift;
  const F8 n = t - shift;
  F8 r = x - n * 0.693145751953125f;
  r = r - n * 1.42860682030941723212e-6f;
  F8 p = Splat(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I8 bits = ((I8)t - 0x4B400000 + 127) << 23;
  return p * (F8)bits;
}

// gelu(z) + res with the tanh form of GELU, written as z / (1 + exp(-2u)).
inline F8 Tail8(F8 acc, F8 bias, float scale, F8 res) {
  const F8 z = (acc + bias) * scale;
  const F8 u = (z + 0.044715f * z * z * z) * 0.7978845608028654f;
  return z / (Splat(1.0f) + Exp8(-2.0f * u)) + res;
}

int64_t PanelCount(int64_t out) { return (out + kNr - 1) / kNr; }

// panel[p * 16 + j] = weight[(j0 + j) * in + p], zero past out_features. p-outer so the 16
// source rows are each read in order.
void PackPanel(const float* weight, int64_t in, int64_t out, int64_t j0, float* panel) {
  const int64_t width = std::min(kNr, out - j0);
  for (int64_t p = 0; p < in; ++p) {
    float* dst = panel + p * kNr;
    for (int64_t j = 0; j < width; ++j) dst[j] = weight[(j0 + j) * in + p];
    for (int64_t j = width; j < kNr; ++j) dst[j] = 0.0f;
  }
}

// y[0..Rows) x [0..width) = gelu(scale * (x[0..Rows) x panel + bias)) + residual over kc steps
// of in_features, with x pointing at the block's first row and step, panel at that step, and y
// and residual at the block's first row and column. Unless `first`, y holds the partial sums
// of the earlier k blocks; unless `last`, the new partial sums are stored raw.
template <int Rows>
void Block(const float* x, int64_t in, int64_t kc, const float* panel, const float* bias16,
           float scale, const float* residual, float* y, int64_t out, int64_t width, bool first,
           bool last) {
  F8 acc[Rows][2];
  for (int r = 0; r < Rows; ++r) {
    if (first) {
      acc[r][0] = acc[r][1] = F8{};
    } else {
      float tmp[kNr] = {};
      std::memcpy(tmp, y + r * out, width * sizeof(float));
      acc[r][0] = Load8(tmp);
      acc[r][1] = Load8(tmp + 8);
    }
  }
  for (int64_t p = 0; p < kc; ++p) {
    const F8 w0 = Load8(panel + p * kNr);
    const F8 w1 = Load8(panel + p * kNr + 8);
    for (int r = 0; r < Rows; ++r) {
      const float xr = x[r * in + p];
      acc[r][0] += xr * w0;
      acc[r][1] += xr * w1;
    }
  }
  if (!last) {
    for (int r = 0; r < Rows; ++r) {
      float tmp[kNr];
      Store8(tmp, acc[r][0]);
      Store8(tmp + 8, acc[r][1]);
      std::memcpy(y + r * out, tmp, width * sizeof(float));
    }
    return;
  }
  const F8 b0 = Load8(bias16), b1 = Load8(bias16 + 8);
  for (int r = 0; r < Rows; ++r) {
    float tmp[kNr] = {};
    std::memcpy(tmp, residual + r * out, width * sizeof(float));
    Store8(tmp, Tail8(acc[r][0], b0, scale, Load8(tmp)));
    Store8(tmp + 8, Tail8(acc[r][1], b1, scale, Load8(tmp + 8)));
    std::memcpy(y + r * out, tmp, width * sizeof(float));
  }
}

// Block<1> ... Block<kMr> by row count, for the row tails.
using BlockFn = void (*)(const float*, int64_t, int64_t, const float*, const float*, float,
                         const float*, float*, int64_t, int64_t, bool, bool);
template <size_t... I>
constexpr std::array<BlockFn, kMr + 1> BlockTable(std::index_sequence<I...>) {
  return {nullptr, Block<static_cast<int>(I) + 1>...};
}
constexpr std::array<BlockFn, kMr + 1> kBlockByRows = BlockTable(std::make_index_sequence<kMr>{});

}  // namespace

KF_EXPORT int64_t kf_scratch_bytes(const kf_cpu_args* a) {
  const int64_t panels = PanelCount(kf_attr_i(a, "out_features"));
  // The packed panels, then the bias zero-padded to whole panels.
  return panels * kNr * (kf_attr_i(a, "in_features") + 1) * static_cast<int64_t>(sizeof(float));
}

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  const float* weight = static_cast<const float*>(kf_input(a, "weight")->data);
  const float* bias = static_cast<const float*>(kf_input(a, "bias")->data);
  const float* residual = static_cast<const float*>(kf_input(a, "residual")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t batch = kf_attr_i(a, "batch");
  const int64_t in = kf_attr_i(a, "in_features");
  const int64_t out = kf_attr_i(a, "out_features");
  const float scale = static_cast<float>(kf_attr_f(a, "scale"));
  if (a->scratch == nullptr || a->scratch_bytes < kf_scratch_bytes(a))
    return kf_fail(a, "scratch buffer missing or too small");
  const int64_t panels = PanelCount(out);
  float* packed = static_cast<float*>(a->scratch);
  float* bias_padded = packed + panels * kNr * in;
  std::memcpy(bias_padded, bias, out * sizeof(float));
  for (int64_t j = out; j < panels * kNr; ++j) bias_padded[j] = 0.0f;
  const int64_t row_blocks = (batch + kMr - 1) / kMr;
  const int64_t kc = kKc > 0 ? std::min(kKc, in) : in;
  const int64_t tasks = (panels + kPanels - 1) / kPanels;
  // One task per kPanels panels: pack them, then run every row block against them, k block by
  // k block, while they are in cache. A single parallel loop keeps synchronization to the one
  // barrier at its end.
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t jp0 = t * kPanels, jp1 = std::min(panels, jp0 + kPanels);
    for (int64_t jp = jp0; jp < jp1; ++jp)
      PackPanel(weight, in, out, jp * kNr, packed + jp * kNr * in);
    for (int64_t p0 = 0; p0 < in; p0 += kc) {
      const int64_t steps = std::min(kc, in - p0);
      for (int64_t ib = 0; ib < row_blocks; ++ib) {
        const int64_t i0 = ib * kMr;
        const BlockFn block = kBlockByRows[std::min(kMr, batch - i0)];
        for (int64_t jp = jp0; jp < jp1; ++jp) {
          const int64_t j0 = jp * kNr;
          block(x + i0 * in + p0, in, steps, packed + jp * kNr * in + p0 * kNr, bias_padded + j0,
                scale, residual + i0 * out + j0, y + i0 * out + j0, out, std::min(kNr, out - j0),
                p0 == 0, p0 + steps == in);
        }
      }
    }
  }
  return 0;
}
