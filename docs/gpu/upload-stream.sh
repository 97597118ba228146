#!/usr/bin/env bash
# Staged uploads copied into pinned memory with non-temporal stores: the
# CUDA tests against the CPU and the conformance groups that move data,
# then the builds alternated (VERSIONS, default "acc nt"): the transfers
# example (upload and download rates, 2^16/2^20/2^22 x 64), prove_air
# (cubic AIR 2^20 x 64, blowup 4; its main round waits for the trace's
# upload) and kiln prove of the 2^20-cycle program (proofs compared).
# Binaries in ${B:-.gpu-run}: vs_cpu, conformance_cuda,
# {transfers,prove_air,kiln}-VERSION. Log in $OUT/${LOG:-upload-stream.log}.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/${LOG:-upload-stream.log}") 2>&1
VERSIONS=${VERSIONS:-acc nt}
echo "== $(nvidia-smi -L | head -1); $(nproc) cores"
echo "== vs_cpu"
$B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
echo "== conformance_cuda transfers stark_proofs vm_proofs"
$B/conformance_cuda transfers stark_proofs vm_proofs --test-threads 1 2>&1 | grep -E "cases|test result|FAIL|panicked"
for round in 1 2; do
  for v in $VERSIONS; do
    echo "== transfers-$v 16,20,22 9"
    $B/transfers-$v 16,20,22 9
  done
done
for round in 1 2 3; do
  for v in $VERSIONS; do
    for h in blake3 keccak; do
      echo "== prove_air-$v 20 64 4 $h cuda 6"
      $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "rounds|prove:|verify"
    done
  done
done
CHAIN="vm/examples/chain.kasm --input 262142,3"
for v in $VERSIONS; do $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof > /dev/null; done
for round in 1 2; do
  for v in $VERSIONS; do
    echo "== kiln-$v chain 2^20 --backend cuda, warm caches, 5 runs"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof; done
  done
done
for v in $VERSIONS; do
  cmp /tmp/${VERSIONS%% *}.proof /tmp/$v.proof && echo "== chain proof of $v identical to ${VERSIONS%% *}'s" || echo "== chain proof of $v DIFFERS"
done
