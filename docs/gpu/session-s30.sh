#!/usr/bin/env bash
# Session 30 on the H200: uploads straight from a trace pinned in place
# (`CudaBackend::pin`). Binaries built on the development machine and
# carried (gzipped) in .gpu-run; "old" and "new" are the builds
# .gpu-run/commit names:
#   kiln-{old,new}        `cargo build --release -p vm --features cuda`
#   prove_air-{old,new}   `cargo build --release -p benches --features cuda
#                         --example prove_air`
#   main_round            the same, `--example main_round` (new)
#   vs_cpu                backend-cuda's `vs_cpu` test binary (new)
#   conformance_cuda      the conformance crate's `cuda` test binary (new)
# Phases:
#   check  vs_cpu; conformance groups $CONF_GROUPS (empty: all); the
#          2^20-cycle program's CUDA proofs from old and new compared;
#   host   the host's copy and pinning rates (benches/pinning/pin_rates.cu), then `main_round
#          20 64 2 HASH 9`: the main round's parts from a pageable and from
#          a pinned trace;
#   bench  `prove_air 20 64 4 HASH cuda 6`, old and new (pageable), new
#          with `pinned`, alternated, $ROUNDS rounds (default 2);
#   final  the committed build alone: vs_cpu, declines (its test binary
#          built with `--features fault-injection`), then prove_air from a
#          pageable and from a pinned trace, both hashes.
# Run from the repository root: bash docs/gpu/session-s30.sh check|host|bench|final
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s30}
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
    G=${CONF_GROUPS-transfers ntt coset_lde stark_proofs vm_proofs}
    log "conformance_cuda $G"
    $B/conformance_cuda $G --test-threads 1 2>&1 | grep -E "cases|property|test result|FAIL|panicked" | tee -a "$L"
    for v in old new; do
        $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v.proof 2>&1 | tail -1 | tee -a "$L"
    done
    cmp /tmp/old.proof /tmp/new.proof && log "chain 2^20 proof of new identical to old's" || log "chain proof DIFFERS"
    ;;
host)
    log "pin_rates.cu: pinning 512 MiB in place, whole and in pieces; host copies into pinned memory"
    /usr/local/cuda/bin/nvcc -O2 -o /tmp/pin_rates benches/pinning/pin_rates.cu -lpthread && /tmp/pin_rates 2>&1 | tee -a "$L"
    for h in blake3 keccak; do
        log "main_round 20 64 2 $h 9"
        $B/main_round 20 64 2 $h 9 2>&1 | tee -a "$L"
    done
    ;;
bench)
    for round in $(seq ${ROUNDS:-2}); do
        for v in old new new-pinned; do
            for h in blake3 keccak; do
                bin=prove_air-${v%-pinned}; mode=pageable; [ "$v" = new-pinned ] && mode=pinned
                log "$bin 20 64 4 $h cuda 6 $mode (round $round)"
                $B/$bin 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "backend|main commit|rounds|prove:|verify" | tee -a "$L"
            done
        done
    done
    ;;
final)
    for t in vs_cpu declines; do
        log "$t"
        $B/$t --test-threads 1 2>&1 | grep -E "^test |test result|FAILED|panicked" | tee -a "$L"
    done
    for mode in pageable pinned; do
        for h in blake3 keccak; do
            log "prove_air-new 20 64 4 $h cuda 6 $mode"
            $B/prove_air-new 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "backend|rounds|prove:|verify" | tee -a "$L"
        done
    done
    ;;
esac
