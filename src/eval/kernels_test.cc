// Specifications of kernel accounting (docs/evaluation.md, "Kernels accounted for"): which
// kernels are the candidate's own, and when a candidate is labelled no_custom_kernel.
#include "eval/kernels.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using nlohmann::json;

const char* kCuda = R"(
#include <cuda_runtime.h>
namespace fused { namespace detail {
template <int B> __global__ void __launch_bounds__(256) scale_rows(const float* x, float* y, int n) {}
} }
extern "C" __global__ void add_bias(float* y, const float* b, int n) { }
// __global__ void commented_out(float* y) {}
static __global__ void
    relu_kernel(float* y, int n) {}
__global__ void decl_only(float*);
)";

const char* kPython = R"PY(
import torch, triton
import triton.language as tl
source = """
__global__ void gelu_kernel(const float* x, float* y, int n) { }
"""
@triton.autotune(configs=[triton.Config({'BLOCK': 128})], key=['n'])
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass

def helper(x):
    return x
)PY";

TEST(KernelNamesTest, GivenCudaSourceEveryGlobalFunctionIsNamedAndCommentsAreNot) {
  std::vector<std::string> n = OwnKernelNames(kCuda);
  EXPECT_EQ(n, (std::vector<std::string>{"scale_rows", "add_bias", "relu_kernel", "decl_only"}));
  std::vector<std::string> ns = DeclaredNamespaces(kCuda);
  EXPECT_EQ(ns, (std::vector<std::string>{"fused", "detail"}));
}

TEST(KernelNamesTest, GivenAPythonCandidateItsInlineCudaAndTritonKernelsAreNamed) {
  EXPECT_EQ(OwnKernelNames(kPython), (std::vector<std::string>{"gelu_kernel", "softmax_kernel"}));
}

TEST(KernelNamesTest, MangledDemangledAndTritonNamesMatchTheirOwnKernelOnly) {
  std::vector<std::string> own = {"add_bias", "relu_kernel", "softmax_kernel", "scale_rows"};
  std::vector<std::string> ns = {"fused", "detail"};
  EXPECT_TRUE(IsOwnKernel("add_bias", own, ns));                                // extern "C"
  EXPECT_TRUE(IsOwnKernel("_Z11relu_kernelPfi", own, ns));                      // CUPTI, mangled
  EXPECT_TRUE(IsOwnKernel("relu_kernel(float*, int)", own, ns));                // torch.profiler
  EXPECT_TRUE(IsOwnKernel("void fused::detail::scale_rows<4>(float const*, float*, int)", own, ns));
  EXPECT_TRUE(IsOwnKernel("_ZN5fused6detail10scale_rowsILi4EEEvPKfPfi", own, ns));
  EXPECT_TRUE(IsOwnKernel("softmax_kernel", own, ns));                          // Triton 3
  EXPECT_TRUE(IsOwnKernel("softmax_kernel_0d1d2d", own, ns));                   // older Triton
  // Library kernels, including ones that contain an own name somewhere inside.
  EXPECT_FALSE(IsOwnKernel("ampere_sgemm_128x64_nn", own, ns));
  EXPECT_FALSE(IsOwnKernel("void at::native::vectorized_elementwise_kernel<4, at::native::relu_kernel>(int)", own, ns));
  EXPECT_FALSE(IsOwnKernel("_ZN2at6native11relu_kernelEv", own, ns));
  EXPECT_FALSE(IsOwnKernel("_Z13relu_kernel_xPfi", own, ns));
  EXPECT_FALSE(IsOwnKernel("triton_poi_fused_add_relu_0", own, ns));            // torch.compile's
}

