#!/usr/bin/env bash
# Keccak-f's theta as one three-input XOR a lane half (kernels-cuda
# keccak.cuh): checked (every vs_cpu test, every conformance group), then
# timed against the kernel before it in one call: the permutation and the
# leaves beside ICICLE's (benches/keccak-peer), the commitment of a 2^21 x
# 64 LDE (main_round), the whole prove (prove_air). .gpu-run holds the
# binaries of 81b682c and keccak_81b682c.cuh, .gpu-run/new those of the
# change (built and stripped as docs/gpu/build.sh builds them), .gpu-run/icicle as
# benches/keccak-peer/run.sh says. Logs in $OUT.
OUT=${OUT:-/tmp/s39b}
source "$(dirname "$0")/calls.sh"
OLD=.gpu-run
NEW=.gpu-run/new
heading "$OUT/check.log" $NEW
checks "$OUT/check.log" $NEW vs_cpu declines conformance_cuda
L="$OUT/bench.log"
for round in 1 2; do
    echo "== keccak-peer, 81b682c's keccak.cuh" | tee -a "$L"
    NVCC_FLAGS="-DKILN_KECCAK=\"$(realpath $OLD/keccak_81b682c.cuh)\"" timeout 120 bash benches/keccak-peer/run.sh .gpu-run/icicle 21 16 2>&1 | tee -a "$L"
    echo "== keccak-peer, the change" | tee -a "$L"
    timeout 120 bash benches/keccak-peer/run.sh .gpu-run/icicle 21 16 2>&1 | tee -a "$L"
done
for lb in 1 2; do
    for b in $OLD $NEW $OLD $NEW; do
        echo "== $(cat $b/commit): main_round 20 64 $lb keccak 9" | tee -a "$L"
        timeout 120 $b/main_round 20 64 $lb keccak 9 2>&1 | grep -E "commit of the LDE|the round" | tee -a "$L"
    done
done
for mode in pageable pinned; do
    for b in $OLD $NEW $OLD $NEW; do
        echo "== $(cat $b/commit): prove_air 20 64 4 keccak cuda 6 $mode" | tee -a "$L"
        timeout 120 $b/prove_air 20 64 4 keccak cuda 6 $mode 2>&1 | grep -E "rounds|prove:|verify" | tee -a "$L"
    done
done
