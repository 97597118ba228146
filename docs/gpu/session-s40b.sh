#!/usr/bin/env bash
# Nsight Compute's memory and occupancy sections for the kernels that
# hold a prove after its main round (one pinned BLAKE3 prove of the
# degree-3 AIR, 2^20 x 64, blowup 4; the second prove's launches).
# .gpu-run as docs/gpu/logs/s39/README.md says. Logs in $OUT.
OUT=${OUT:-/tmp/s40b}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
K='regex:^(lincomb|bary_partial|bary_weights|kiln_compose|ntt_pass|deep_accum|fri_fold)$'
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,sm__inst_executed.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
timeout 400 $NCU --clock-control none -k "$K" --launch-skip 32 --metrics $M --csv \
    $B/prove_air 20 64 4 blake3 cuda 2 pinned > "$OUT/ncu-metrics.csv" 2> "$OUT/ncu-metrics.err"
echo "rc $? lines $(wc -l < "$OUT/ncu-metrics.csv")"
