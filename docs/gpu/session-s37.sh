#!/usr/bin/env bash
# The warp-register NTT in the CUDA backend (kernels-cuda's ntt_warp,
# KILN_CUDA_NTT_WARP=1; off by default until this passes): its checks on
# the GPU, then its time against the shared-memory passes, then the cold
# start with it on. One call of about three minutes. Binaries in .gpu-run
# built at the commit under test, as session-s34.sh describes, plus
# `ntt_io` (cargo build --release -p benches --features cuda --example
# ntt_io). Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s37}
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
L="$OUT/warp-cold.log"
for on in 0 1; do
    d=$(mktemp -d)
    echo "== cold kiln prove chain 2^20 cycles, empty caches, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
    KILN_CUDA_NTT_WARP=$on KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py \
        $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cuda --out /tmp/cold-$on.proof | tee -a "$L"
    rm -rf "$d"
done
cmp /tmp/cold-0.proof /tmp/cold-1.proof && echo "proofs identical" | tee -a "$L"
