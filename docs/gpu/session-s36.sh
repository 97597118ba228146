#!/usr/bin/env bash
# session-s34.sh's calls cut to one device call of about five minutes,
# for a session whose device time was mostly spent waiting for a machine:
# `kiln serve`'s walls first (issue 11), then the leaves under the upload
# timed against the extension committed once complete and checked where
# they differ (upload_commit, the Merkle and proof groups), then the
# device timeline of both hashes' proves. Binaries as session-s34.sh says.
set -uo pipefail
OUT=${OUT:-/tmp/s36}
mkdir -p "$OUT"
B=.gpu-run
bash docs/gpu/session-s34.sh serve
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/bench.log"
for h in blake3 keccak; do for p in pageable pinned; do for under in 0 1 0 1; do
    echo "== prove_air 20 64 4 $h cuda 6 $p, KILN_CUDA_LEAVES_UNDER_UPLOAD=$under" | tee -a "$L"
    KILN_CUDA_LEAVES_UNDER_UPLOAD=$under timeout 60 $B/prove_air 20 64 4 $h cuda 6 $p 2>&1 \
        | grep -E "main commit|rounds:|prove:|verify" | tee -a "$L"
done; done; done
L="$OUT/check.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 120 $B/vs_cpu upload_commit --test-threads 1 2>&1 | grep -E "^test |test result|panicked" | tee -a "$L"
for g in merkle stark_proofs; do
    echo "== conformance $g, KILN_CUDA_LEAVES_UNDER_UPLOAD=1" | tee -a "$L"
    KILN_CUDA_LEAVES_UNDER_UPLOAD=1 timeout 120 $B/conformance_cuda $g --test-threads 1 2>&1 \
        | grep -E "FAIL|test result|passed|failed" | tail -4 | tee -a "$L"
done
L="$OUT/bench.log"
for h in blake3 keccak; do
    echo "== prove_air 20 64 4 $h cuda 3 pageable, KILN_CUDA_TIMELINE=1" | tee -a "$L"
    KILN_CUDA_TIMELINE=1 timeout 60 $B/prove_air 20 64 4 $h cuda 3 2>&1 | grep -vE "^(cubic|trace generation|proof size)" | tee -a "$L"
done
echo "== kiln prove chain.kasm --input 262142,3 --backend cuda --timings (warm caches)" | tee -a "$L"
$B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cuda --timings --out /tmp/chain.proof 2>&1 \
    | grep -E "^(stages|rounds|device|memory|total)|^  [a-zA-Z]" | tee -a "$L"
