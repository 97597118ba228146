#!/usr/bin/env bash
# Session 39's first call: session-s38h.sh's checks of 81b682c (the LDE's
# own module, 69c1316 and the cleanups; the cold start), then where the
# backend's warp LDE spends what its kernels do not: lde.sh (the kernels
# alone, built with nvcc) beside ntt_io (the backend's call, event-timed),
# and each LDE launch's duration under ncu, and under nsys where it is
# installed. .gpu-run as session-s38b.sh says (with sp). Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s39a}
mkdir -p "$OUT"
OUT=$OUT bash docs/gpu/session-s38h.sh
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
OUT=$OUT timeout 240 bash benches/ntt-proto/lde.sh >/dev/null 2>&1
L="$OUT/lde.log"
W=$(mktemp -d)
echo "== ntt_io prep 20 64 (backend, events)" | tee -a "$L"
timeout 120 $B/ntt_io prep "$W" 20 64 2>&1 | grep -E "kiln " | tee -a "$L"
echo "== tools: $(command -v ncu) $(command -v nsys) $(ls /usr/local/cuda/bin | tr '\n' ' ')" | tee -a "$L"
timeout 240 ncu --clock-control none -k regex:ntt_warp --csv --metrics gpu__time_duration.sum \
    $B/ntt_io prep "$W" 20 64 > "$OUT/ncu.csv" 2>&1
grep -c ntt_warp "$OUT/ncu.csv" | tee -a "$L"
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
    timeout 200 "$NSYS" profile -o /tmp/lde-nsys --force-overwrite true $B/ntt_io prep "$W" 20 64 >/dev/null 2>&1
    "$NSYS" stats --report cuda_gpu_trace,cuda_api_trace --format csv -o "$OUT/nsys" /tmp/lde-nsys.nsys-rep >/dev/null 2>&1
    ls "$OUT" | tee -a "$L"
fi
rm -rf "$W"
