#!/usr/bin/env bash
# The CPU LDE with the inverse transform's last layers run inside the
# forward transform's spread (one pass over the coefficients fewer where
# the chunks line up: blowup 2 at 2^20 and 2^18) on the host's 16 cores:
# e892d91's vs_plonky3 (.gpu-run/vs_plonky3-v4) alternated with this
# session's (.gpu-run/vs_plonky3-new), both RUSTFLAGS target-cpu x86-64-v4.
# Three rounds of the LDE at blowups 2, 4 and 8, then 2^18 at blowup 2.
# Logs in $OUT.
OUT=${OUT:-/tmp/s42a}
mkdir -p "$OUT"
B=.gpu-run
L="$OUT/lde.log"
echo "== $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)" | tee -a "$L"
for round in 1 2 3; do
    for v in v4 new; do
        echo "== $v round $round: vs_plonky3 --lde 20 --blowups 2,4,8 --only lde --reps 3" | tee -a "$L"
        timeout 150 $B/vs_plonky3-$v --lde 20 --blowups 2,4,8 --only lde --reps 3 2>&1 | grep "^| coset" | tee -a "$L"
    done
done
for v in v4 new; do
    echo "== $v: vs_plonky3 --lde 18 --blowups 2 --only lde --reps 5" | tee -a "$L"
    timeout 60 $B/vs_plonky3-$v --lde 18 --blowups 2 --only lde --reps 5 2>&1 | grep "^| coset" | tee -a "$L"
done