// A kernel in an anonymous namespace (problems/kernelbench-l2/cuda/12_Gemm_Multiply_LeakyReLU.cu
// was judged no_custom_kernel on the H200 before this): its own, mangled and demangled.
TEST(KernelNamesTest, GivenAKernelInAnAnonymousNamespaceItIsOwn) {
  const std::string source = "namespace {\n__global__ void sgemm_nt(const float* a, float* c) {}\n}  // namespace\n";
  std::vector<std::string> own = OwnKernelNames(source), ns = DeclaredNamespaces(source);
  EXPECT_TRUE(IsOwnKernel("_ZN12_GLOBAL__N_18sgemm_ntEPKfPf", own, ns));  // g++, clang
  // nvcc names each file's anonymous namespace (CUPTI's record on the H200):
  EXPECT_TRUE(IsOwnKernel("_ZN45_GLOBAL__N__0ca6b4dc_12_candidate_cu_823a73438sgemm_ntEPKfS1_PfiiiNS_4TailE", own, ns));
  EXPECT_TRUE(IsOwnKernel("(anonymous namespace)::sgemm_nt(float const*, float*)", own, ns));
  EXPECT_FALSE(IsOwnKernel("_ZN12_GLOBAL__N_18sgemm_ntEPKfPf", own, DeclaredNamespaces("__global__ void sgemm_nt() {}")));
}

json Record(std::vector<json> records, json memcpy = json::object()) {
  return {{"source", "cupti"}, {"available", true}, {"call", "check set 0"}, {"records", records}, {"memcpy", memcpy},
          {"harness_stream", 7}};
}

json Kernel(const std::string& name, double ms, int calls = 1, json extra = json::object()) {
  json k = {{"name", name}, {"calls", calls}, {"device_ms", ms}, {"streams", {7}}, {"graph", false}, {"after_return", 0}};
  k.update(extra);
  return k;
}

TEST(KernelAccountingTest, GivenOwnKernelsDoingTheWorkTheCandidateIsNotLabelled) {
  KernelAccounting a = AccountKernels(Record({Kernel("_Z11relu_kernelPfi", 0.5, 2)}), kCuda, 4e6, 4800);
  EXPECT_TRUE(a.available);
  EXPECT_FALSE(a.no_custom_kernel) << a.message;
  EXPECT_DOUBLE_EQ(a.summary["own_ms"], 0.5);
  EXPECT_EQ(a.summary["own_calls"], 2);
  EXPECT_DOUBLE_EQ(a.summary["own_share"], 1.0);
  EXPECT_TRUE(a.summary["records"][0]["own"]);
  EXPECT_TRUE(a.warnings.empty());
}

TEST(KernelAccountingTest, GivenADecoyKernelThatNeverRanTheCandidateHasNoCustomKernel) {
  // A ModelNew that builds an extension but computes with torch: only ATen and cuBLAS ran.
  KernelAccounting a = AccountKernels(Record({Kernel("ampere_sgemm_128x64_nn", 2.7),
                                              Kernel("void at::native::vectorized_elementwise_kernel<4>(int)", 0.03, 2)}),
                                      kPython, 32e6, 4800);
  EXPECT_TRUE(a.no_custom_kernel);
  EXPECT_NE(a.message.find("none of the candidate's kernels (gelu_kernel, softmax_kernel) ran"), std::string::npos) << a.message;
  EXPECT_NE(a.message.find("ampere_sgemm_128x64_nn (2.7000 ms)"), std::string::npos) << a.message;
  EXPECT_DOUBLE_EQ(a.summary["library_ms"], 2.73);
}

TEST(KernelAccountingTest, GivenNoKernelDefinedAndOnlyCopiesTheCandidateHasNoCustomKernel) {
  // Native: outputs computed on the host and copied back; no kernel at all.
  KernelAccounting a = AccountKernels(Record({}, {{"count", 2}, {"bytes", 8192}, {"device_ms", 0.01}}),
                                      "extern \"C\" int kf_cuda_run(const void*) { return 0; }", 4096, 4800);
  EXPECT_TRUE(a.no_custom_kernel);
  EXPECT_NE(a.message.find("defines no kernel"), std::string::npos) << a.message;
  EXPECT_NE(a.message.find("2 copies (8192 bytes)"), std::string::npos) << a.message;
}

