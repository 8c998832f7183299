// Optimized `gelu` for the vulkan backend: 4 elements per invocation, vec4 memory access.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 2) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 3) writeonly buffer Y4 { vec4 y4[]; };
layout(push_constant) uniform Push { uint n; } p;

// Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7): GLSL has no erf.
vec4 erf_as(vec4 v) {
  vec4 t = 1.0 / (1.0 + 0.3275911 * abs(v));
  vec4 poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(v) * (1.0 - poly * exp(-v * v));
}

vec4 gelu(vec4 v) { return 0.5 * v * (1.0 + erf_as(v * 0.70710678118654752)); }

void main() {
  uint q = gl_GlobalInvocationID.x;
  uint base = 4u * q;
  if (base + 3u < p.n) {
    y4[q] = gelu(x4[q]);
  } else if (base < p.n) {
    for (uint i = base; i < p.n; ++i) y[i] = gelu(vec4(x[i])).x;
  }
}
