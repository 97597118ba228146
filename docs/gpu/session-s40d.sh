#!/usr/bin/env bash
# bary_partial's variants under Nsight Compute, beside f0ea7ff's: vA a
# warp a column, eight columns a block; vB the old blocks, each thread
# loading its next row ahead; vC the old blocks, two rows a step, loads
# first. Then the prove, f0ea7ff against vB and vC. Logs in $OUT.
OUT=${OUT:-/tmp/s40d}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
kernel_times "lincomb|lincomb_pair|bary_partial" gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active $B $B/vA $B/vB $B/vC
proves "$OUT/bench.log" pinned blake3 $B $B/vB $B/vC
