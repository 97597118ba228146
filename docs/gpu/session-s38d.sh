#!/usr/bin/env bash
# ntt_warp with all of a thread's tile loads in flight: its checks, its
# time beside the previous build's (.gpu-run/ntt_io_9cca9a1) and the
# shared-memory passes, alternated; then the prototype at the backend's
# block shape and two others (4 warps x 4 blocks, 16 x 1) for its kernels.
# .gpu-run as session-s38b.sh says, without sp. Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s38d}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/check.log"
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 240 $B/vs_cpu warp_ntt ntt_and_intt --test-threads 1 2>&1 | grep -E "^test |test result|panicked|differ" | tee -a "$L"
for g in ntt coset_lde properties stark_proofs vm_proofs; do
    max=14; [ $g = ntt ] && max=20
    echo "== conformance $g, KILN_CONFORMANCE_MAX_LOG=$max" | tee -a "$L"
    KILN_CONFORMANCE_MAX_LOG=$max timeout 240 $B/conformance_cuda $g --test-threads 1 2>&1 \
        | grep -E "FAIL|test result|passed|failed" | tail -3 | tee -a "$L"
done
L="$OUT/bench.log"
for round in 1 2 3; do
    for run in "ntt_io 0" "ntt_io_9cca9a1 1" "ntt_io 1"; do
        read -r bin on <<<"$run"
        W=$(mktemp -d)
        echo "== $bin prep 20 64, KILN_CUDA_NTT_WARP=$on" | tee -a "$L"
        KILN_CUDA_NTT_WARP=$on timeout 120 $B/$bin prep "$W" 20 64 2>&1 | grep -E "ntt " | tee -a "$L"
        rm -rf "$W"
    done
done
OUT=$OUT timeout 300 bash benches/ntt-proto/run.sh "8 2" "8 2 -DNW_WARPS=4 -DNW_MINB=4" "8 2 -DNW_WARPS=16 -DNW_MINB=1" >/dev/null 2>&1
grep -E "^--|no scratch|tiled:" "$OUT/ntt-proto.log"
