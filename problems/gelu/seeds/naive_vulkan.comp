// Naive `gelu` for the vulkan backend: one invocation per element. GLSL has no erf, so this
// uses Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7).
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } p;

float erf_as(float v) {
  float t = 1.0 / (1.0 + 0.3275911 * abs(v));
  float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(v) * (1.0 - poly * exp(-v * v));
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = 0.5 * x[i] * (1.0 + erf_as(x[i] * 0.70710678118654752));
}
