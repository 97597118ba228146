#!/usr/bin/env bash
# Session 25 on the H200 host: out-of-domain values read in place from the
# committed LDEs, traces released after LogUp, Merkle commits on the CPU
# without a whole leaf level. Binaries built on the development machine and
# carried (gzipped) in .gpu-run; "old" is 715231b, "new" the change
# (.gpu-run/commit names both):
#   kiln-{old,new}        `cargo build --release -p vm --features cuda`
#   prove_air-{old,new}   `cargo build --release -p benches --features cuda
#                         --example prove_air`
#   conformance_cuda      the conformance crate's `cuda` test binary (new)
#   vs_cpu                backend-cuda's `vs_cpu` test binary (new)
# $VERSIONS names the builds a phase alternates (default "old new"; the
# phase default also ran "head nomerkle": 9f23935 built without the
# cuda feature, and the same with 7c408d4 reverted).
# Phases:
#   check  vs_cpu; conformance groups $CONF_GROUPS (default deep,
#          stark_proofs, vm_proofs; to 2^18 rows); the 2^20-cycle
#          program's proofs from old and new, CUDA and CPU, compared;
#   perf   `kiln prove` of the 2^20-cycle program on the CPU, old and new
#          alternated, $ROUNDS rounds (default 3), then recomputed once
#          each: wall, peak RSS, CPU time (docs/gpu/wall.py); on CUDA,
#          the same three rounds; `prove_air 20 64 4 HASH cuda 6`, old and
#          new alternated, $PROVE_AIR_ROUNDS rounds (default 2; $BACKENDS
#          picks the backends of the kiln runs, default "cpu cuda";
#          $RECOMPUTE_ROUNDS the recomputed runs, default 1);
#   crossover  the `auto` crossover with kiln-$V (default new): the chain
#          program at 2^16 to 2^20 cycles on the CPU and on CUDA, two
#          whole-process walls each, and the embedded default program
#          with cpu, auto and cuda;
#   default  the embedded default program, old and new alternated, cpu
#          and auto, $ROUNDS rounds (default 3).
# Run from the repository root: bash docs/gpu/session-s25.sh check|perf|crossover|default
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s25}
mkdir -p "$OUT"
CHAIN="vm/examples/chain.kasm --input 262142,3"
L="$OUT/${LOG:-$1}.log"
log() { echo "== $*" | tee -a "$L"; }
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
log "$(cat $B/commit) on $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)"
case "$1" in
check)
    $B/vs_cpu --test-threads 1 2>&1 | grep -E "test result|FAIL|panicked" | tee -a "$L"
    for g in ${CONF_GROUPS:-deep stark_proofs vm_proofs}; do
        KILN_CONFORMANCE_MAX_LOG=18 $B/conformance_cuda "cuda::$g" --exact --test-threads 1 2>&1 \
            | grep -E "cases|test result|FAIL" | tee -a "$L"
    done
    for be in cuda cpu; do
        for v in ${VERSIONS:-old new}; do
            $B/kiln-$v prove $CHAIN --backend $be --out "$OUT/$v-$be.proof" | grep -E "^proof" | tee -a "$L"
        done
        cmp "$OUT/old-$be.proof" "$OUT/new-$be.proof" && log "$be proofs of old and new identical"
    done
    cmp "$OUT/new-cpu.proof" "$OUT/new-cuda.proof" && log "new CPU and CUDA proofs identical"
    ;;
perf)
    for be in ${BACKENDS:-cpu cuda}; do
        for round in $(seq 1 "${ROUNDS:-3}"); do
            for v in ${VERSIONS:-old new}; do
                log "$v round $round: kiln prove chain 2^20 --backend $be (wall s, peak RSS kB, rc, cpu user+sys s)"
                python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend $be --out /tmp/$v-w.proof | tee -a "$L"
            done
        done
    done
    for round in $(seq 1 "${RECOMPUTE_ROUNDS:-1}"); do
        for v in ${VERSIONS:-old new}; do
            log "$v: kiln prove chain 2^20 --backend cpu --residency recompute (wall s, peak RSS kB, rc, cpu user+sys s)"
            python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cpu --residency recompute --out /tmp/$v-r.proof \
                | tee -a "$L"
        done
    done
    for round in $(seq 1 "${PROVE_AIR_ROUNDS:-2}"); do
        for h in blake3 keccak; do
            for v in ${VERSIONS:-old new}; do
                [ -x $B/prove_air-$v ] || continue
                log "$v round $round: prove_air 20 64 4 $h cuda 6"
                $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "^(rounds|prove:)" | tee -a "$L"
            done
        done
    done
    ;;
crossover)
    K=$B/kiln-${V:-new}
    for c in 16382 32766 65534 131070 262142; do
        for be in cpu cuda cpu cuda; do
            log "crossover $c $be"
            python3 docs/gpu/wall.py $K prove vm/examples/chain.kasm --input $c,3 --backend $be --out /tmp/x.proof | tee -a "$L"
        done
    done
    log "default program"
    for be in cpu auto cuda cpu auto cuda; do
        log "$be"
        python3 docs/gpu/wall.py $K prove --backend $be --out /tmp/d.proof | tee -a "$L"
    done
    ;;
default)
    for round in $(seq 1 "${ROUNDS:-3}"); do
        for be in cpu auto; do
            for v in ${VERSIONS:-old new}; do
                log "$v round $round: default program --backend $be"
                python3 docs/gpu/wall.py $B/kiln-$v prove --backend $be --out /tmp/$v-d.proof | tee -a "$L"
            done
        done
    done
    set -- ${VERSIONS:-old new}
    cmp /tmp/$1-d.proof /tmp/$2-d.proof && log "default program: $1 and $2 proofs identical"
    ;;
esac
rm -f "$OUT"/*.proof
