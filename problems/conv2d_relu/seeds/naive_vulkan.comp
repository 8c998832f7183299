// Naive `conv2d_relu` for the vulkan backend: one invocation per output element (valid
// convolution, stride 1), then bias and ReLU.
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint batch; uint in_c; uint out_c; uint h; uint w; uint k; } p;

void main() {
  uint oh = p.h - p.k + 1, ow = p.w - p.k + 1;
  uint j = gl_GlobalInvocationID.x, i = gl_GlobalInvocationID.y, bo = gl_GlobalInvocationID.z;
  if (j >= ow || i >= oh || bo >= p.batch * p.out_c) return;
  uint b = bo / p.out_c, o = bo % p.out_c;
  float s = 0.0;
  for (uint c = 0; c < p.in_c; ++c)
    for (uint u = 0; u < p.k; ++u)
      for (uint v = 0; v < p.k; ++v)
        s += x[((b * p.in_c + c) * p.h + i + u) * p.w + j + v] * weight[((o * p.in_c + c) * p.k + u) * p.k + v];
  y[(bo * oh + i) * ow + j] = max(s + bias[o], 0.0);
}
