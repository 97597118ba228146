#!/usr/bin/env bash
# DEEP quotients eight rows a thread with one batch inversion, and the
# column combinations (DEEP, out-of-domain) summed unreduced: the CUDA
# tests against the CPU and the conformance groups that use them, then
# the old and new builds alternated: prove_air (cubic AIR 2^20 x 64,
# blowup 4) and kiln prove of the 2^20-cycle program (whole-process wall,
# warm caches). Binaries in ${B:-.gpu-run}: vs_cpu, conformance_cuda,
# prove_air-{old,new}, kiln-{old,new}. Log in $OUT/${LOG:-deep-batch.log}.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/${LOG:-deep-batch.log}") 2>&1
echo "== $(nvidia-smi -L | head -1); $(nproc) cores"
echo "== vs_cpu"
$B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
echo "== conformance_cuda deep properties stark_proofs vm_proofs"
$B/conformance_cuda deep properties stark_proofs vm_proofs --test-threads 1 2>&1 | grep -E "cases|property|test result|FAIL|panicked"
for v in old new old new; do
  for h in blake3 keccak; do
    echo "== prove_air-$v 20 64 4 $h cuda 6"
    $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "commit|out-of-domain|deep|fri|rounds|prove:|verify"
  done
done
CHAIN="vm/examples/chain.kasm --input 262142,3"
for v in old new; do $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof > /dev/null; done
for v in old new old new; do
  echo "== kiln-$v chain 2^20 --backend cuda, warm caches, 5 runs"
  for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof; done
done
for v in old new; do
  echo "== kiln-$v chain --timings"
  $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof --timings 2>&1 | grep -E "^(stages|rounds|prover)"
done
cmp /tmp/old.proof /tmp/new.proof && echo "== old and new chain proofs identical" || echo "== chain proofs DIFFER"
