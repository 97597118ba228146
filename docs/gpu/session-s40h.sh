#!/usr/bin/env bash
# One kernel changed (.gpu-run/new) against f0ea7ff (.gpu-run): vs_cpu
# and the deep conformance group (also at 2^20 rows a trace) on the new
# build, the kernel's time under Nsight Compute, and the prove
# alternated. Logs in $OUT.
#   bash docs/gpu/session-s40h.sh bary_weights   9d1e4f9's code: rows
#       blockDim.x apart, the twiddles read first
#   bash docs/gpu/session-s40h.sh deep_accum     deep_accum with its
#       twiddles read first (not kept)
KERNEL=${1:-bary_weights}
OUT=${OUT:-/tmp/s40h-$KERNEL}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
N=.gpu-run/new
heading "$OUT/check.log" $N
checks "$OUT/check.log" $N vs_cpu
conformance "$OUT/check.log" $N 12 deep
conformance "$OUT/check.log" $N 22 deep
kernel_times "$KERNEL" gpu__time_duration.sum $B $N
proves "$OUT/bench.log" pinned blake3 $B $N
