#!/usr/bin/env bash
# Where a held device starts to beat the CPU: `kiln serve --backend cuda`
# proves the chain program at growing sizes and the default program, each
# three times with `--backend cpu` and three with `--backend cuda` (both
# served, so neither pays a device's start), each client process timed
# whole (wall.py). Binaries as session-s34.sh says; logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/crossover}
mkdir -p "$OUT"
L="$OUT/crossover.log" S=/tmp/kiln-cross.sock
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
echo "== $(cat $B/commit); $(nvidia-smi -L | head -1); $(nproc) cores" | tee -a "$L"
$B/kiln serve --socket $S --backend cuda 2>>"$L" &
server=$!
for i in $(seq 600); do [ -S $S ] && break; sleep 0.1; done
# A first prove of each backend compiles and warms what the rest reuse.
$B/kiln prove --server $S --backend cuda --out /tmp/w.proof >/dev/null 2>&1
$B/kiln prove --server $S --backend cpu --out /tmp/w.proof >/dev/null 2>&1
for n in 16 60 250 1000 4000 16000 64000; do
    for b in cpu cuda cpu cuda cpu cuda; do
        echo "chain $n,3 $b $(python3 docs/gpu/wall.py $B/kiln prove vm/examples/chain.kasm --input $n,3 --server $S --backend $b --out /tmp/x.proof)" | tee -a "$L"
    done
done
for b in cpu cuda cpu cuda cpu cuda; do
    echo "default $b $(python3 docs/gpu/wall.py $B/kiln prove --server $S --backend $b --out /tmp/x.proof)" | tee -a "$L"
done
kill $server
