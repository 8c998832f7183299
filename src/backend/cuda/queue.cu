// The device's head start before a timed launch (CudaDevice::SetQueue): every thread waits
// `cycles` SM clock cycles, launched on every thread slot of every SM (CudaDevice::Spin).
// Queued ahead of the start event, it keeps the whole device busy while the host records the
// events and the candidate's launches, so that the events time the device's work, not the host's
// launch path, and no kernel of another stream runs beside it unseen. Compiled to PTX at build
// time and embedded like peaks.cu. The Python worker launches the same kernel from PTX text
// (SPIN_PTX in python/kforge_pychild.py).
extern "C" __global__ void kf_spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
