#!/usr/bin/env bash
# Coset LDEs of 2^20 rows on the warp NTT (a976152): every GPU test and
# conformance group (coset_lde and ntt to 2^20 rows), sppark beside the
# NTT and LDE, the LDE with the warp path off and on alternated, the proof
# path, the cold start. .gpu-run as session-s38b.sh says (with sp). Logs
# in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s38g}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
for t in vs_cpu declines; do
    echo "== $t" | tee -a "$L"
    timeout 300 $B/$t --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
done
echo "== conformance_cuda, every group" | tee -a "$L"
timeout 300 $B/conformance_cuda --test-threads 1 2>&1 | grep -E "FAIL|test result|cases" | tee -a "$L"
for g in ntt coset_lde; do
    echo "== conformance $g, KILN_CONFORMANCE_MAX_LOG=20" | tee -a "$L"
    KILN_CONFORMANCE_MAX_LOG=20 timeout 240 $B/conformance_cuda $g --test-threads 1 2>&1 \
        | grep -E "FAIL|test result|passed|failed" | tail -3 | tee -a "$L"
done
L="$OUT/bench.log"
OUT=$OUT timeout 240 bash benches/sppark/run.sh $B/sp 2>&1 | grep -E "^\|" | tee -a "$L"
for round in 1 2; do
    for on in 0 1; do
        W=$(mktemp -d)
        echo "== ntt_io prep 20 64, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
        KILN_CUDA_NTT_WARP=$on timeout 120 $B/ntt_io prep "$W" 20 64 2>&1 | grep -E "kiln " | tee -a "$L"
        rm -rf "$W"
    done
done
for mode in pageable pinned; do
    for h in blake3 keccak; do
        for on in 0 1; do
            echo "== prove_air 20 64 4 $h cuda 6 $mode, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
            KILN_CUDA_NTT_WARP=$on timeout 120 $B/prove_air 20 64 4 $h cuda 6 $mode 2>&1 \
                | grep -E "rounds|prove:|verify" | tee -a "$L"
        done
    done
done
L="$OUT/cold.log"
for on in 0 1; do
    d=$(mktemp -d)
    echo "== cold kiln prove chain 2^20 cycles, empty caches, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
    KILN_CUDA_NTT_WARP=$on KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py \
        $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cuda --out /tmp/cold-$on.proof | tee -a "$L"
    rm -rf "$d"
done
cmp /tmp/cold-0.proof /tmp/cold-1.proof && echo "proofs identical" | tee -a "$L"
