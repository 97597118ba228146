#!/usr/bin/env bash
# Issue 12 (sharing the GPU) acceptance, on nvidia-h200-x2 (two H200s), from
# the repository root, with the binaries of docs/gpu/share-build.sh in
# .gpu-bin/. Logs in $OUT (8 files: summary.log plus one per section).
# Every section is time-boxed and the script goes on past a failing one;
# summary.log says PASS / FAIL (exit code) / SKIPPED for each. About 5
# minutes; sections stop being started after 7.
#
#  sharing  8 proofs at once x 50 rounds under a budget of half their
#           resident sets, race detector on: CPU bytes, no deadlock, no
#           race; gate waits and peak memory; a cross-checked round; a
#           budget below every proof (each runs alone)
#  races    the injected unordered free is caught, naming buffer, stage,
#           table; CUDA_VISIBLE_DEVICES changed in-process changes nothing
#  busy     single-proof time, and nvidia-smi utilization of GPU 0 over 10
#           back-to-back proves of the 2^20-cycle program (one at a time,
#           and 2 at once)
#  scale    1 vs 2 GPUs in one process (A B B A), every proof equal to the
#           one-GPU bytes; kiln batch on both GPUs with --debug-races
#           against the CPU's proof file
#  model    memory model vs the pool's high-water mark per stage: every VM
#           example and the 2^20 x 64 synthetic AIR
#  regress  every op vs the CPU (vs_cpu), decline recovery, VM examples
#           CPU vs CUDA proof files
set -uo pipefail
set -x
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
B=.gpu-bin
export KILN_CACHE_DIR=/tmp/kiln-cache RUST_BACKTRACE=1
SUMMARY="$OUT/summary.log"
STOP_AT=$((SECONDS + 420))

header() { echo; echo "==================== $* ===================="; }

# step NAME LOG TIMEOUT CMD...: runs CMD with a time limit, appends its
# output to LOG, records the verdict; never stops the script.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  local left=$((STOP_AT - SECONDS))
  { header "$name"; echo "\$ $*"; } | tee -a "$log"
  if [ "$left" -lt 15 ]; then
    echo "SKIPPED  $name (out of time)" | tee -a "$SUMMARY" "$log"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS     $name ($((SECONDS - t0)) s)" | tee -a "$SUMMARY" "$log"
  else
    echo "FAIL     $name: exit $rc$([ $rc -eq 124 ] && echo ' (timed out)') ($((SECONDS - t0)) s)" | tee -a "$SUMMARY" "$log"
  fi
  return 0
}

header "machine" | tee "$SUMMARY"
{ nvidia-smi --query-gpu=index,name,uuid,memory.total --format=csv; nproc; git log --oneline -1 2>/dev/null; ls -la $B; } 2>&1 | tee -a "$SUMMARY"
$B/kiln devices 2>&1 | tee -a "$SUMMARY"

# ---- sharing: 8 proofs at once, 50 rounds, tight budget, races checked ----
L="$OUT/sharing.log"
step "sharing: 8 x 50 proofs under a budget, race detector on" "$L" 180 \
  env KILN_SHARE_ROUNDS=50 $B/concurrency --nocapture --test-threads=1 eight_proofs_at_once
step "sharing: one round cross-checked against the CPU" "$L" 60 \
  $B/concurrency --nocapture --test-threads=1 the_same_under_the_cross_check
step "sharing: a budget below every proof (each runs alone)" "$L" 60 \
  $B/concurrency --nocapture --test-threads=1 larger_than_the_budget

# ---- races and device choice ----
L="$OUT/races.log"
step "races: injected unordered free caught and named; proofs race-free" "$L" 60 \
  $B/races --nocapture --test-threads=1
step "devices: CUDA_VISIBLE_DEVICES changed in-process changes nothing" "$L" 30 \
  $B/visible_devices --nocapture

# ---- busy: single-proof time and GPU utilization over 10 proves ----
L="$OUT/busy.log"
UTIL="$OUT/util.csv"
TZ=UTC nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -i 0 -lms 50 > "$UTIL" 2>&1 &
SMI=$!
step "busy: 2^20-cycle program, single-proof time, 10 back-to-back proves" "$L" 120 \
  $B/prove_share busy 10 2
