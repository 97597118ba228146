#!/usr/bin/env bash
# Where a prove's time goes after the main round: the device timeline by
# stage, and every kernel's own duration under Nsight Compute (one prove
# of the degree-3 AIR, 2^20 x 64, blowup 4, each hash, pinned trace).
# .gpu-run as docs/gpu/logs/s39/README.md says. Logs in $OUT.
OUT=${OUT:-/tmp/s40a}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
L="$OUT/timeline.log"
heading "$L" $B
for h in blake3 keccak; do
    echo "== prove_air 20 64 4 $h cuda 3 pinned, KILN_CUDA_TIMELINE=1" | tee -a "$L"
    KILN_CUDA_TIMELINE=1 timeout 120 $B/prove_air 20 64 4 $h cuda 3 pinned 2>&1 | tee -a "$L"
done
for h in blake3 keccak; do
    echo "== ncu prove_air 20 64 4 $h cuda 2 pinned" | tee -a "$L"
    timeout 240 $NCU --clock-control none --metrics gpu__time_duration.sum --csv \
        $B/prove_air 20 64 4 $h cuda 2 pinned > "$OUT/ncu-$h.csv" 2> "$OUT/ncu-$h.err"
    echo "rc $? lines $(wc -l < "$OUT/ncu-$h.csv")" | tee -a "$L"
done
