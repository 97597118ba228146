#!/usr/bin/env bash
# bary_partial: vC (two rows a step, loads first) against vD (the same,
# its grid (column, slice), so that the blocks that run together share
# their weights in L2), each under Nsight Compute; the prove beside
# f0ea7ff's. Logs in $OUT.
OUT=${OUT:-/tmp/s40e}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
kernel_times "lincomb|lincomb_pair|bary_partial" gpu__time_duration.sum,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active $B/vC $B/vD
proves "$OUT/bench.log" pinned blake3 $B $B/vC $B/vD
