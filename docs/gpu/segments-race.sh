#!/usr/bin/env bash
# Hunting a nondeterminism seen once on one H200 with 3 segments in flight
# (a segment's phase-2 main commitment differed from its phase 1, which
# kiln refuses): many runs of the 2^24-cycle run at --jobs 4, with and
# without huge-page traces, then with the race detector. Log: $OUT/race.log
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache
C="vm/examples/chain.kasm --input 4194302,3 --segment-cycles 2^20 --backend cuda"
exec > >(tee "$OUT/race.log") 2>&1
cat .gpu-bin/commit
.gpu-bin/kiln prove $C --jobs 1 --out /tmp/ref.proof > /dev/null && echo "reference made"
try() { # label env...
  local label=$1; shift
  local ok=0 bad=0 diff=0
  for i in $(seq 1 "$N"); do
    if env "$@" timeout 60 .gpu-bin/kiln prove $C --jobs 4 --out /tmp/t.proof > /tmp/t.log 2>&1; then
      ok=$((ok+1)); cmp -s /tmp/t.proof /tmp/ref.proof || diff=$((diff+1))
    else bad=$((bad+1)); tail -1 /tmp/t.log; fi
  done
  echo "$label: $N runs, $ok succeeded ($diff with other bytes), $bad refused"
}
if [ -x .gpu-bin/scratch_det ]; then .gpu-bin/scratch_det; fi   # host traces, 4 threads at once
N=${N1:-12} try "jobs 4, huge-page traces" KILN_CPU_NO_HUGEPAGES=0
N=${N2:-12} try "jobs 4, 4 KiB pages" KILN_CPU_NO_HUGEPAGES=1
N=${N3:-4} try "jobs 4, huge-page traces, race detector" KILN_CPU_NO_HUGEPAGES=0 KILN_CUDA_DEBUG_RACES=1
N=${N4:-6} try "jobs 4, huge-page traces, one CUDA stream" KILN_CPU_NO_HUGEPAGES=0 KILN_CUDA_STREAMS=1
# Whole runs, 16 proofs 4 at a time on the device: every repeat's bytes equal
for i in 1 2; do timeout 120 .gpu-bin/kiln prove vm/examples/chain.kasm --input 262142,3 --repeat 16 --jobs 4 --backend cuda 2>&1 | tail -4; done
