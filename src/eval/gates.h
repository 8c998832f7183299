// The allowances of the judge's load-sensitive gates, shared by the evaluator that applies them
// and the benchmark that reports how close honest candidates come to them.
#ifndef KFORGE_EVAL_GATES_H_
#define KFORGE_EVAL_GATES_H_

namespace kforge {

// Gate untimed_work (Evaluation::CheckPythonClocks): how much longer than in the null runs
// before the candidate was loaded (`calibrated_ms`) a timed run's preparing or collecting may
// take, as a median, for a candidate timed at `effective_ms`: half its time, a quarter of the
// calibrated step, and a slack for the supervisor's clock (20 ms on a CPU device, where the
// candidate and the supervisor share the cores; 0.1 ms on a GPU).
inline double UntimedWorkAllowanceMs(double effective_ms, double calibrated_ms, bool cpu_device) {
  return 0.5 * effective_ms + 0.25 * calibrated_ms + (cpu_device ? 20.0 : 0.1);
}

}  // namespace kforge

#endif  // KFORGE_EVAL_GATES_H_
