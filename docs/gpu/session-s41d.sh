#!/usr/bin/env bash
# The CPU LDE's chunks up to 2^17 (the largest with the fewest fused
# passes and no lone-layer pass) on the host's 16 cores: e892d91's
# vs_plonky3 (.gpu-run/vs_plonky3-v4) alternated with this session's
# (.gpu-run/vs_plonky3-new), both RUSTFLAGS target-cpu x86-64-v4: the
# coset LDE at blowups 2, 4 and 8, a round, the whole prove, a round.
# Logs in $OUT.
OUT=${OUT:-/tmp/s41d}
mkdir -p "$OUT"
B=.gpu-run
L="$OUT/lde.log"
echo "== $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)" | tee -a "$L"
lde() {
    for v in v4 new; do
        echo "== $v round $1: vs_plonky3 --lde 20 --blowups 2,4,8 --only lde --reps 3" | tee -a "$L"
        timeout 200 $B/vs_plonky3-$v --lde 20 --blowups 2,4,8 --only lde --reps 3 2>&1 | grep "^| coset" | tee -a "$L"
    done
}
# The second round last, so that a call cut short keeps one of each.
lde 1
for v in v4 new; do
    echo "== $v: vs_plonky3 --prove 20 --only prove --reps 2" | tee -a "$L"
    timeout 200 $B/vs_plonky3-$v --prove 20 --only prove --reps 2 2>&1 | grep "^| prove" | tee -a "$L"
done
lde 2