TEST(KernelAccountingTest, GivenOwnKernelsTooBriefToWriteTheOutputsLibraryKernelsProducedThem) {
  // 32 MB of outputs take 6.7 us at 4800 GB/s; a 2 us own kernel beside a cuBLAS GEMM did not write them.
  KernelAccounting a = AccountKernels(Record({Kernel("ampere_sgemm_128x64_nn", 2.7), Kernel("add_bias", 0.002)}), kCuda,
                                      32e6, 4800);
  EXPECT_TRUE(a.no_custom_kernel);
  EXPECT_NE(a.message.find("less than writing its outputs once takes"), std::string::npos) << a.message;
  EXPECT_NEAR(a.summary["output_write_ms"].get<double>(), 32e6 / 4.8e9, 1e-12);
}

TEST(KernelAccountingTest, GivenALibraryGemmWithAnOwnEpilogueThatWritesTheOutputsItIsCustomWithAWarning) {
  // cuBLAS for the GEMM, an own fused epilogue over the 32 MB output (16 us): honest, custom.
  KernelAccounting a = AccountKernels(Record({Kernel("ampere_sgemm_128x64_nn", 2.7), Kernel("add_bias", 0.016)}), kCuda,
                                      32e6, 4800);
  EXPECT_FALSE(a.no_custom_kernel) << a.message;
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("99% of device time in library kernels"), std::string::npos) << a.warnings[0];
}

TEST(KernelAccountingTest, WorkLeftRunningSideStreamsAndGraphsAreReported) {
  KernelAccounting a = AccountKernels(
      Record({Kernel("relu_kernel", 0.4, 1, {{"streams", {7, 21}}, {"after_return", 1}}),
              Kernel("add_bias", 0.1, 3, {{"graph", true}, {"after_return", 3}})}),  // on the harness's stream: asynchronous, fine
      kCuda, 4e6, 4800);
  EXPECT_FALSE(a.no_custom_kernel);
  EXPECT_EQ(a.summary["streams"], 2);
  EXPECT_EQ(a.summary["after_return"], 4);
  EXPECT_EQ(a.summary["side_stream_after_return"], 1);
  EXPECT_EQ(a.summary["graph_calls"], 3);
  ASSERT_EQ(a.warnings.size(), 3u);
  EXPECT_NE(a.warnings[0].find("1 kernel launch(es) on streams other than the harness's ended after"), std::string::npos) << a.warnings[0];
  EXPECT_NE(a.warnings[1].find("2 streams"), std::string::npos);
  EXPECT_NE(a.warnings[2].find("CUDA graphs"), std::string::npos);
}

TEST(KernelAccountingTest, GivenNoRecordNothingIsLabelledAndTheReasonIsKept) {
  KernelAccounting none = AccountKernels(json(), kCuda, 4e6, 4800);
  EXPECT_FALSE(none.available);
  EXPECT_FALSE(none.no_custom_kernel);
  EXPECT_TRUE(none.summary.empty());
  KernelAccounting off = AccountKernels({{"source", "cupti"}, {"available", false}, {"reason", "libcupti not found"}}, kCuda, 4e6, 4800);
  EXPECT_FALSE(off.no_custom_kernel);
  EXPECT_EQ(off.summary["reason"], "libcupti not found");
  ASSERT_EQ(off.warnings.size(), 1u);
  EXPECT_NE(off.warnings[0].find("not accounted for: libcupti not found"), std::string::npos);
}

TEST(KernelAccountingTest, WithoutAKnownBandwidthOnlyOwnKernelsThatNeverRanAreLabelled) {
  KernelAccounting a = AccountKernels(Record({Kernel("ampere_sgemm_128x64_nn", 2.7), Kernel("add_bias", 0.002)}), kCuda, 32e6, 0);
  EXPECT_FALSE(a.no_custom_kernel);
}

}  // namespace
}  // namespace kforge
