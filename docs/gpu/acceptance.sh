#!/usr/bin/env bash
# The GPU acceptance run of the CUDA backend: kernels through NVRTC, every op
# against the CPU reference, decline recovery, the conformance suite, VM
# proofs CPU vs CUDA byte for byte (and cross-checked), the end-to-end ratio
# with the GPU busy fraction, per-stage time against the floor, composition
# generated vs interpreted, the NTT's arithmetic floor and the NTT launch
# shapes. Run on the GPU machine from the repository root with the binaries
# built here in .gpu-bin (see RESULTS.md); logs go to $OUT (or ./gpu-out).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=.gpu-bin; export KILN_CACHE_DIR=/tmp/kiln-cache
log() { echo "== $*" | tee -a "$OUT/summary.log"; }

log "commit $(cat docs/gpu/.commit 2>/dev/null)"; nvidia-smi -L | tee -a "$OUT/summary.log"; nproc | tee -a "$OUT/summary.log"
$B/kiln devices | tee -a "$OUT/summary.log"
log "kernels through NVRTC (sm_80, sm_90, sm_120)"
$B/nvrtc_ptx 2>&1 | tail -3 | tee -a "$OUT/summary.log"
log "every op against the CPU reference, 1 row to 2^22 rows"
KILN_CUDA_TEST_MAX_LOG=22 $B/vs_cpu --test-threads=2 2>&1 | grep -E "^test |test result" | tee -a "$OUT/summary.log"
log "decline sites: once / sticky+recompute / sticky+strict, and a real pool-capped decline"
$B/declines --nocapture --test-threads=3 > "$OUT/declines.log" 2>&1; grep -E "^test |test result" "$OUT/declines.log" | tee -a "$OUT/summary.log"
log "conformance suite, up to 2^20 rows"
KILN_CONFORMANCE_MAX_LOG=20 $B/conformance_cuda --test-threads 1 > "$OUT/conformance.log" 2>&1
grep -E "^test |test result|cases:" "$OUT/conformance.log" | tee -a "$OUT/summary.log"

log "end to end (docs/gpu/e2e.sh): chain at 2^20 cycles, CPU (16 cores) vs CUDA, A B B A x 2, GPU busy; VM examples byte for byte"
OUT=$OUT bash docs/gpu/e2e.sh > /dev/null 2>&1; cat "$OUT/e2e.log" >> "$OUT/summary.log"
grep -E "ratio|busy|identical|DIFFERENT|^cpu |^cuda " "$OUT/e2e.log"
log "cross-check on every VM example"
ex() { case $1 in fibonacci) echo 100;; factorial) echo 20;; matmul) echo 6;; chain) echo 1000,3;; esac; }
for p in fibonacci factorial matmul chain; do
  $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --backend cuda --cross-check --out /tmp/x.proof 2>&1 | grep -E "options|verified|error|mismatch" | sed "s/^/$p cross-check: /" | tee -a "$OUT/summary.log"
done

log "per-stage GPU time vs floor (2^20 x 64)"
$B/cuda_bench > "$OUT/bench.log" 2>&1; tail -32 "$OUT/bench.log" | tee -a "$OUT/summary.log"
log "composition: generated vs interpreted kernel"
$B/compose_kernels 20 2 > "$OUT/compose.log" 2>&1; tee -a "$OUT/summary.log" < "$OUT/compose.log"
log "the NTT's arithmetic floor (registers only)"
python3 docs/gpu/arith_bound.py > "$OUT/arith.log" 2>&1; tee -a "$OUT/summary.log" < "$OUT/arith.log"
log "NTT launch shapes (docs/gpu/ntt-tuning.sh)"
{ bash docs/gpu/ntt-tuning.sh; bash docs/gpu/ntt-tuning.sh grid2; } > "$OUT/ntt-tuning.log" 2>&1
grep -c "^==" "$OUT/ntt-tuning.log" | sed 's/^/configurations: /' | tee -a "$OUT/summary.log"
