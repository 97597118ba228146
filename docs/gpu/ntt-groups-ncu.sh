#!/usr/bin/env bash
# Measures the round kinds of 49001b1 (removed after it): run from a
# checkout of that commit.
# ncu on the two passes of one 64 x 2^20 forward NTT (ntt_io's first
# launch), radix-4 rounds against register groups of 8 and 16.
# Binaries in ${B:-.gpu-run}. Log in $OUT/ntt-groups-ncu.log.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
W=$(mktemp -d)
for r in 4 8 16; do
  echo "== KILN_CUDA_NTT_RADIX=$r: ncu, the first two pass launches"
  KILN_CUDA_NTT_RADIX=$r timeout 240 "$NCU" --clock-control none -k regex:ntt_pass --launch-count 2 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section InstructionStats --section MemoryWorkloadAnalysis_Tables --section SchedulerStats \
    $B/ntt_io prep "$W" 20 64 2>&1 | grep -vE "^==PROF==|^kiln " | grep -E "ntt_pass|Duration|Throughput|Registers|Achieved Occupancy|Theoretical Occupancy|Block Limit|Executed Ipc|Issue Slots|Warp Cycles Per Issued|Stall|stall|Bank|bank|Executed Instructions|Shared|L1/TEX Hit|L2 Hit|No Eligible|Eligible Warps|Active Warps" 
done 2>&1 | tee "$OUT/ntt-groups-ncu.log"
