#!/usr/bin/env bash
# A concurrency fault (fixed; RESULTS.md section 9): in a batch of 16 proofs
# of the 2^20-cycle program, 4 in flight on one H200, a small table's
# quotient was not of low degree (the prover refused; no proof was written). Batches under
# three settings, counting refusals: as is; every lane on one CUDA stream;
# the race detector on. Log: $OUT/batch-race.log
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache
exec > >(tee "$OUT/batch-race.log") 2>&1
cat .gpu-bin/commit
B="vm/examples/chain.kasm --input 262142,3 --repeat 16 --jobs 4 --backend cuda"
run() { # label runs extra-args, env in the caller
  local label=$1 n=$2; shift 2
  local ok=0 bad=0
  for i in $(seq 1 "$n"); do
    if timeout 60 ${K:-.gpu-bin/kiln} prove $B "$@" > /tmp/b.log 2>&1; then ok=$((ok+1)); else bad=$((bad+1)); grep -E "^error|race" /tmp/b.log | head -2; fi
  done
  echo "$label: $n batches of 16, $ok all verified and identical, $bad failed"
}
run "as is" ${N1:-10}
KILN_CUDA_STREAMS=1 run "one stream" ${N2:-8}
run "race detector" ${N3:-4} --debug-races
KILN_CPU_NO_HUGEPAGES=1 run "4 KiB host pages" ${N4:-0}
K=.gpu-bin/kiln-smallsync run "small host-to-device copies waited for (experiment)" ${N5:-0}
