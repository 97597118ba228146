#!/usr/bin/env bash
# A Merkle tree's levels of at most 256 digests hashed in one block
# (blake3_top, keccak_top) instead of a launch a level: the CUDA tests
# against the CPU, the race tests and the conformance groups that commit,
# the 2^20-cycle program under the race detector, then the builds
# alternated (VERSIONS, default "prev top"): prove_air (cubic AIR 2^20 x
# 64, blowup 4) and kiln prove of the 2^20-cycle program (proofs
# compared); last, ncu's time per kernel of one prove of the last build.
# Binaries in ${B:-.gpu-run}: vs_cpu, races, conformance_cuda,
# {prove_air,kiln}-VERSION. Log in $OUT/${LOG:-merkle-top.log}.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/${LOG:-merkle-top.log}") 2>&1
VERSIONS=${VERSIONS:-prev top}
LAST=${VERSIONS##* }
CHAIN="vm/examples/chain.kasm --input 262142,3"
echo "== $(nvidia-smi -L | head -1); $(nproc) cores"
for t in vs_cpu races; do
  echo "== $t"
  $B/$t --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
done
echo "== conformance_cuda merkle properties stark_proofs vm_proofs"
$B/conformance_cuda merkle properties stark_proofs vm_proofs --test-threads 1 2>&1 | grep -E "cases|property|test result|FAIL|panicked"
for v in $VERSIONS; do $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof > /dev/null; done
echo "== kiln-$LAST chain with KILN_CUDA_DEBUG_RACES=1"
KILN_CUDA_DEBUG_RACES=1 $B/kiln-$LAST prove $CHAIN --backend cuda --out /tmp/race.proof 2>&1 | grep -iE "race|error" | head -5
cmp /tmp/$LAST.proof /tmp/race.proof && echo "== race-checked proof identical"
for v in $VERSIONS; do
  cmp /tmp/${VERSIONS%% *}.proof /tmp/$v.proof && echo "== chain proof of $v identical to ${VERSIONS%% *}'s" || echo "== chain proof of $v DIFFERS"
done
for round in 1 2 3; do
  for v in $VERSIONS; do
    for h in blake3 keccak; do
      echo "== prove_air-$v 20 64 4 $h cuda 6"
      $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "rounds|prove:|verify"
    done
  done
done
for v in $VERSIONS; do
  echo "== kiln-$v chain 2^20 --backend cuda, warm caches, 5 runs"
  for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof; done
done
for h in blake3 keccak; do
  echo "== ncu prove_air-$LAST 20 64 4 $h cuda 1"
  /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum \
    --csv --print-summary per-kernel $B/prove_air-$LAST 20 64 4 $h cuda 1 > "$OUT/ncu-$h.csv" 2> "$OUT/ncu-$h.err"
  echo "rc $?"
done
