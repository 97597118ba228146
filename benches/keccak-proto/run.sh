#!/usr/bin/env bash
# Builds leaves.cu once for each set of nvcc flags given (default: none)
# and runs each build at 2^20 and 2^21 rows of 64 columns, two rounds;
# output to stdout and $OUT/keccak-proto.log when $OUT is set. On the GPU
# machine, from the repository root:
#   bash benches/keccak-proto/run.sh ["FLAGS" ...]
set -uo pipefail
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
L=${OUT:-/tmp}/keccak-proto.log
[ $# -gt 0 ] || set -- ""
echo "== $(cat .gpu-run/commit 2>/dev/null || git rev-parse --short HEAD); $(nvidia-smi -L | head -1)" | tee -a "$L"
i=0
for flags in "$@"; do
    $NVCC -O3 -std=c++17 -arch=sm_90 $flags -o /tmp/leaves-$i benches/keccak-proto/leaves.cu 2>&1 | tail -3 | tee -a "$L"
    i=$((i + 1))
done
# Two rounds over the builds, so each is timed twice, apart.
for round in 1 2; do
    i=0
    for flags in "$@"; do
        for lg in 20 21; do echo -n "[${flags:-default}] " | tee -a "$L"; /tmp/leaves-$i $lg 64 2>&1 | tee -a "$L"; done
        i=$((i + 1))
    done
done
