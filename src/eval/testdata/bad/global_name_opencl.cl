// The mistake a small model repeated in four repairs: `global` (an address space qualifier in
// OpenCL C) as a variable name. PoCL names neither this file nor the line's text.
__kernel void scale(__global const float* x, __global float* y, float s, float b, long n) {
  long global = get_global_id(0);
  if (global < n) y[global] = s * x[global] + b;
}
