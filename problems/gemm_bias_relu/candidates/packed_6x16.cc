// Optimized `gemm_bias_relu` for the cpp backend: packed weight panels, a 6x16 register-blocked
// kernel and a fused bias + ReLU epilogue.
//
// weight is [out_features, in_features]; the kernel wants, for 16 output features at a time,
// their weights along p contiguously, so weight is first packed (transposed in blocks) into
// panels panel[p][0..15] = weight[j0..j0+15][p], zero-padded past out_features. Each 6x16 block
// of y is accumulated in twelve 8-lane registers (GCC vector types) over the whole
// in_features range: per p two panel loads, six broadcasts of x, twelve multiply-adds. The
// bias is added and the ReLU applied in registers before the single store. OpenMP threads take
// whole panels (pack, then every row block), so the only synchronization is the barrier at the
// end; row tails use the same kernel with fewer rows, column tails are stored through a small
// buffer. The panels live in kforge's scratch memory.
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

// y[0..Rows) x [0..width) = relu(x[0..Rows) x panel + bias) over kc steps of in_features, x
// pointing at the block's first row and step, panel at that step. Unless `first`, y holds the
// partial sums of the earlier k blocks; unless `last`, the new partial sums are stored raw.
template <int Rows>
void Block(const float* x, int64_t in, int64_t kc, const float* panel, const float* bias16,
           float* y, int64_t out, int64_t width, bool first, bool last) {
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
  const F8 b0 = Load8(bias16), b1 = Load8(bias16 + 8), zero = {};
  for (int r = 0; r < Rows; ++r) {
    const F8 v0 = acc[r][0] + b0, v1 = acc[r][1] + b1;
    float tmp[kNr];
    Store8(tmp, v0 > zero ? v0 : zero);
    Store8(tmp + 8, v1 > zero ? v1 : zero);
    std::memcpy(y + r * out, tmp, width * sizeof(float));
  }
}

// Block<1> ... Block<kMr> by row count, for the row tails.
using BlockFn = void (*)(const float*, int64_t, int64_t, const float*, const float*, float*,
                         int64_t, int64_t, bool, bool);
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
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t batch = kf_attr_i(a, "batch");
  const int64_t in = kf_attr_i(a, "in_features");
  const int64_t out = kf_attr_i(a, "out_features");
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
                y + i0 * out + j0, out, std::min(kNr, out - j0), p0 == 0, p0 + steps == in);
        }
      }
    }
  }
  return 0;
}
