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
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kforge_cpu.h"

namespace {

typedef float F8 __attribute__((vector_size(32)));

constexpr int64_t kMr = 6;   // rows of y per block
constexpr int64_t kNr = 16;  // output features per block (two vectors)

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

// y[0..Rows) x [0..width) = relu(x[0..Rows) x panel + bias), x pointing at the block's first row.
template <int Rows>
void Block(const float* x, int64_t in, const float* panel, const float* bias16, float* y,
           int64_t out, int64_t width) {
  F8 acc[Rows][2];
  for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = F8{};
  for (int64_t p = 0; p < in; ++p) {
    const F8 w0 = Load8(panel + p * kNr);
    const F8 w1 = Load8(panel + p * kNr + 8);
    for (int r = 0; r < Rows; ++r) {
      const float xr = x[r * in + p];
      acc[r][0] += xr * w0;
      acc[r][1] += xr * w1;
    }
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

// Block<1> ... Block<6> by row count, for the row tails.
using BlockFn = void (*)(const float*, int64_t, const float*, const float*, float*, int64_t,
                         int64_t);
constexpr BlockFn kBlockByRows[] = {nullptr,  Block<1>, Block<2>, Block<3>,
                                    Block<4>, Block<5>, Block<6>};

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
  // One task per panel: pack it, then run every row block against it while it is in cache.
  // A single parallel loop keeps synchronization to the one barrier at its end.
#pragma omp parallel for schedule(static)
  for (int64_t jp = 0; jp < panels; ++jp) {
    PackPanel(weight, in, out, jp * kNr, packed + jp * kNr * in);
    for (int64_t ib = 0; ib < row_blocks; ++ib) {
      const int64_t i0 = ib * kMr, j0 = jp * kNr;
      kBlockByRows[std::min(kMr, batch - i0)](x + i0 * in, in, packed + jp * kNr * in,
                                              bias_padded + j0, y + i0 * out + j0, out,
                                              std::min(kNr, out - j0));
    }
  }
  return 0;
}
