#!/usr/bin/env bash
# The warp LDE's kernels in their own module (cold start), checked and
# timed beside sppark in one short call. .gpu-run as session-s38b.sh says
# (with sp). Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s38h}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 200 $B/vs_cpu warp lde upload --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
for g in ntt coset_lde stark_proofs vm_proofs; do
    max=14; [ $g = ntt ] || [ $g = coset_lde ] && max=20
    echo "== conformance $g, KILN_CONFORMANCE_MAX_LOG=$max" | tee -a "$L"
    KILN_CONFORMANCE_MAX_LOG=$max timeout 200 $B/conformance_cuda $g --test-threads 1 2>&1 \
        | grep -E "FAIL|test result|passed|failed" | tail -3 | tee -a "$L"
done
L="$OUT/cold.log"
for on in 0 1 0 1; do
    d=$(mktemp -d)
    echo "== cold kiln prove chain 2^20 cycles, empty caches, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
    KILN_CUDA_NTT_WARP=$on KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py \
        $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cuda --out /tmp/cold-$on.proof | tee -a "$L"
    rm -rf "$d"
done
cmp /tmp/cold-0.proof /tmp/cold-1.proof && echo "proofs identical" | tee -a "$L"
L="$OUT/bench.log"
OUT=$OUT timeout 200 bash benches/sppark/run.sh $B/sp 2>&1 | grep -E "^\|" | tee -a "$L"
