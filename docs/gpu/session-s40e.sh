#!/usr/bin/env bash
# bary_partial: vC (two rows a step, loads first) against vD (the same,
# its grid (column, slice), so that the blocks that run together share
# their weights in L2), each under Nsight Compute; the prove beside
# f0ea7ff's. Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s40e}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
K='regex:^(lincomb|lincomb_pair|bary_partial)$'
for v in $B/vC $B/vD; do
    timeout 200 $NCU --clock-control none -k "$K" --metrics gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active --csv \
        $v/prove_air 20 64 4 blake3 cuda 2 pinned 2>/dev/null | grep -E '^"[0-9]' > "$OUT/ncu-$(basename $v).csv"
done
L="$OUT/bench.log"
for round in 1 2; do
    for v in $B $B/vC $B/vD; do
        echo "== $(basename $v) prove_air 20 64 4 blake3 cuda 6 pinned" | tee -a "$L"
        timeout 120 $v/prove_air 20 64 4 blake3 cuda 6 pinned 2>&1 | grep -E "rounds|prove:" | tee -a "$L"
    done
done
