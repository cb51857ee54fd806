#!/usr/bin/env bash
# Wall time of the whole CPU tiny matrix (every workload x backend x mode), run twice:
# the first warms the compiler caches (Inductor's headers, XLA), the second is the figure
# the README quotes.   bash scripts/bench_compare_cpu.sh [extra irlens compare options]
set -u
for run in cold warm; do
  start=$(date +%s.%N)
  irlens compare "$@" > /dev/null 2>&1
  status=$?
  echo "$run: $(echo "$(date +%s.%N) - $start" | bc) s (exit status $status)"
done
