#!/usr/bin/env bash
# The session's kernels in one build (.gpu-run/new): lincomb four columns
# ahead, bary_partial by (column, slice) two rows a step, and the split's
# parts extended on the warp path. Its vs_cpu and conformance checks (the
# split and DEEP groups also at 2^20 rows a trace), the device timeline of
# a prove beside f0ea7ff's (.gpu-run), and the whole prove alternated,
# both hashes, pinned and pageable. Logs in $OUT.
OUT=${OUT:-/tmp/s40f}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
N=.gpu-run/new
heading "$OUT/check.log" $N
checks "$OUT/check.log" $N vs_cpu conformance_cuda
conformance "$OUT/check.log" $N 22 split_quotient deep
timelines "$OUT/bench.log" $B $N
proves "$OUT/bench.log" "pinned pageable" "blake3 keccak" $B $N
