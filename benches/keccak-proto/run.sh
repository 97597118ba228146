#!/usr/bin/env bash
# Builds leaves.cu at each KECCAK_FMA_ROTS given (default 0 5 12 17 24 29)
# and runs it at 2^20 and 2^21 rows of 64 columns; output to stdout and
# $OUT/keccak-proto.log when $OUT is set. On the GPU machine, from the
# repository root: bash benches/keccak-proto/run.sh [K ...]
set -uo pipefail
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
L=${OUT:-/tmp}/keccak-proto.log
[ $# -gt 0 ] || set -- 0 5 12 17 24 29
echo "== $(cat .gpu-run/commit 2>/dev/null || git rev-parse --short HEAD); $(nvidia-smi -L | head -1)" | tee -a "$L"
for k in "$@"; do
    $NVCC -O3 -std=c++17 -arch=sm_90 -DKECCAK_FMA_ROTS="$k" -o /tmp/leaves-$k benches/keccak-proto/leaves.cu 2>&1 | tail -3 | tee -a "$L"
done
# Two rounds over the builds, so each is timed twice, apart.
for round in 1 2; do
    for k in "$@"; do
        for lg in 20 21; do /tmp/leaves-$k $lg 64 2>&1 | tee -a "$L"; done
    done
done
