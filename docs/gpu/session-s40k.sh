#!/usr/bin/env bash
# Composition's generated kernels with every trace read first
# (.gpu-run/new) against 9d1e4f9 (.gpu-run): the compose and
# split_quotient conformance groups on the new build; compose_kernels
# (the generated kernel against the interpreter, their outputs compared,
# for the VM's tables and the stark examples at 2^20 rows, blowup 4)
# alternated; the cubic AIR's prove alternated. Logs in $OUT.
OUT=${OUT:-/tmp/s40k}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
N=.gpu-run/new
heading "$OUT/check.log" $N
conformance "$OUT/check.log" $N 14 compose split_quotient
for round in 1 2; do
    for build in $B $N; do
        echo "== $(basename $build) compose_kernels 20 2" | tee -a "$OUT/bench.log"
        timeout 200 $build/compose_kernels 20 2 2>&1 | tee -a "$OUT/bench.log"
    done
done
proves "$OUT/bench.log" pinned "blake3 keccak" $B $N
