#!/usr/bin/env bash
# LogUp on the device, the end-to-end ratio at this commit, the arithmetic
# floor of the NTT, and where the current NTT kernel spends its time.
# Binaries in .gpu-bin (see RESULTS.md); logs in $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=.gpu-bin; export KILN_CACHE_DIR=/tmp/kiln-cache
log() { echo "== $*" | tee -a "$OUT/run.log"; }
log "commit $(cat docs/gpu/.commit 2>/dev/null)"; nvidia-smi -L | tee -a "$OUT/run.log"
log "arithmetic floor of the NTT (registers only)"
python3 docs/gpu/arith_bound.py 2>&1 | tee -a "$OUT/run.log"
log "conformance: logup, vm_proofs, stark_proofs groups up to 2^20 rows"
KILN_CONFORMANCE_MAX_LOG=20 $B/conformance_cuda --test-threads 1 logup vm_proofs stark_proofs > "$OUT/conformance.log" 2>&1
grep -E "^test |test result|cases:" "$OUT/conformance.log" | tee -a "$OUT/run.log"
log "end to end: chain 2^20 cycles, CPU (16 cores) vs CUDA, warm, A B B A x 2, then 10 CUDA proves sampled"
OUT=$OUT bash docs/gpu/e2e.sh > /dev/null 2>&1; cat "$OUT/e2e.log" >> "$OUT/run.log"; grep -vE "^(cpu|cuda) " "$OUT/e2e.log" | head -40
grep -E "^(cpu|cuda) " "$OUT/e2e.log"
log "per-stage GPU time vs floor"
$B/cuda_bench > "$OUT/bench.log" 2>&1; cat "$OUT/bench.log" | tee -a "$OUT/run.log" | tail -30
log "ncu: the NTT passes of one 2^20 x 64 forward transform"
ncu --clock-control none --kernel-name ntt_pass --launch-count 3 --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis $B/cuda_bench > "$OUT/ncu.log" 2>&1
grep -E "ntt_pass|Throughput|Duration|Issue Slots|Executed Ipc|Busy|Bandwidth|Hit Rate|Block Size|Grid Size" "$OUT/ncu.log" | head -80 | tee -a "$OUT/run.log"
