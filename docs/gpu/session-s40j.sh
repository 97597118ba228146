#!/usr/bin/env bash
# Issue 14's GPU rows in one call at the session's last code commit, as
# session-s39c.sh, with f0ea7ff's prove_air (.gpu-run/base) alternated
# with this build's in the prove rows. .gpu-run as
# docs/gpu/logs/s40/README.md says (with sp, icicle and base). Logs in
# $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s40j}
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
for g in split_quotient deep; do
    echo "== conformance $g, KILN_CONFORMANCE_MAX_LOG=22" | tee -a "$L"
    KILN_CONFORMANCE_MAX_LOG=22 timeout 300 $B/conformance_cuda $g --test-threads 1 2>&1 | grep -E "FAIL|test result|cases" | tee -a "$L"
done
L="$OUT/bench.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
OUT=$OUT timeout 240 bash benches/sppark/run.sh $B/sp 2>&1 | grep -E "^\|" | tee -a "$L"
for round in 1 2; do
    timeout 120 bash benches/keccak-peer/run.sh $B/icicle 21 16 2>&1 | grep -E "^\|" | tee -a "$L"
done
for h in keccak blake3; do
    for lb in 1 2; do
        echo "== main_round 20 64 $lb $h 9" | tee -a "$L"
        timeout 120 $B/main_round 20 64 $lb $h 9 2>&1 | grep -E "commit of the LDE" | tee -a "$L"
    done
done
for round in 1 2; do
    for mode in pageable pinned; do
        for h in blake3 keccak; do
            for v in $B/base $B; do
                echo "== $(cat $v/commit) prove_air 20 64 4 $h cuda 6 $mode" | tee -a "$L"
                timeout 120 $v/prove_air 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
            done
        done
    done
done
for v in $B/base $B; do
    echo "== $(cat $v/commit) prove_air 20 64 4 blake3 cuda 3 pinned, KILN_CUDA_TIMELINE=1" | tee -a "$L"
    KILN_CUDA_TIMELINE=1 timeout 120 $v/prove_air 20 64 4 blake3 cuda 3 pinned 2>&1 | grep -E "^  [a-z-]+ +[0-9]+ ops|timeline" | tee -a "$L"
done
L="$OUT/cold.log"
for round in 1 2; do
    d=$(mktemp -d)
    echo "== cold kiln prove chain 2^20 cycles, empty caches" | tee -a "$L"
    KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py \
        $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cuda --out /tmp/cold-$round.proof | tee -a "$L"
    rm -rf "$d"
done
cmp /tmp/cold-1.proof /tmp/cold-2.proof && echo "proofs identical" | tee -a "$L"
