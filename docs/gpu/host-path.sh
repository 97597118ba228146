#!/usr/bin/env bash
# kiln prove as its user runs it (whole process, start to exit): the
# 2^20-cycle program on CUDA with warm and with empty kernel caches (ours
# and the driver's), on the CPU with peak RSS, the embedded default program
# on auto, cpu and cuda, trace generation at 1 to 16 threads, the auto
# crossover, and CPU vs CUDA proof bytes. Binaries in .gpu-bin
# (docs/gpu/build.sh); logs in $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=.gpu-bin; export KILN_CACHE_DIR=/tmp/kiln-cache
L="$OUT/host-path.log"
log() { echo "== $*" | tee -a "$L"; }
w() { python3 docs/gpu/wall.py "$@" | tee -a "$L"; }
med() { sort -n | awk '{a[NR]=$1} END {print "median of " NR ": " a[int((NR+1)/2)] " s"}' | tee -a "$L"; }
CHAIN="vm/examples/chain.kasm --input 262142,3"

log "commit $(cat $B/commit) on $(nproc) cores; $(nvidia-smi -L | head -1)"
log "chain 2^20, --backend cuda, empty kernel caches (ours and the driver's), fresh each run"
for i in 1 2; do
  rm -rf "$KILN_CACHE_DIR"; export CUDA_CACHE_PATH=/tmp/nv-cold-$i; rm -rf "$CUDA_CACHE_PATH"
  w $B/kiln prove $CHAIN --backend cuda --out /tmp/c.proof
done
export CUDA_CACHE_PATH=/tmp/nv-warm
log "chain 2^20, --backend cuda, warm caches (one run to warm, then 5)"
w $B/kiln prove $CHAIN --backend cuda --out /tmp/c.proof > /dev/null
for i in 1 2 3 4 5; do w $B/kiln prove $CHAIN --backend cuda --out /tmp/cuda.proof; done | tee /tmp/cuda.txt | cat > /dev/null
med < /tmp/cuda.txt
$B/kiln prove $CHAIN --backend cuda --out /tmp/cuda.proof --timings | tee -a "$L"
log "chain 2^20, --backend cpu (5 runs; the second column is peak RSS in kB)"
for i in 1 2 3 4 5; do w $B/kiln prove $CHAIN --backend cpu --out /tmp/cpu.proof; done | tee /tmp/cpu.txt > /dev/null
med < /tmp/cpu.txt
cmp /tmp/cpu.proof /tmp/cuda.proof && log "chain 2^20: CPU and CUDA proof files identical" || log "chain 2^20: proofs DIFFER"
log "embedded default program (6,006 cycles), 5 runs each"
for b in auto cpu cuda; do
  for i in 1 2 3 4 5; do w $B/kiln prove --backend $b --out /tmp/d.proof; done > /tmp/d-$b.txt
  echo "--backend $b: $(med < /tmp/d-$b.txt)" | tee -a "$L"
done
log "trace generation, 2^20 cycles, by rayon threads (kiln's trace span, ms)"
for t in 1 2 4 8 16; do
  ms=$(RAYON_NUM_THREADS=$t $B/kiln prove $CHAIN --backend cuda --json --out /tmp/t.proof | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["timings_ms"]["trace"], 1))')
  echo "threads $t: trace $ms ms" | tee -a "$L"
done
log "auto crossover: chain at 2^12 to 2^20 cycles, cpu vs cuda (median of 3 whole-process walls)"
for n in 1022 4094 8190 16382 32766 65534 131070 262142; do
  for b in cpu cuda; do
    for i in 1 2 3; do python3 docs/gpu/wall.py $B/kiln prove vm/examples/chain.kasm --input $n,3 --backend $b --out /tmp/x.proof; done > /tmp/x.txt
    echo "cycles $((4*n+8)) $b $(med < /tmp/x.txt)"
  done
done | tee -a "$L"
