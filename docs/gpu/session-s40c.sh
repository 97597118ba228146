#!/usr/bin/env bash
# lincomb and bary_partial with their loads ahead (.gpu-run/new) against
# f0ea7ff (.gpu-run): the new build's vs_cpu and conformance checks, each
# kernel's time under Nsight Compute, and the whole prove alternated.
# Logs in $OUT.
set -uo pipefail
B=.gpu-run
N=.gpu-run/new
OUT=${OUT:-/tmp/s40c}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $N/commit | tr '\n' ' '); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 300 $N/vs_cpu --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
timeout 300 $N/conformance_cuda --test-threads 1 2>&1 | grep -E "FAIL|test result|cases" | tee -a "$L"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
K='regex:^(lincomb|lincomb_pair|bary_partial)$'
for v in $B $N; do
    timeout 200 $NCU --clock-control none -k "$K" --metrics gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active --csv \
        $v/prove_air 20 64 4 blake3 cuda 2 pinned 2>/dev/null | grep -E '^"[0-9]' > "$OUT/ncu-$(basename $v).csv"
done
L="$OUT/bench.log"
for round in 1 2; do
    for mode in pinned pageable; do
        for v in $B $N; do
            echo "== $(basename $v) prove_air 20 64 4 blake3 cuda 6 $mode" | tee -a "$L"
            timeout 120 $v/prove_air 20 64 4 blake3 cuda 6 $mode 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
        done
    done
done
