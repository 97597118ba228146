#!/usr/bin/env bash
# The session's last code commit (.gpu-run/new): vs_cpu and every
# conformance group, and one prove of each hash (the proofs verify).
# Logs in $OUT.
OUT=${OUT:-/tmp/s40l}
source "$(dirname "$0")/calls.sh"
N=.gpu-run/new
heading "$OUT/check.log" $N
checks "$OUT/check.log" $N vs_cpu conformance_cuda
for h in blake3 keccak; do
    echo "== prove_air 20 64 4 $h cuda 3 pinned" | tee -a "$OUT/check.log"
    timeout 120 $N/prove_air 20 64 4 $h cuda 3 pinned 2>&1 | grep -E "prove:|verify" | tee -a "$OUT/check.log"
done
