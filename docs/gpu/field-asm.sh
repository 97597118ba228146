#!/usr/bin/env bash
# Goldilocks add, sub and product as 32-bit carry chains (field.cuh): the
# CUDA tests against the CPU and the conformance groups, then the old and
# new builds alternated: ntt_io (NTT and coset LDEs, 64 x 2^20, CUDA
# events), prove_air (cubic AIR 2^20 x 64, blowup 4) and kiln prove of the
# 2^20-cycle program (whole-process wall, warm caches, proofs compared);
# then the sppark peer beside the new build. Binaries in ${B:-.gpu-run}:
# vs_cpu, conformance_cuda, {ntt_io,prove_air,kiln}-{old,new}, and
# what benches/sppark/build.sh puts there. Log in $OUT/${LOG:-field-asm.log}.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/${LOG:-field-asm.log}") 2>&1
PHASE=${PHASE:-all}
echo "== $(nvidia-smi -L | head -1); $(nproc) cores"
if [ "$PHASE" = all ] || [ "$PHASE" = check ]; then
  echo "== vs_cpu"
  $B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
  G=${CONF_GROUPS:-ntt coset_lde compose deep fri_fold properties stark_proofs vm_proofs}
  echo "== conformance_cuda $G"
  $B/conformance_cuda $G --test-threads 1 2>&1 | grep -E "cases|property|test result|FAIL|panicked"
fi
if [ "$PHASE" = profile ]; then
  # Every kernel of one warm prove, timed by ncu (kernels serialised), per
  # kernel name: where the device time of the whole prove goes.
  for h in ${HASHES:-blake3 keccak}; do
    echo "== ncu prove_air-new 20 64 4 $h cuda 1"
    /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip ${SKIP:-0} \
      --csv --print-summary per-kernel $B/prove_air-new 20 64 4 $h cuda 1 > "$OUT/ncu-$h.csv" 2> "$OUT/ncu-$h.err"
    echo "rc $? lines $(wc -l < "$OUT/ncu-$h.csv")"; tail -3 "$OUT/ncu-$h.err"
  done
fi
if [ "$PHASE" = all ] || [ "$PHASE" = bench ]; then
  W=$(mktemp -d)
  for v in old new old new; do
    echo "== ntt_io-$v prep 20 64"
    $B/ntt_io-$v prep "$W" 20 64
  done
  rm -rf "$W"
  for v in old new old new; do
    for h in blake3 keccak; do
      echo "== prove_air-$v 20 64 4 $h cuda 6"
      $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "commit|out-of-domain|rounds|prove:|verify"
    done
  done
  CHAIN="vm/examples/chain.kasm --input 262142,3"
  for v in old new; do $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof > /dev/null; done
  for v in old new old new; do
    echo "== kiln-$v chain 2^20 --backend cuda, warm caches, 5 runs"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof; done
  done
  cmp /tmp/old.proof /tmp/new.proof && echo "== old and new chain proofs identical" || echo "== chain proofs DIFFER"
  echo "== sppark peer beside the new build"
  bash benches/sppark/run.sh "$B" 20 64
fi
