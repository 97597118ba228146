#!/usr/bin/env bash
# Measures the round kinds of 49001b1 (removed after it): run from a
# checkout of that commit.
# NTT rounds of up to 2^5 elements in registers with shift twiddles
# (KILN_CUDA_NTT_RADIX 8..32) against the radix-4 rounds, in one build:
# the CUDA tests against the CPU and the conformance groups that transform,
# then ntt_io (NTT and coset LDEs, 64 x 2^20, CUDA events) and prove_air
# with the radices alternated, then the sppark peer at the default.
# Binaries in ${B:-.gpu-run} (benches/sppark/build.sh, plus vs_cpu,
# conformance_cuda, prove_air). Log in $OUT/ntt-groups.log.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/ntt-groups.log") 2>&1
PHASE=${PHASE:-all}
# Each variant: KILN_CUDA_NTT_RADIX[,KILN_CUDA_NTT_THREADS].
VARIANTS=${VARIANTS:-4 32 16 8 32,128 16,128}
echo "== $(nvidia-smi -L | head -1); $(nproc) cores; build $(cat $B/commit)"
if [ "$PHASE" = all ] || [ "$PHASE" = check ]; then
  echo "== vs_cpu (default radix)"
  $B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
  for r in 32 16 8; do
    echo "== KILN_CUDA_NTT_RADIX=$r conformance_cuda ntt coset_lde properties"
    KILN_CUDA_NTT_RADIX=$r $B/conformance_cuda ntt coset_lde properties --test-threads 1 2>&1 | grep -E "cases|test result|FAIL|panicked"
  done
  echo "== conformance_cuda stark_proofs vm_proofs (default radix)"
  $B/conformance_cuda stark_proofs vm_proofs --test-threads 1 2>&1 | grep -E "cases|test result|FAIL|panicked"
fi
if [ "$PHASE" = all ] || [ "$PHASE" = bench ]; then
  W=$(mktemp -d)
  for round in 1 2; do
    for v in $VARIANTS; do
      r=${v%,*}; t=256; [ "$v" != "$r" ] && t=${v#*,}
      echo "== KILN_CUDA_NTT_RADIX=$r KILN_CUDA_NTT_THREADS=$t ntt_io prep 20 64 (round $round)"
      KILN_CUDA_NTT_RADIX=$r KILN_CUDA_NTT_THREADS=$t $B/ntt_io prep "$W" 20 64
    done
  done
  rm -rf "$W"
  for round in 1 2; do
    for r in ${PROVE_RADICES:-4 32 16 8}; do
      for h in blake3 keccak; do
        echo "== KILN_CUDA_NTT_RADIX=$r prove_air 20 64 4 $h cuda 6"
        KILN_CUDA_NTT_RADIX=$r $B/prove_air 20 64 4 $h cuda 6 2>&1 | grep -E "main commit|quotient commit|rounds|prove:|verify"
      done
    done
  done
  echo "== sppark peer (default radix)"
  bash benches/sppark/run.sh "$B" 20 64
fi