kill $SMI 2>/dev/null
python3 - "$L" "$UTIL" <<'PY' 2>&1 | tee -a "$L" "$SUMMARY"
import datetime, re, sys
log, util = open(sys.argv[1]).read(), sys.argv[2]
samples = []
for line in open(util):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) == 2 and parts[1].isdigit():
        t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        samples.append((t.timestamp(), int(parts[1])))
single = re.search(r"single proof .*median ([0-9.]+) ms", log)
print("busy: single-proof time (warm, median of 5):", single.group(1) + " ms" if single else "not found")
for label in ["one at a time", "concurrent"]:
    m = re.search(label + r" window \(unix\): ([0-9.]+) ([0-9.]+)", log)
    if not m:
        print(f"busy: no '{label}' window in the log")
        continue
    t0, t1 = float(m.group(1)), float(m.group(2))
    inside = [u for t, u in samples if t0 <= t <= t1]
    busy = sum(inside) / max(len(inside), 1)
    print(f"busy: GPU 0 utilization over 10 proves, {label}: {busy:.1f}% ({len(inside)} samples, {t1 - t0:.2f} s)")
PY

# ---- scale: 1 vs 2 GPUs ----
L="$OUT/scale.log"
step "scale: 40 proofs on 1 GPU vs 2 GPUs, A B B A, bytes compared" "$L" 150 \
  $B/prove_share scale 40 2
rm -rf /tmp/kb && mkdir -p /tmp/kb
step "scale: CPU proof file of the 2^20-cycle program" "$L" 60 \
  $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cpu --out /tmp/kb/cpu.proof
step "scale: kiln batch of 8 on GPUs 0,1 with --debug-races" "$L" 60 \
  $B/kiln prove vm/examples/chain.kasm --input 262142,3 --repeat 8 --devices 0,1 --debug-races --out-dir /tmp/kb
step "scale: every GPU proof file equals the CPU's" "$L" 10 \
  bash -c 'n=0; for f in /tmp/kb/0*.proof; do cmp /tmp/kb/cpu.proof "$f" || exit 1; n=$((n+1)); done; echo "$n files identical"; [ $n -eq 8 ]'

# ---- model vs high-water mark ----
L="$OUT/model.log"
step "model: stage_bytes vs the pool's high-water mark" "$L" 120 \
  $B/model_check 20

# ---- regression: bytes and declines after the stream rework ----
L="$OUT/regress.log"
step "regress: every op vs the CPU (vs_cpu)" "$L" 90 \
  $B/vs_cpu --test-threads=2
step "regress: decline recovery (declines)" "$L" 120 \
  $B/declines --test-threads=2
ex() { case $1 in fibonacci) echo 100;; factorial) echo 20;; matmul) echo 6;; chain) echo 1000,3;; esac; }
vm_examples() {
  local bad=0
  for p in fibonacci factorial matmul chain; do for h in blake3 keccak; do
    $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --hash $h --backend cpu --out /tmp/cpu.proof > /dev/null || bad=1
    $B/kiln prove vm/examples/$p.kasm --input "$(ex $p)" --hash $h --backend cuda --out /tmp/gpu.proof > /dev/null || bad=1
    if cmp -s /tmp/cpu.proof /tmp/gpu.proof; then echo "$p $h: identical"; else echo "$p $h: DIFFERENT"; bad=1; fi
  done; done
  return $bad
}
export -f ex vm_examples
export B
step "regress: VM examples, CPU vs CUDA proof files" "$L" 90 bash -c vm_examples

header "summary" | tee -a "$SUMMARY"
grep -hE "^(PASS|FAIL|SKIPPED)|^busy:|rounds of 8 proofs|cross-checked round|1 MiB budget|caught:|ordinal .* is GPU|throughput 2 GPUs|proofs/s|stages within" \
  "$OUT"/sharing.log "$OUT"/races.log "$OUT"/scale.log "$OUT"/model.log 2>/dev/null | tee -a "$SUMMARY"
echo "total $SECONDS s" | tee -a "$SUMMARY"
