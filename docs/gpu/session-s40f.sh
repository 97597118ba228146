#!/usr/bin/env bash
# The session's kernels in one build (.gpu-run/new): lincomb four columns
# ahead, bary_partial by (column, slice) two rows a step, and the split's
# parts extended on the warp path. Its vs_cpu and conformance checks (the
# split and DEEP groups also at 2^20 rows a trace), the device timeline of
# a prove beside f0ea7ff's (.gpu-run), and the whole prove alternated,
# both hashes, pinned and pageable. Logs in $OUT.
set -uo pipefail
B=.gpu-run
N=.gpu-run/new
OUT=${OUT:-/tmp/s40f}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $N/commit | tr '\n' ' '); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 300 $N/vs_cpu --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
echo "== conformance_cuda, every group" | tee -a "$L"
timeout 300 $N/conformance_cuda --test-threads 1 2>&1 | grep -E "FAIL|test result|cases" | tee -a "$L"
for g in split_quotient deep; do
    echo "== conformance $g, KILN_CONFORMANCE_MAX_LOG=22" | tee -a "$L"
    KILN_CONFORMANCE_MAX_LOG=22 timeout 300 $N/conformance_cuda $g --test-threads 1 2>&1 | grep -E "FAIL|test result|cases" | tee -a "$L"
done
L="$OUT/bench.log"
for v in $B $N; do
    echo "== $(basename $v) prove_air 20 64 4 blake3 cuda 3 pinned, KILN_CUDA_TIMELINE=1" | tee -a "$L"
    KILN_CUDA_TIMELINE=1 timeout 120 $v/prove_air 20 64 4 blake3 cuda 3 pinned 2>&1 | grep -E "^  [a-z-]+ +[0-9]+ ops|timeline" | tee -a "$L"
done
for round in 1 2; do
    for mode in pinned pageable; do
        for h in blake3 keccak; do
            for v in $B $N; do
                echo "== $(basename $v) prove_air 20 64 4 $h cuda 6 $mode" | tee -a "$L"
                timeout 120 $v/prove_air 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
            done
        done
    done
done
