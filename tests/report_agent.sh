#!/bin/sh
# A scripted stand-in for a model (`--llm exec:tests/report_agent.sh`, docs/llm.md "exec:"), for
# report_browser_test.sh: the generator answers with gelu's hand-written OpenMP kernel and a
# note holding markup that must stay text in a report; the analyst with one JSON recommendation
# that holds some too.   report_agent.sh PROMPT OUT
set -eu
prompt=$1
out=$2
if grep -q "performance-analysis agent" "$prompt"; then
  echo '{"bottleneck": "memory bandwidth </script><script>alert(1)</script>", "evidence": "SOL below 20% <b>", "change": "vectorize the loop and split it across cores", "expected_gain": "2x"}'
  exit 0
fi
cp "$(dirname "$0")/../problems/gelu/candidates/omp_simd.cc" "$out/candidate.cc"
printf 'Vectorized with OpenMP SIMD. </script><script>alert("answer")</script><img src=x onerror=alert(2)>\n' >"$out/answer.md"
