// Optimized `gemm_scale_gelu_residual` for the vulkan backend: 16 x 16 output tiles, x and weight
// tiles in shared memory, in steps of 16 along in_features.
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) readonly buffer R { float residual[]; };
layout(set = 0, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint m; uint k; uint n; float scale; } p;

const uint T = 16;
shared float tx_[T][T + 1];  // x tile: rows i, columns q
shared float tw_[T][T + 1];  // weight tile: rows j, columns q

void main() {
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint j = gl_WorkGroupID.x * T + lx, i = gl_WorkGroupID.y * T + ly;
  uint wj = gl_WorkGroupID.x * T + ly;  // the weight row this invocation loads
  float s = 0.0;
  for (uint q0 = 0; q0 < p.k; q0 += T) {
    tx_[ly][lx] = i < p.m && q0 + lx < p.k ? x[i * p.k + q0 + lx] : 0.0;
    tw_[ly][lx] = wj < p.n && q0 + lx < p.k ? weight[wj * p.k + q0 + lx] : 0.0;
    barrier();
    for (uint q = 0; q < T; ++q) s += tx_[ly][q] * tw_[lx][q];
    barrier();
  }
  if (i >= p.m || j >= p.n) return;
  float z = p.scale * (s + bias[j]);
  float u = clamp(0.7978845608028654 * (z + 0.044715 * z * z * z), -15.0, 15.0);  // tanh saturates; avoids inf/inf
  y[i * p.n + j] = 0.5 * z * (1.0 + tanh(u)) + residual[i * p.n + j];
}
