#!/usr/bin/env bash
# At the commit that takes the warp NTT below 1.2 ms: sppark beside
# Kiln's NTT and LDE, the proof path, and the cold start with the warp
# module off and on. .gpu-run as session-s38b.sh says (with sp). Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s38e}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/bench.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
OUT=$OUT timeout 240 bash benches/sppark/run.sh $B/sp 2>&1 | tail -8 | tee -a "$L"
for mode in pageable pinned; do
    for h in blake3 keccak; do
        echo "== prove_air 20 64 4 $h cuda 6 $mode" | tee -a "$L"
        timeout 120 $B/prove_air 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
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
