#!/usr/bin/env bash
# Builds and runs warp1024.cu on the GPU machine at several block shapes
# (warps a block, blocks an SM for the register cap); output to stdout and
# $OUT/ntt-proto.log when $OUT is set.
#   bash benches/ntt-proto/run.sh ["WARPS MINB [NVCC FLAGS]" ...]   (default "8 1" "8 2" "16 1" "8 2 -DOMEGA6")
set -uo pipefail
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
L=${OUT:-/tmp}/ntt-proto.log
[ $# -gt 0 ] || set -- "8 1" "8 2" "16 1" "8 2 -DOMEGA6"
echo "== $(cat .gpu-run/commit 2>/dev/null || git rev-parse --short HEAD); $(nvidia-smi -L | head -1); $($NVCC --version | tail -1)" | tee -a "$L"
for shape in "$@"; do
    read -r w m extra <<<"$shape"
    echo "-- WARPS=$w MINB=$m ${extra:-}" | tee -a "$L"
    $NVCC -O3 -std=c++17 -arch=sm_90 -DWARPS="$w" -DMINB="$m" ${extra:-} -o /tmp/warp1024 benches/ntt-proto/warp1024.cu 2>&1 | grep -v "^$" | tail -3 | tee -a "$L"
    /tmp/warp1024 65536 2>&1 | tee -a "$L"
done
# Kiln's own NTT on the same card, when its ntt_io example is carried.
if [ -x .gpu-run/ntt_io ]; then
    W=$(mktemp -d)
    echo "-- kiln ntt_io 2^20 x 64 ($(cat .gpu-run/commit))" | tee -a "$L"
    .gpu-run/ntt_io prep "$W" 20 64 2>&1 | grep ntt | tee -a "$L"
    rm -rf "$W"
fi
# With NCU=1: Nsight Compute on the two tiled passes of the last shape's
# build (the first launch of each, the correctness run's).
if [ "${NCU:-0}" = 1 ]; then
    echo "-- ncu, tiled passes, the last shape's build" | tee -a "$L"
    timeout 240 /usr/local/cuda/bin/ncu --clock-control none -k regex:tiled --launch-count 2 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
        --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis \
        /tmp/warp1024 4096 2>&1 | grep -vE "^==PROF==|^(warp1024|check|[0-9]+ transforms|arithmetic|NTT)" | tee -a "$L"
fi
