#!/usr/bin/env bash
# The warp-register NTT (kernels-cuda's ntt_warp, KILN_CUDA_NTT_WARP=1)
# with its inner twiddles from a 1024-word table and one pair of kernels
# for both directions: its checks on the GPU, its time against the
# shared-memory passes, the proof path with it off and on, the cold start,
# and the standalone prototype beside it. One call of about four minutes.
# Binaries in .gpu-run built at the commit under test, as session-s34.sh
# describes, plus `ntt_io` (--example ntt_io). Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s38}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/warp-check.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 240 $B/vs_cpu warp_ntt ntt_and_intt --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
# The ntt group up to 2^20 rows (the warp path's only height; CI stops at 2^14).
for g in ntt coset_lde properties stark_proofs vm_proofs; do
    max=14; [ $g = ntt ] && max=20
    echo "== conformance $g, KILN_CUDA_NTT_WARP=1, KILN_CONFORMANCE_MAX_LOG=$max" | tee -a "$L"
    KILN_CUDA_NTT_WARP=1 KILN_CONFORMANCE_MAX_LOG=$max timeout 240 $B/conformance_cuda $g --test-threads 1 2>&1 \
        | grep -E "FAIL|test result|passed|failed" | tail -4 | tee -a "$L"
done
L="$OUT/warp-bench.log"
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
L="$OUT/warp-cold.log"
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
