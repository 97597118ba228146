#!/usr/bin/env bash
# Session 33's one call on the H200 machine: the checks sessions 31 and 32
# left for a GPU, issue 11's CLI figures at HEAD, and the CPU comparisons
# on the host's 16 cores. Binaries built on the development machine and
# carried (gzipped) in .gpu-run; .gpu-run/commit names the builds (old:
# bec1e5b, as session-s31.sh and cpu-host.sh describe; new: this session's
# HEAD, kiln-new with `--features cuda`).
# Phases, one by name, or all in one call (`all`: gpu, cpu's lde, cli,
# then the rest of cpu):
#   gpu  session-s31.sh gpu: vs_cpu, declines (the refused pin), the
#        conformance transfers group (BackendBase::pin), prove_air from a
#        pageable and from a pinned trace, both hashes;
#   cli  `kiln prove` of the 2^20-cycle program and of the embedded default
#        program: CUDA with empty kernel caches (fresh folders, 2 runs),
#        then warm (5 runs), CPU (3 runs), auto on the default program,
#        and the per-stage accounting of each backend;
#   cpu  cpu-host.sh lde, prove and kiln: the CPU LDE and prove beside
#        Plonky3, and `kiln prove --backend cpu`, old and new alternated.
# Run from the repository root: bash docs/gpu/session-s33.sh all. Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s33}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
CHAIN="vm/examples/chain.kasm --input 262142,3"
K=$B/kiln-new
L="$OUT/cli.log"
log() { echo "== $*" | tee -a "$L"; }
w() { python3 docs/gpu/wall.py "$@" | tee -a "$L"; }
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
cli() {
    log "$(cat $B/commit); $(nvidia-smi -L | head -1); $(nproc) cores"
    log "chain 2^20 cuda, empty kernel caches (fresh folders each run)"
    for i in 1 2; do
        KILN_CACHE_DIR=/tmp/kc-cold-$i CUDA_CACHE_PATH=/tmp/nv-cold-$i \
            w $K prove $CHAIN --backend cuda --out /tmp/cold.proof
    done
    $K prove $CHAIN --backend cuda --out /tmp/c.proof > /dev/null
    log "chain 2^20 cuda, warm caches, 5 runs (wall s, peak RSS kB, rc, cpu)"
    for i in 1 2 3 4 5; do w $K prove $CHAIN --backend cuda --out /tmp/c.proof; done
    log "chain 2^20 cpu, 3 runs"
    for i in 1 2 3; do w $K prove $CHAIN --backend cpu --out /tmp/p.proof; done
    cmp /tmp/c.proof /tmp/p.proof && log "cuda and cpu proofs identical"
    for b in cuda cpu auto; do
        log "default program $b, 3 runs"
        for i in 1 2 3; do w $K prove --backend $b --out /tmp/d-$b.proof; done
    done
    for b in cuda cpu; do
        log "chain $b --timings"
        $K prove $CHAIN --backend $b --timings --out /tmp/t-$b.proof 2>&1 | grep -v "^ " | tee -a "$L"
    done
}
case "$1" in
gpu) OUT=$OUT bash docs/gpu/session-s31.sh gpu ;;
cli) cli ;;
cpu) for p in lde prove kiln; do OUT=$OUT bash docs/gpu/cpu-host.sh $p; done ;;
all)
    # Most wanted first: a call cut short still returns what ran.
    OUT=$OUT bash docs/gpu/session-s31.sh gpu
    OUT=$OUT bash docs/gpu/cpu-host.sh lde
    cli
    for p in prove kiln; do OUT=$OUT bash docs/gpu/cpu-host.sh $p; done
    ;;
esac
