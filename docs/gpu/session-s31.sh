#!/usr/bin/env bash
# Checks and figures that session 31 (no GPU machine lent) left for the
# H200 and its host. Binaries built on the development machine and carried
# (gzipped) in .gpu-run; .gpu-run/commit names the builds:
#   vs_cpu, declines      backend-cuda's test binaries of the new build
#                         (declines with `--features fault-injection`)
#   conformance_cuda      the conformance crate's `cuda` test binary (new)
#   prove_air-new         `cargo build --release -p benches --features cuda
#                         --example prove_air`
#   vs_plonky3-{old,new}, kiln-{old,new}   as docs/gpu/cpu-host.sh says
#                         (vs_plonky3-new is 4fb6fc8's, session 32)
# Phases:
#   gpu  vs_cpu; declines (the refused pin); the conformance transfers
#        group (pinned uploads through BackendBase::pin); prove_air from
#        a pageable and from a pinned trace, both hashes;
#   cpu  docs/gpu/cpu-host.sh lde, then prove: the CPU LDE and prove
#        beside Plonky3 on the host's cores, old and new alternated.
# Run from the repository root: bash docs/gpu/session-s31.sh gpu|cpu
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s31}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/$1.log"
log() { echo "== $*" | tee -a "$L"; }
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
case "$1" in
gpu)
    log "$(cat $B/commit); $(nvidia-smi -L | head -1); $(nproc) cores"
    for t in vs_cpu declines; do
        log "$t"
        $B/$t --test-threads 1 2>&1 | grep -E "^test |test result|FAILED|panicked" | tee -a "$L"
    done
    log "conformance_cuda transfers"
    $B/conformance_cuda transfers --test-threads 1 2>&1 | grep -E "pin|cases|test result|FAIL|panicked" | tail -12 | tee -a "$L"
    for mode in pageable pinned; do
        for h in blake3 keccak; do
            log "prove_air-new 20 64 4 $h cuda 6 $mode"
            $B/prove_air-new 20 64 4 $h cuda 6 $mode 2>&1 | grep -E "backend|rounds|prove:|verify" | tee -a "$L"
        done
    done
    ;;
cpu)
    OUT=$OUT bash docs/gpu/cpu-host.sh lde
    OUT=$OUT bash docs/gpu/cpu-host.sh prove
    ;;
esac
