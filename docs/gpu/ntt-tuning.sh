#!/usr/bin/env bash
# NTT/LDE launch shapes side by side: tile size, threads per block, radix,
# zero-level skipping. cuda_bench transforms only, 2^20 x 64.
export KILN_CACHE_DIR=/tmp/kiln-cache KILN_BENCH_TRANSFORMS_ONLY=1
run() { echo "== ${*:-defaults}"; env "$@" .gpu-bin/cuda_bench 2>&1 | grep -E "^(ntt|intt|coset)" | awk '{print "   " $0}'; }
if [ "${1:-}" = grid2 ]; then
  for t in 128 256; do for s in 0 1; do run KILN_CUDA_NTT_THREADS=$t KILN_CUDA_LDE_SKIP=$s; done; done
  run KILN_CUDA_NTT_THREADS=256 KILN_CUDA_LDE_SKIP=1 KILN_CUDA_NTT_TILE_LOG=12
  run KILN_CUDA_NTT_THREADS=512 KILN_CUDA_LDE_SKIP=1
  exit
fi
run KILN_CUDA_NTT_TILE_LOG=13
run KILN_CUDA_NTT_TILE_LOG=12
run KILN_CUDA_NTT_TILE_LOG=11
run KILN_CUDA_NTT_THREADS=256
run KILN_CUDA_NTT_THREADS=1024
run KILN_CUDA_NTT_RADIX=2
run KILN_CUDA_LDE_SKIP=1
run KILN_CUDA_NTT_TILE_LOG=12 KILN_CUDA_NTT_THREADS=256
run KILN_CUDA_NTT_TILE_LOG=13
