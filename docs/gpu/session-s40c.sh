#!/usr/bin/env bash
# lincomb and bary_partial with their loads ahead (.gpu-run/new) against
# f0ea7ff (.gpu-run): the new build's vs_cpu and conformance checks, each
# kernel's time under Nsight Compute, and the whole prove alternated.
# Logs in $OUT.
OUT=${OUT:-/tmp/s40c}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
N=.gpu-run/new
heading "$OUT/check.log" $N
checks "$OUT/check.log" $N vs_cpu conformance_cuda
kernel_times "lincomb|lincomb_pair|bary_partial" gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active $B $N
proves "$OUT/bench.log" "pinned pageable" blake3 $B $N
