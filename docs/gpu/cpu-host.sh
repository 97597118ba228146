#!/usr/bin/env bash
# The CPU backend on the H200 host's 16 cores (no GPU work). Binaries
# built on the development machine and carried in .gpu-run:
#   vs_plonky3-{old,new}  `cargo build --release -p benches --example
#                         vs_plonky3` with RUSTFLAGS="-C target-cpu=x86-64-v4"
#   kiln-{old,new}        `cargo build --release -p vm`
# Phases:
#   lde    coset LDE 2^20 x 64 at blowups 2 and 8 beside Plonky3
#          (`vs_plonky3 --only lde`, values checked), old and new
#          alternated, two rounds;
#   prove  the cubic AIR's whole prove beside Plonky3 (`--only prove`,
#          both proofs verified), old and new alternated;
#   kiln   `kiln prove` of the 2^20-cycle program with --backend cpu,
#          LDEs kept and recomputed, old and new alternated: wall, peak
#          RSS and CPU time (docs/gpu/wall.py), proofs compared.
# Run from the repository root: bash docs/gpu/cpu-host.sh lde|prove|kiln
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/cpu-host}
mkdir -p "$OUT"
CHAIN="vm/examples/chain.kasm --input 262142,3"
VERSIONS=${VERSIONS:-old new}
L="$OUT/$1.log"
log() { echo "== $*" | tee -a "$L"; }
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
log "$(cat $B/commit) on $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)"
case "$1" in
lde)
    for round in 1 2; do
        for v in $VERSIONS; do
            log "$v round $round: vs_plonky3 --lde 20 --blowups 2,8 --only lde --reps 3"
            $B/vs_plonky3-$v --lde 20 --blowups 2,8 --only lde --reps 3 2>&1 | grep "^|" | tee -a "$L"
        done
    done
    ;;
prove)
    for v in $VERSIONS; do
        log "$v: vs_plonky3 --prove 20 --only prove --reps 2"
        $B/vs_plonky3-$v --prove 20 --only prove --reps 2 2>&1 | grep "^|" | tee -a "$L"
    done
    ;;
kiln)
    for r in keep recompute; do
        for round in 1 2 3; do
            for v in $VERSIONS; do
                log "$v round $round: kiln prove chain 2^20 --backend cpu --residency $r (wall s, peak RSS kB, rc, cpu user+sys s)"
                python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cpu --residency $r --out /tmp/$v-$r.proof | tee -a "$L"
            done
        done
    done
    for v in $VERSIONS; do
        log "$v: the same with --timings (recompute)"
        $B/kiln-$v prove $CHAIN --backend cpu --residency recompute --timings --out /tmp/$v-t.proof 2>&1 | grep -E "^(stages|rounds|prover|memory)" | tee -a "$L"
    done
    for v in $VERSIONS; do for r in keep recompute; do
        cmp /tmp/old-keep.proof /tmp/$v-$r.proof && log "$v $r proof identical to old keep"
    done; done
    ;;
esac
