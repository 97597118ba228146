#!/usr/bin/env bash
# End-to-end CPU vs CUDA on the 2^20-cycle program, warm and side by side
# in one process (A B B A), with the GPU busy fraction sampled by
# nvidia-smi during back-to-back CUDA proves; then the per-op, decline and
# VM byte-equality checks again. Binaries in .gpu-bin; logs in $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=.gpu-bin; export KILN_CACHE_DIR=/tmp/kiln-cache
log() { echo "== $*" | tee -a "$OUT/e2e.log"; }
log "chain 2^20 cycles: CPU (16 cores) vs CUDA, warm, A B B A x 2, then 10 CUDA proves sampled"
nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader -lms 50 > "$OUT/util.csv" &
SMI=$!
KILN_LOOP_CUDA=10 $B/prove_vm vm/examples/chain.kasm 262142,3 2 2>&1 | tee -a "$OUT/e2e.log"
kill $SMI
python3 - "$OUT" <<'PY' | tee -a "$OUT/e2e.log"
import sys, datetime, re
out = sys.argv[1]
win = re.search(r"loop window \(unix\): ([0-9.]+) ([0-9.]+)", open(out + "/e2e.log").read())
t0, t1 = float(win.group(1)), float(win.group(2))
samples = []
for line in open(out + "/util.csv"):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < 2 or not parts[1].split()[0].isdigit():
        continue
    ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
    samples.append((ts, int(parts[1].split()[0])))
inside = [u for ts, u in samples if t0 <= ts <= t1]
print(f"GPU busy (nvidia-smi utilization.gpu, share of time a kernel ran) during the CUDA loop: "
      f"{sum(inside) / max(len(inside), 1):.1f}% over {len(inside)} samples of {t1 - t0:.2f} s")
PY
log "per-op checks and declines after the upload change"
$B/vs_cpu --test-threads=3 2>&1 | tail -2 | tee -a "$OUT/e2e.log"
$B/declines --test-threads=3 2>&1 | tail -2 | tee -a "$OUT/e2e.log"
log "VM examples through kiln: CUDA bytes == CPU bytes"
ex() { case $1 in fibonacci) echo 100;; factorial) echo 20;; matmul) echo 6;; chain) echo 1000,3;; esac; }
for p in fibonacci factorial matmul chain; do for h in blake3 keccak; do
  $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --hash $h --backend cpu --out /tmp/cpu.proof > /dev/null
  $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --hash $h --backend cuda --out /tmp/gpu.proof > /dev/null
  if cmp -s /tmp/cpu.proof /tmp/gpu.proof && $B/kiln verify /tmp/gpu.proof > /dev/null; then r=identical+verified; else r=DIFFERENT; fi
  echo "$p $h: $r" | tee -a "$OUT/e2e.log"
done; done
log "upload/download bandwidth"
$B/cuda_bench 2>&1 | grep -E "upload|download" | tee -a "$OUT/e2e.log"
