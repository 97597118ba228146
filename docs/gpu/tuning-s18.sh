#!/usr/bin/env bash
# Launch shapes again after the cheaper field arithmetic (one build, the
# KILN_CUDA_* variables alternated): NTT tile and threads per block with
# ntt_io (64 x 2^20, CUDA events), then the runs of the trace's overlapped
# upload and LDE with prove_air (cubic AIR 2^20 x 64, blowup 4), and the
# 2^20-cycle program's proof at every run count against the default's.
# Binaries in ${B:-.gpu-run}: ntt_io, prove_air, kiln. Log in
# $OUT/${LOG:-tuning.log}.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/${LOG:-tuning.log}") 2>&1
echo "== $(nvidia-smi -L | head -1); $(nproc) cores"
W=$(mktemp -d)
for round in 1 2; do
  for v in 13,256 13,512 13,128 12,256 12,512 11,256 11,512; do
    echo "== KILN_CUDA_NTT_TILE_LOG=${v%,*} KILN_CUDA_NTT_THREADS=${v#*,} ntt_io prep 20 64 (round $round)"
    KILN_CUDA_NTT_TILE_LOG=${v%,*} KILN_CUDA_NTT_THREADS=${v#*,} $B/ntt_io prep "$W" 20 64
  done
done
rm -rf "$W"
for round in 1 2; do
  for r in 8 16 4 32; do
    for h in blake3 keccak; do
      echo "== KILN_CUDA_UPLOAD_RUNS=$r prove_air 20 64 4 $h cuda 6 (round $round)"
      KILN_CUDA_UPLOAD_RUNS=$r $B/prove_air 20 64 4 $h cuda 6 2>&1 | grep -E "rounds|prove:|verify"
    done
  done
done
CHAIN="vm/examples/chain.kasm --input 262142,3"
$B/kiln prove $CHAIN --backend cuda --out /tmp/default.proof > /dev/null
for r in 1 4 16 32 64; do
  KILN_CUDA_UPLOAD_RUNS=$r $B/kiln prove $CHAIN --backend cuda --out /tmp/r$r.proof > /dev/null
  cmp /tmp/default.proof /tmp/r$r.proof && echo "== KILN_CUDA_UPLOAD_RUNS=$r chain proof identical" || echo "== KILN_CUDA_UPLOAD_RUNS=$r chain proof DIFFERS"
done
