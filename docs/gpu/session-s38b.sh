#!/usr/bin/env bash
# The warp NTT on by default with field.cuh's shift products (f_shl) and
# shorter addition: every GPU test and conformance group (f_add changed
# under every kernel), the ntt group to 2^20 rows, the NTT's time off and
# on, the proof path, sppark beside it, the prototype, the cold start.
# One call of about six minutes. .gpu-run as session-s38.sh says, plus
# .gpu-run/sp from `bash benches/sppark/build.sh .gpu-run/sp`. Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s38b}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
for t in vs_cpu declines; do
    echo "== $t" | tee -a "$L"
    timeout 300 $B/$t --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
done
echo "== conformance_cuda, every group" | tee -a "$L"
timeout 400 $B/conformance_cuda --test-threads 1 2>&1 | grep -E "FAIL|test result|cases|^test " | tee -a "$L"
echo "== conformance ntt, KILN_CONFORMANCE_MAX_LOG=20" | tee -a "$L"
KILN_CONFORMANCE_MAX_LOG=20 timeout 240 $B/conformance_cuda ntt --test-threads 1 2>&1 \
    | grep -E "FAIL|test result|passed|failed" | tail -3 | tee -a "$L"
L="$OUT/bench.log"
for round in 1 2; do
    for on in 0 1; do
        W=$(mktemp -d)
        echo "== ntt_io prep 20 64, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
        KILN_CUDA_NTT_WARP=$on timeout 120 $B/ntt_io prep "$W" 20 64 2>&1 | grep -E "ntt " | tee -a "$L"
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
OUT=$OUT timeout 240 bash benches/sppark/run.sh $B/sp 2>&1 | tail -12 | tee -a "$L"
L="$OUT/cold.log"
for on in 0 1; do
    d=$(mktemp -d)
    echo "== cold kiln prove chain 2^20 cycles, empty caches, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
    KILN_CUDA_NTT_WARP=$on KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py \
        $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cuda --out /tmp/cold-$on.proof | tee -a "$L"
    rm -rf "$d"
done
cmp /tmp/cold-0.proof /tmp/cold-1.proof && echo "proofs identical" | tee -a "$L"
OUT=$OUT timeout 200 bash benches/ntt-proto/run.sh "8 2" >/dev/null 2>&1
tail -8 "$OUT/ntt-proto.log"
