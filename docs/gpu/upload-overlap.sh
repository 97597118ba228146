#!/usr/bin/env bash
# The trace's upload overlapped with its extension (`upload_coset_lde`):
# correctness on the H200 (the CUDA tests against the CPU, the race
# detector, decline recovery, the conformance groups that prove), then
# old and new binaries alternated: `prove_air` (cubic AIR 2^20 x 64,
# whole prove from the host trace) and `kiln prove` of the 2^20-cycle
# program (whole-process wall, warm caches). Binaries in ${B:-.gpu-run}:
# prove_air-{old,new}, kiln-{old,new}, conformance_cuda, vs_cpu, races,
# declines, concurrency (VERSIONS="a b" names other pairs). Logs in $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/upload-overlap.log"
log() { echo "== $*" | tee -a "$L"; }
run() { log "$*"; "$@" 2>&1 | grep -E "test result|passed|failed|FAIL|panicked|error" | tee -a "$L"; }
log "$(nvidia-smi -L | head -1); $(nproc) cores"
PHASE=${PHASE:-all}
read -r V1 V2 <<< "${VERSIONS:-old new}"

if [ "$PHASE" = all ] || [ "$PHASE" = check ]; then
  run $B/vs_cpu --test-threads 1
  run $B/races --test-threads 1
  [ -x $B/declines ] && run $B/declines --test-threads 1
  run $B/concurrency --test-threads 1
  run $B/conformance_cuda coset_lde stark_proofs vm_proofs --test-threads 1
  log "kiln-$V2 --backend cuda, KILN_CUDA_DEBUG_RACES=1"
  KILN_CUDA_DEBUG_RACES=1 $B/kiln-$V2 prove vm/examples/chain.kasm --input 262142,3 --backend cuda \
    --out /tmp/races.proof 2>&1 | grep -E "^(proof|recovery|error)" | tee -a "$L"
fi
if [ "$PHASE" = all ] || [ "$PHASE" = bench ]; then
  for v in $V1 $V2 $V1 $V2; do
    for h in blake3 keccak; do
      log "prove_air-$v 20 64 4 $h cuda 6"
      $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | tee -a "$L"
    done
  done
  CHAIN="vm/examples/chain.kasm --input 262142,3"
  for v in $V1 $V2; do $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof > /dev/null; done
  for v in $V1 $V2 $V1 $V2; do
    log "kiln-$v chain 2^20 --backend cuda, warm caches, 5 runs"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof | tee -a "$L"; done
  done
  for v in $V1 $V2 $V1 $V2; do
    log "kiln-$v default program --backend cuda, 3 runs"
    for i in 1 2 3; do python3 docs/gpu/wall.py $B/kiln-$v prove --backend cuda --out /tmp/d-$v.proof | tee -a "$L"; done
  done
  for v in $V1 $V2; do
    log "kiln-$v chain --timings"
    $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof --timings 2>&1 | grep -E "^(stages|rounds|prover|device|proof)" | tee -a "$L"
  done
  cmp /tmp/$V1.proof /tmp/$V2.proof && log "$V1 and $V2 chain proofs identical" || log "chain proofs DIFFER"
  cmp /tmp/$V2.proof /tmp/races.proof 2>/dev/null && log "the race-checked proof is identical too"
fi
