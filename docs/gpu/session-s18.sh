#!/usr/bin/env bash
# The session's last build against its first, on one H200: every CUDA test
# binary (vs_cpu, races, concurrency, declines) and the whole conformance
# suite, then prove_air (cubic AIR 2^20 x 64, blowup 4; BLAKE3 and Keccak)
# and kiln prove of the 2^20-cycle program alternated between the builds
# (VERSIONS, default "base final"), proofs compared. Binaries in
# ${B:-.gpu-run}. Log in $OUT/${LOG:-session.log}.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-run}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
exec > >(tee -a "$OUT/${LOG:-session.log}") 2>&1
VERSIONS=${VERSIONS:-base final}
LAST=${VERSIONS##* }
CHAIN="vm/examples/chain.kasm --input 262142,3"
echo "== $(nvidia-smi -L | head -1); $(nproc) cores; build $(cat $B/commit)"
for t in vs_cpu races concurrency declines; do
  echo "== $t"
  $B/$t --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked"
done
echo "== conformance_cuda (every group)"
$B/conformance_cuda --test-threads 1 2>&1 | grep -E "cases|property|test result|FAIL|panicked"
for v in $VERSIONS; do $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof > /dev/null; done
for v in $VERSIONS; do
  cmp /tmp/${VERSIONS%% *}.proof /tmp/$v.proof && echo "== chain proof of $v identical to ${VERSIONS%% *}'s" || echo "== chain proof of $v DIFFERS"
done
for round in 1 2 3; do
  for v in $VERSIONS; do
    for h in blake3 keccak; do
      echo "== prove_air-$v 20 64 4 $h cuda 6"
      $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "rounds|prove:|verify"
    done
  done
done
for round in 1 2; do
  for v in $VERSIONS; do
    echo "== kiln-$v chain 2^20 --backend cuda, warm caches, 5 runs"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof; done
  done
done
