#!/usr/bin/env bash
# bary_partial's variants under Nsight Compute, beside f0ea7ff's: vA a
# warp a column, eight columns a block; vB the old blocks, each thread
# loading its next row ahead; vC the old blocks, two rows a step, loads
# first. Then the prove, f0ea7ff against vB and vC. Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s40d}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
K='regex:^(lincomb|lincomb_pair|bary_partial)$'
for v in $B $B/vA $B/vB $B/vC; do
    timeout 200 $NCU --clock-control none -k "$K" --metrics gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active --csv \
        $v/prove_air 20 64 4 blake3 cuda 2 pinned 2>/dev/null | grep -E '^"[0-9]' > "$OUT/ncu-$(basename $v).csv"
done
L="$OUT/bench.log"
for round in 1 2; do
    for v in $B $B/vB $B/vC; do
        echo "== $(basename $v) prove_air 20 64 4 blake3 cuda 6 pinned" | tee -a "$L"
        timeout 120 $v/prove_air 20 64 4 blake3 cuda 6 pinned 2>&1 | grep -E "rounds|prove:" | tee -a "$L"
    done
done
