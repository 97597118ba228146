#!/usr/bin/env bash
# Barycentric weights eight rows a thread with one batch inversion: the
# CUDA tests against the CPU and the conformance groups that evaluate
# out of the domain, then prove_air of the old and new builds alternated
# (the out-of-domain stage and the whole prove). Binaries in
# ${B:-.gpu-run}: vs_cpu, conformance_cuda, prove_air-old, prove_air-new.
set -uo pipefail
B=${B:-.gpu-run}
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
echo "== $(nvidia-smi -L | head -1)"
echo "== vs_cpu"
$B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
echo "== conformance_cuda deep stark_proofs vm_proofs"
$B/conformance_cuda deep stark_proofs vm_proofs --test-threads 1 2>&1 | grep -E "cases|test result|FAIL"
for v in old new old new; do
  for h in blake3 keccak; do
    echo "== prove_air-$v 20 64 4 $h cuda 6"
    $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "out-of-domain|prove:|verify"
  done
done
