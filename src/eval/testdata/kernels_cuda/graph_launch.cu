// Kernel record (cuda_eval_test.cc): the kernel captured into a CUDA graph on the harness's
// stream and launched as the graph. The record must see it, marked as a graph launch.
#include "kforge_cuda.h"

__global__ void kf_record_graph(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i] + b;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  long long n = kf_cuda_attr_i(a, "n");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamBeginCapture(a->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1;
  kf_record_graph<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data,
      (float)kf_cuda_attr_f(a, "scale"), (float)kf_cuda_attr_f(a, "shift"), n);
  if (cudaStreamEndCapture(a->stream, &graph) != cudaSuccess) return 2;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) return 3;
  if (cudaGraphLaunch(exec, a->stream) != cudaSuccess) return 4;
  cudaStreamSynchronize(a->stream);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 0;
}
