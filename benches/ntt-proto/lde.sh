#!/usr/bin/env bash
# Builds lde.cu and runs it at blowups 2, 4 and 8 (64 columns of 2^20),
# twice; output to stdout and $OUT/lde-proto.log when $OUT is set. On the
# GPU machine, from the repository root: bash benches/ntt-proto/lde.sh
set -uo pipefail
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
L=${OUT:-/tmp}/lde-proto.log
echo "== $(cat .gpu-run/commit 2>/dev/null || git rev-parse --short HEAD); $(nvidia-smi -L | head -1)" | tee -a "$L"
$NVCC -O3 -std=c++17 -arch=sm_90 -o /tmp/lde benches/ntt-proto/lde.cu 2>&1 | grep -v "^$" | tail -3 | tee -a "$L"
for round in 1 2; do
    for b in 1 2 3; do /tmp/lde "$b" 64 2>&1 | tee -a "$L"; done
done
