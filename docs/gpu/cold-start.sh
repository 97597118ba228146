#!/usr/bin/env bash
# `kiln prove` with empty kernel caches (ours and the driver's, fresh per
# run) for each binary in $KILNS, then the cold NVRTC time of every
# generated and static kernel one at a time (`kernel_compile`), and the
# composition kernels' run time and cold compile per AIR, checked against
# the interpreter (`compose_kernels`). Binaries in ${B:-.gpu-bin}; logs in
# $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-bin}
L="$OUT/cold-start.log"
log() { echo "== $*" | tee -a "$L"; }
CHAIN="vm/examples/chain.kasm --input 262142,3"
log "$(cat $B/commit 2>/dev/null) on $(nproc) cores; $(nvidia-smi -L | head -1)"
for K in ${KILNS:-kiln}; do
  log "$K: chain 2^20 --backend cuda, empty kernel caches, 3 runs (wall, peak RSS, the process's stages)"
  for i in 1 2 3; do
    d=$(mktemp -d); KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py $B/$K prove $CHAIN --backend cuda --out /tmp/$K.proof | tee -a "$L"
  done
  d=$(mktemp -d); KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv $B/$K prove $CHAIN --backend cuda --out /tmp/$K.proof --timings | grep "^device" | tee -a "$L"
done
# NVRTC's machine code is also cached under CUDA_CACHE_PATH: a fresh one each.
log "every kernel, cold, one at a time"
CUDA_CACHE_PATH=$(mktemp -d) $B/kernel_compile | tee -a "$L"
log "composition: generated (in parts) vs interpreted, 2^20 rows at blowup 4"
d=$(mktemp -d); KILN_CACHE_DIR=$d CUDA_CACHE_PATH=$d/nv $B/compose_kernels 20 2 | tee -a "$L"
