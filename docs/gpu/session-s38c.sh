#!/usr/bin/env bash
# The warp NTT with pass A's twiddles from a table (and the inverse's scale
# on pass B): its checks, then its time beside the previous build's
# (.gpu-run/ntt_io_1dbda0c, shift products only) and the shared-memory
# passes, alternated; the proof path; sppark; the prototype; the cold
# start. .gpu-run as session-s38b.sh says. Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s38c}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 300 $B/vs_cpu --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
echo "== conformance_cuda, every group" | tee -a "$L"
timeout 400 $B/conformance_cuda --test-threads 1 2>&1 | grep -E "FAIL|test result|cases|^test " | tee -a "$L"
echo "== conformance ntt, KILN_CONFORMANCE_MAX_LOG=20" | tee -a "$L"
KILN_CONFORMANCE_MAX_LOG=20 timeout 240 $B/conformance_cuda ntt --test-threads 1 2>&1 \
    | grep -E "FAIL|test result|passed|failed" | tail -3 | tee -a "$L"
L="$OUT/bench.log"
for round in 1 2 3; do
    for run in "ntt_io 0" "ntt_io_1dbda0c 1" "ntt_io 1"; do
        read -r bin on <<<"$run"
        W=$(mktemp -d)
        echo "== $bin prep 20 64, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
        KILN_CUDA_NTT_WARP=$on timeout 120 $B/$bin prep "$W" 20 64 2>&1 | grep -E "ntt " | tee -a "$L"
        rm -rf "$W"
    done
done
for mode in pageable pinned; do
    for h in blake3 keccak; do
        echo "== prove_air 20 64 4 $h cuda 6 $mode" | tee -a "$L"
        timeout 120 $B/prove_air 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
    done
done
OUT=$OUT timeout 240 bash benches/sppark/run.sh $B/sp 2>&1 | tail -8 | tee -a "$L"
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
tail -9 "$OUT/ntt-proto.log"
