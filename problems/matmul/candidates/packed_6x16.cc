// Optimized `matmul` for the cpp backend: packed B panels and a 6x16 register-blocked kernel.
//
// B is first copied into panels of 16 columns, panel[p][0..15] = B[p][j0..j0+15], zero-padded
// past n, so the inner loop reads B contiguously. Each 6x16 block of C is then accumulated in
// twelve 8-lane registers (GCC vector types; six rows times two vectors) over the whole k
// range: per p it loads two vectors of the panel, broadcasts six elements of A and issues
// twelve multiply-adds, which keeps the FMA units busy instead of waiting on memory. OpenMP
// threads take whole panels (pack, then every row block), so the only synchronization is the
// barrier at the end. Row tails use the same kernel with fewer rows; column tails are stored
// through a small buffer. The packed panels live in kforge's scratch memory.
//
// Tunables (kforge optimize): KF_MR rows per register block (KF_MR x 16 needs 2 * KF_MR vector
// accumulators; 6 fills 12 of the 16 AVX registers, 8 spills). KF_KC splits k into blocks of
// that many steps (0: the whole k): a block's slice of the panels stays in L1 while every row
// block runs against it, and C holds the partial sums between blocks (stored and reloaded as
// float, so the result is the same as without blocking). KF_PANELS panels form one OpenMP task
// (n-block of 16 * KF_PANELS columns); within a k block each block of A rows is reused across
// them while it is in L1.
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

constexpr int64_t kMr = KF_MR;          // rows of C per block
constexpr int64_t kNr = 16;             // columns of C per block (two vectors)
constexpr int64_t kKc = KF_KC;          // steps along k per block, 0: all of k
constexpr int64_t kPanels = KF_PANELS;  // panels per OpenMP task
static_assert(kMr >= 1 && kKc >= 0 && kPanels >= 1, "bad tunables");

inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }

int64_t PanelCount(int64_t n) { return (n + kNr - 1) / kNr; }

// Copies columns [j0, j0 + 16) of B ([k, n], row-major) into panel[p * 16 + j], zero-padded.
void PackPanel(const float* b, int64_t k, int64_t n, int64_t j0, float* panel) {
  const int64_t width = std::min(kNr, n - j0);
  for (int64_t p = 0; p < k; ++p) {
    float* dst = panel + p * kNr;
    std::memcpy(dst, b + p * n + j0, width * sizeof(float));
    for (int64_t j = width; j < kNr; ++j) dst[j] = 0.0f;
  }
}

// C[0..Rows) x [0..width) (+)= A[0..Rows) x panel over kc steps, where a points at the block's
// first row and first k step, and panel at that step's 16 values. With `accumulate`, C already
// holds the sum over the earlier k blocks.
template <int Rows>
void Block(const float* a, int64_t lda, int64_t kc, const float* panel, float* c, int64_t n,
           int64_t width, bool accumulate) {
  F8 acc[Rows][2];
  for (int r = 0; r < Rows; ++r) {
    if (!accumulate) {
      acc[r][0] = acc[r][1] = F8{};
    } else if (width == kNr) {
      acc[r][0] = Load8(c + r * n);
      acc[r][1] = Load8(c + r * n + 8);
    } else {
      float tmp[kNr] = {};
      std::memcpy(tmp, c + r * n, width * sizeof(float));
      acc[r][0] = Load8(tmp);
      acc[r][1] = Load8(tmp + 8);
    }
  }
  for (int64_t p = 0; p < kc; ++p) {
    const F8 b0 = Load8(panel + p * kNr);
    const F8 b1 = Load8(panel + p * kNr + 8);
    for (int r = 0; r < Rows; ++r) {
      const float ar = a[r * lda + p];
      acc[r][0] += ar * b0;
      acc[r][1] += ar * b1;
    }
  }
  for (int r = 0; r < Rows; ++r) {
    float* cr = c + r * n;
    if (width == kNr) {
      Store8(cr, acc[r][0]);
      Store8(cr + 8, acc[r][1]);
    } else {
      float tmp[kNr];
      Store8(tmp, acc[r][0]);
      Store8(tmp + 8, acc[r][1]);
      std::memcpy(cr, tmp, width * sizeof(float));
    }
  }
}

// Block<1> ... Block<kMr> by row count, for the row tails.
using BlockFn = void (*)(const float*, int64_t, int64_t, const float*, float*, int64_t, int64_t,
                         bool);
template <size_t... I>
constexpr std::array<BlockFn, kMr + 1> BlockTable(std::index_sequence<I...>) {
  return {nullptr, Block<static_cast<int>(I) + 1>...};
}
constexpr std::array<BlockFn, kMr + 1> kBlockByRows = BlockTable(std::make_index_sequence<kMr>{});

}  // namespace

KF_EXPORT int64_t kf_scratch_bytes(const kf_cpu_args* args) {
  return PanelCount(kf_attr_i(args, "n")) * kNr * kf_attr_i(args, "k") *
         static_cast<int64_t>(sizeof(float));
}

KF_EXPORT int kf_run(const kf_cpu_args* args) {
  const float* a = static_cast<const float*>(kf_input(args, "a")->data);
  const float* b = static_cast<const float*>(kf_input(args, "b")->data);
  float* c = static_cast<float*>(kf_output(args, "c")->data);
  const int64_t m = kf_attr_i(args, "m");
  const int64_t k = kf_attr_i(args, "k");
  const int64_t n = kf_attr_i(args, "n");
  float* packed = static_cast<float*>(args->scratch);
  if (packed == nullptr || args->scratch_bytes < kf_scratch_bytes(args))
    return kf_fail(args, "scratch buffer missing or too small");
  const int64_t panels = PanelCount(n);
  const int64_t row_blocks = (m + kMr - 1) / kMr;
  const int64_t kc = kKc > 0 ? std::min(kKc, k) : k;
  const int64_t tasks = (panels + kPanels - 1) / kPanels;
  // One task per kPanels panels: pack them, then run every row block against them, k block by
  // k block, while they are in cache. A single parallel loop keeps synchronization to the one
  // barrier at its end.
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t jp0 = t * kPanels, jp1 = std::min(panels, jp0 + kPanels);
    for (int64_t jp = jp0; jp < jp1; ++jp) PackPanel(b, k, n, jp * kNr, packed + jp * kNr * k);
    for (int64_t p0 = 0; p0 < k; p0 += kc) {
      const int64_t steps = std::min(kc, k - p0);
      for (int64_t ib = 0; ib < row_blocks; ++ib) {
        const int64_t i0 = ib * kMr;
        const BlockFn block = kBlockByRows[std::min(kMr, m - i0)];
        for (int64_t jp = jp0; jp < jp1; ++jp) {
          const int64_t j0 = jp * kNr;
          block(a + i0 * k + p0, k, steps, packed + jp * kNr * k + p0 * kNr, c + i0 * n + j0, n,
                std::min(kNr, n - j0), p0 > 0);
        }
      }
    }
  }
  return 0;
}
