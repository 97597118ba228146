#!/usr/bin/env bash
# deep_accum with its twiddles read first
# (.gpu-run/new, on top of 9d1e4f9) against f0ea7ff (.gpu-run): vs_cpu
# and the deep conformance group (also at 2^20 rows a trace) on the new
# build, the kernel's time under Nsight Compute, and the prove
# alternated. Logs in $OUT.
set -uo pipefail
B=.gpu-run
N=.gpu-run/new
OUT=${OUT:-/tmp/s40i}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $N/commit | tr '\n' ' '); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 300 $N/vs_cpu --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
for max in 12 22; do
    echo "== conformance deep, KILN_CONFORMANCE_MAX_LOG=$max" | tee -a "$L"
    KILN_CONFORMANCE_MAX_LOG=$max timeout 300 $N/conformance_cuda deep --test-threads 1 2>&1 | grep -E "FAIL|test result|cases" | tee -a "$L"
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in $B $N; do
    timeout 200 $NCU --clock-control none -k regex:^deep_accum$ --metrics gpu__time_duration.sum --csv \
        $v/prove_air 20 64 4 blake3 cuda 2 pinned 2>/dev/null | grep -E '^"[0-9]' > "$OUT/ncu-$(basename $v).csv"
done
L="$OUT/bench.log"
for round in 1 2; do
    for v in $B $N; do
        echo "== $(basename $v) prove_air 20 64 4 blake3 cuda 6 pinned" | tee -a "$L"
        timeout 120 $v/prove_air 20 64 4 blake3 cuda 6 pinned 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
    done
done
