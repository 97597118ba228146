#!/usr/bin/env bash
# The GPU acceptance run: conformance, decline recovery, VM proofs CPU vs
# CUDA byte for byte, cross-check, end-to-end speed and per-stage floors.
# Run on the GPU machine from the repository root with the binaries built
# here in .gpu-bin (see docs/gpu/README.md); logs go to $OUT (or ./gpu-out).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=.gpu-bin; export KILN_CACHE_DIR=/tmp/kiln-cache
log() { echo "== $*" | tee -a "$OUT/summary.log"; }

log "machine"; nvidia-smi -L | tee -a "$OUT/summary.log"; nproc | tee -a "$OUT/summary.log"
$B/kiln devices | tee -a "$OUT/summary.log"

log "kernels through NVRTC (sm_80, sm_90, sm_120)"
$B/nvrtc_ptx 2>&1 | tail -3 | tee -a "$OUT/summary.log"
log "every op against the CPU reference"
$B/vs_cpu --test-threads=3 2>&1 | tail -3 | tee -a "$OUT/summary.log"
log "decline sites: once / sticky+recompute / sticky+strict, and a real pool-capped decline"
$B/declines --nocapture --test-threads=3 > "$OUT/declines.log" 2>&1; tail -5 "$OUT/declines.log" | tee -a "$OUT/summary.log"

log "conformance suite, up to 2^20 rows"
KILN_CONFORMANCE_MAX_LOG=20 $B/conformance_cuda --test-threads 1 > "$OUT/conformance.log" 2>&1
grep -E "^test |test result" "$OUT/conformance.log" | tee -a "$OUT/summary.log"

log "VM examples: CUDA proof bytes == CPU proof bytes, both verify; cross-check"
ex() { case $1 in fibonacci) echo 100;; factorial) echo 20;; matmul) echo 6;; chain) echo 1000,3;; esac; }
for p in fibonacci factorial matmul chain; do
  for h in blake3 keccak; do
    $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --hash $h --backend cpu --out /tmp/cpu.proof > /dev/null || echo "cpu prove failed"
    $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --hash $h --backend cuda --out /tmp/gpu.proof > /dev/null || echo "cuda prove failed"
    if cmp -s /tmp/cpu.proof /tmp/gpu.proof && $B/kiln verify /tmp/gpu.proof > /dev/null; then r=identical+verified; else r=DIFFERENT; fi
    echo "$p $h: $r" | tee -a "$OUT/summary.log"
  done
  $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --backend cuda --cross-check --out /tmp/x.proof 2>&1 | grep -E "options|verified|error" | sed "s/^/$p cross-check: /" | tee -a "$OUT/summary.log"
done

log "end to end: chain at 2^20 cycles, CPU (all cores) vs CUDA, A B B A"
run() { $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend $1 --json --out /tmp/e2e.proof; }
run cuda > /dev/null  # warm the kernel cache
for b in cpu cuda cuda cpu; do
  run $b > "$OUT/e2e_$b.json"; python3 -c "
import json; d=json.load(open('$OUT/e2e_$b.json'))
print('$b', 'prove_ms=%.1f' % d['timings_ms']['prove'], 'total_ms=%.1f' % d['total_ms'], 'stages=' + json.dumps({k: round(v,1) for k,v in d['prover_stages_ms'].items()}))" | tee -a "$OUT/summary.log"
done
log "GPU busy fraction during back-to-back CUDA proves (nvidia-smi utilization.gpu: time a kernel was running)"
nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 50 > "$OUT/util.csv" &
SMI=$!; sleep 0.5
t0=$(date +%s.%N); for i in 1 2 3 4 5; do run cuda > "$OUT/loop_$i.json"; done; t1=$(date +%s.%N)
kill $SMI; python3 - "$OUT" "$t0" "$t1" <<'PY' | tee -a "$OUT/summary.log"
import json, sys
out, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
u = [int(x) for x in open(out + "/util.csv").read().split() if x.strip().isdigit()]
runs = [json.load(open(f"{out}/loop_{i}.json")) for i in range(1, 6)]
prove = sum(r["timings_ms"]["prove"] for r in runs) / 1e3
wall = t1 - t0
print(f"samples={len(u)} mean utilization={sum(u)/max(len(u),1):.1f}% over {wall:.2f}s of 5 kiln runs; prove is {prove:.2f}s of it ({100*prove/wall:.0f}%)")
PY

log "per-stage GPU time vs floor (2^20 x 64)"
$B/cuda_bench > "$OUT/bench.log" 2>&1; cat "$OUT/bench.log" | tee -a "$OUT/summary.log" | tail -30

log "CPU backend on this host: 2^16 x 64 and 2^20 x 64 cubic AIR"
$B/prove_air 16 64 4 blake3 | grep -E "prove:|proof size" | tee -a "$OUT/summary.log"
for h in blake3 keccak; do $B/prove_air 20 64 4 $h | grep -E "conjectured|prove:" | tee -a "$OUT/summary.log"; done
