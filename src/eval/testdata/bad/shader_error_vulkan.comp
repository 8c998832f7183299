#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { float s; float b; uint n; } p;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = p.s * x[i] + shift;
}
