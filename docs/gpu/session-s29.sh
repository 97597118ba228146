#!/usr/bin/env bash
# Session 29 on the H200: the NTT's radix-4 rounds with their twiddles and
# positions worked out once per thread. Binaries built on the development
# machine and carried (gzipped) in .gpu-run; "old" and "new" are the
# builds .gpu-run/commit names:
#   kiln-{old,new}        `cargo build --release -p vm --features cuda`
#   prove_air-{old,new}, ntt_io-{old,new}
#                         `cargo build --release -p benches --features cuda
#                         --example prove_air --example ntt_io`
#   vs_cpu                backend-cuda's `vs_cpu` test binary (new)
#   conformance_cuda      the conformance crate's `cuda` test binary (new)
# Phases:
#   check  vs_cpu; conformance groups $CONF_GROUPS (empty: all); the
#          2^20-cycle program's CUDA proofs from old and new compared;
#   cold   `kiln prove` of the 2^20-cycle program with empty kernel caches
#          (ours and the driver's), old and new alternated, two rounds;
#   bench  `ntt_io prep DIR 20 64` (NTT and coset LDEs of 64 x 2^20, CUDA
#          events), then `prove_air 20 64 4 HASH cuda 6`, old and new
#          alternated, $ROUNDS and $PROVE_ROUNDS rounds (default 2);
#   ncu    ncu on the first two ntt_pass launches of `ntt_io-$V prep`
#          (default new): throughput, pipes, stalls, shared-memory
#          wavefronts and bank conflicts.
# Run from the repository root: bash docs/gpu/session-s29.sh check|cold|bench|ncu
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s29}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
CHAIN="vm/examples/chain.kasm --input 262142,3"
L="$OUT/${LOG:-$1}.log"
log() { echo "== $*" | tee -a "$L"; }
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
log "$(cat $B/commit); $(nvidia-smi -L | head -1); $(nproc) cores"
case "$1" in
check)
    log "vs_cpu"
    $B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAILED|panicked" | tee -a "$L"
    G=${CONF_GROUPS-ntt coset_lde properties stark_proofs vm_proofs}
    log "conformance_cuda $G"
    $B/conformance_cuda $G --test-threads 1 2>&1 | grep -E "cases|property|test result|FAIL|panicked" | tee -a "$L"
    for v in old new; do
        $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof 2>&1 | tail -1 | tee -a "$L"
    done
    cmp /tmp/old.proof /tmp/new.proof && log "chain 2^20 proof of new identical to old's" || log "chain proof DIFFERS"
    ;;
bench)
    W=$(mktemp -d)
    for round in $(seq ${ROUNDS:-2}); do
        for v in old new; do
            log "ntt_io-$v prep 20 64 (round $round)"
            $B/ntt_io-$v prep "$W" 20 64 2>&1 | tee -a "$L"
        done
    done
    rm -rf "$W"
    for round in $(seq ${PROVE_ROUNDS:-2}); do
        for v in old new; do
            for h in blake3 keccak; do
                log "prove_air-$v 20 64 4 $h cuda 6 (round $round)"
                $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "commit|quotient|out-of-domain|rounds|prove:|verify" | tee -a "$L"
            done
        done
    done
    ;;
cold)
    for round in 1 2; do
        for v in old new; do
            d=$(mktemp -d)
            log "kiln-$v chain 2^20 --backend cuda, empty caches (round $round): wall s, peak RSS kB, rc, cpu s"
            KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v-cold.proof | tee -a "$L"
        done
    done
    ;;
ncu)
    W=$(mktemp -d)
    timeout 300 /usr/local/cuda/bin/ncu --clock-control none -k regex:ntt_pass --launch-count 2 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
        --section InstructionStats --section MemoryWorkloadAnalysis_Tables --section SchedulerStats \
        --section Occupancy $B/ntt_io-${V:-new} prep "$W" 20 64 2>&1 | grep -vE "^==PROF==|^kiln " | tee -a "$L"
    rm -rf "$W"
    ;;
esac
