// Optimized `gemm_bias_relu` for the vulkan backend: a 4 x 4 block of y per invocation, x and weight
// rows read as vec4 along in_features when it is a multiple of 4 (bindings 4 and 5 view them so).
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 4) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 5) readonly buffer W4 { vec4 w4[]; };

layout(push_constant) uniform Push { uint m; uint k; uint n; float scale; } p;

void main() {
  uint j0 = 4u * gl_GlobalInvocationID.x, i0 = 4u * gl_GlobalInvocationID.y;
  if (j0 >= p.n || i0 >= p.m) return;
  // Rows past the end repeat the last row (loaded, never stored), so the loops stay uniform.
  uint xi[4], wj[4];
  for (uint r = 0u; r < 4u; ++r) {
    xi[r] = min(i0 + r, p.m - 1u);
    wj[r] = min(j0 + r, p.n - 1u);
  }
  float acc[16];
  for (uint e = 0u; e < 16u; ++e) acc[e] = 0.0;
  uint q = 0u;
  if (p.k % 4u == 0u) {  // rows start on vec4 boundaries: read them as vec4
    uint k4 = p.k / 4u;
    for (; q < k4; ++q) {
      vec4 xv[4], wv[4];
      for (uint r = 0u; r < 4u; ++r) {
        xv[r] = x4[xi[r] * k4 + q];
        wv[r] = w4[wj[r] * k4 + q];
      }
      for (uint r = 0u; r < 4u; ++r)
        for (uint d = 0u; d < 4u; ++d) acc[4u * r + d] += dot(xv[r], wv[d]);
    }
  } else {
    for (; q < p.k; ++q) {
      float xv[4], wv[4];
      for (uint r = 0u; r < 4u; ++r) {
        xv[r] = x[xi[r] * p.k + q];
        wv[r] = weight[wj[r] * p.k + q];
      }
      for (uint r = 0u; r < 4u; ++r)
        for (uint d = 0u; d < 4u; ++d) acc[4u * r + d] += xv[r] * wv[d];
    }
  }
  for (uint r = 0u; r < 4u; ++r)
    for (uint d = 0u; d < 4u; ++d) {
      uint i = i0 + r, j = j0 + d;
      if (i < p.m && j < p.n) {
        float s = acc[4u * r + d];
        y[i * p.n + j] = max(s + bias[j], 0.0);
      }
    }
}
