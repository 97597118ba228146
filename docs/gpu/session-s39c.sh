#!/usr/bin/env bash
# Issue 14's GPU rows in one call, at the session's last commit: every
# vs_cpu, declines and conformance test; the NTT and LDEs beside sppark;
# Keccak's leaves beside ICICLE; both hashes' commitments (main_round);
# the whole prove, both hashes, pageable and pinned, twice; the cold
# start. .gpu-run as docs/gpu/logs/s39/README.md says (with sp and
# icicle). Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s39c}
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
            echo "== prove_air 20 64 4 $h cuda 6 $mode" | tee -a "$L"
            timeout 120 $B/prove_air 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
        done
    done
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
