// Optimized `conv2d_relu` for the vulkan backend: each invocation computes 4 adjacent output
// columns of one row; every input value it loads feeds each of the 4 outputs it touches, and
// each weight is loaded once for all 4.
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint batch; uint in_c; uint out_c; uint h; uint w; uint k; } p;

void main() {
  uint oh = p.h - p.k + 1, ow = p.w - p.k + 1;
  uint j0 = 4u * gl_GlobalInvocationID.x, i = gl_GlobalInvocationID.y, bo = gl_GlobalInvocationID.z;
  if (j0 >= ow || i >= oh || bo >= p.batch * p.out_c) return;
  uint b = bo / p.out_c, o = bo % p.out_c;
  vec4 s = vec4(0.0);
  for (uint c = 0; c < p.in_c; ++c) {
    for (uint u = 0; u < p.k; ++u) {
      uint row = ((b * p.in_c + c) * p.h + i + u) * p.w;
      uint wrow = ((o * p.in_c + c) * p.k + u) * p.k;
      // Input columns j0 .. j0 + 3 + k - 1 feed outputs j0 .. j0 + 3 (those past the row are 0).
      for (uint v = 0; v < p.k + 3u; ++v) {
        uint col = j0 + v;
        float xv = col < p.w ? x[row + col] : 0.0;
        for (uint d = 0; d < 4u; ++d)
          if (v >= d && v - d < p.k) s[d] += xv * weight[wrow + v - d];
      }
    }
  }
  for (uint d = 0; d < 4u; ++d)
    if (j0 + d < ow) y[(bo * oh + i) * ow + j0 + d] = max(s[d] + bias[o], 0.0);
}
