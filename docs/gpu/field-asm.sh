#!/usr/bin/env bash
# Goldilocks arithmetic as PTX carry chains (field.cuh): the CUDA tests
# against the CPU and the conformance groups, then builds alternated
# (VERSIONS, default "base asm acc"): ntt_io (NTT and coset LDEs, 64 x
# 2^20, CUDA events), prove_air (cubic AIR 2^20 x 64, blowup 4) and kiln
# prove of the 2^20-cycle program (whole-process wall, warm caches, proofs
# compared); the sppark peer beside the last build; and how fast pinned
# host memory reaches the device (the trace upload's ceiling).
# PHASE=profile times every kernel of one prove with ncu instead.
# Binaries in ${B:-.gpu-run}: vs_cpu, conformance_cuda,
# {ntt_io,prove_air,kiln}-VERSION, and what benches/sppark/build.sh puts
# there. Log in $OUT/${LOG:-field-asm.log}.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/${LOG:-field-asm.log}") 2>&1
PHASE=${PHASE:-all}
VERSIONS=${VERSIONS:-base asm acc}
LAST=${VERSIONS##* }
echo "== $(nvidia-smi -L | head -1); $(nproc) cores"
if [ "$PHASE" = all ] || [ "$PHASE" = check ]; then
  echo "== vs_cpu"
  $B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
  G=${CONF_GROUPS:-ntt coset_lde compose logup deep fri_fold properties stark_proofs vm_proofs}
  echo "== conformance_cuda $G"
  $B/conformance_cuda $G --test-threads 1 2>&1 | grep -E "cases|property|test result|FAIL|panicked"
fi
if [ "$PHASE" = profile ]; then
  # Every kernel of one prove, timed by ncu (kernels serialised), per
  # kernel name: where the device time of the whole prove goes.
  for h in ${HASHES:-blake3 keccak}; do
    echo "== ncu prove_air-$LAST 20 64 4 $h cuda 1"
    /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum \
      --csv --print-summary per-kernel $B/prove_air-$LAST 20 64 4 $h cuda 1 > "$OUT/ncu-$h.csv" 2> "$OUT/ncu-$h.err"
    echo "rc $? lines $(wc -l < "$OUT/ncu-$h.csv")"; tail -3 "$OUT/ncu-$h.err"
  done
fi
if [ "$PHASE" = all ] || [ "$PHASE" = bench ]; then
  W=$(mktemp -d)
  for round in 1 2; do
    for v in $VERSIONS; do
      echo "== ntt_io-$v prep 20 64"
      $B/ntt_io-$v prep "$W" 20 64
    done
  done
  rm -rf "$W"
  for round in 1 2; do
    for v in $VERSIONS; do
      for h in blake3 keccak; do
        echo "== prove_air-$v 20 64 4 $h cuda 6"
        $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "commit|out-of-domain|rounds|prove:|verify"
      done
    done
  done
  CHAIN="vm/examples/chain.kasm --input 262142,3"
  for v in $VERSIONS; do $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof > /dev/null; done
  for round in 1 2; do
    for v in $VERSIONS; do
      echo "== kiln-$v chain 2^20 --backend cuda, warm caches, 5 runs"
      for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof; done
    done
  done
  for v in $VERSIONS; do
    cmp /tmp/${VERSIONS%% *}.proof /tmp/$v.proof && echo "== chain proof of $v identical to ${VERSIONS%% *}'s" || echo "== chain proof of $v DIFFERS"
  done
  echo "== pinned host to device, 16 MiB pieces and 512 MiB at once (cupy)"
  python3 - <<'PY'
import cupy as cp, cupyx, numpy as np
for mib in (16, 512):
    n = mib << 17
    h = cupyx.zeros_pinned(n, dtype=np.uint64); h[:] = np.arange(n, dtype=np.uint64)
    d = cp.empty(n, dtype=cp.uint64); s = cp.cuda.Stream(non_blocking=True)
    best = 1e9
    for _ in range(5):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        with s:
            e0.record(s)
            for _ in range(512 // mib): d.set(h, stream=s)
            e1.record(s)
        e1.synchronize(); best = min(best, cp.cuda.get_elapsed_time(e0, e1))
    print(f"{mib} MiB pieces: 512 MiB in {best:.2f} ms = {512 * 1.048576 / best:.1f} GB/s")
PY
  echo "== sppark peer beside $LAST"
  cp $B/ntt_io-$LAST $B/ntt_io
  bash benches/sppark/run.sh "$B" 20 64
fi
