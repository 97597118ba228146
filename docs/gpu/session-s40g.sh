#!/usr/bin/env bash
# An opening's values and path in one round trip (.gpu-run/new, on top of
# 5d85713) against f0ea7ff (.gpu-run): vs_cpu and conformance on the new
# build, the device timeline of a prove with each, and the prove
# alternated, both hashes, pinned and pageable. Logs in $OUT.
OUT=${OUT:-/tmp/s40g}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
N=.gpu-run/new
heading "$OUT/check.log" $N
checks "$OUT/check.log" $N vs_cpu conformance_cuda
timelines "$OUT/bench.log" $B $N
proves "$OUT/bench.log" "pinned pageable" "blake3 keccak" $B $N
