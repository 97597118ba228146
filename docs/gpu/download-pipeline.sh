#!/usr/bin/env bash
# Downloads through both staging buffers (the copy engine fills one while
# the host drains the other): the CUDA tests against the CPU, the race
# detector, the conformance groups that move data both ways, then the
# `transfers` example of the old and new builds alternated (2^16, 2^20
# and 2^22 rows x 64 columns, best and median of 9, every download
# checked). Binaries in ${B:-.gpu-run}: vs_cpu, races, concurrency,
# conformance_cuda, transfers-old, transfers-new.
set -uo pipefail
B=${B:-.gpu-run}
echo "== $(nvidia-smi -L | head -1)"
for t in vs_cpu races concurrency; do
  echo "== $t"
  $B/$t --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
done
echo "== conformance_cuda transfers stark_proofs vm_proofs"
$B/conformance_cuda transfers stark_proofs vm_proofs --test-threads 1 2>&1 | grep -E "cases|test result|FAIL"
for v in old new old new; do
  echo "== transfers-$v 16,20,22 9"
  $B/transfers-$v 16,20,22 9
done
