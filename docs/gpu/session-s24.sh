#!/usr/bin/env bash
# Session 24 on the H200 host: composition over the quotient domain.
# Binaries built on the development machine and carried (gzipped) in
# .gpu-run; "old" is 439bc8f, "new" the change (.gpu-run/commit names both):
#   kiln-{old,new}        `cargo build --release -p vm --features cuda`
#   prove_air-{old,new}   `cargo build --release -p benches --features cuda
#                         --example prove_air`
#   vs_plonky3-{old,new}  `cargo build --release -p benches --example
#                         vs_plonky3` with RUSTFLAGS="-C target-cpu=x86-64-v4"
#   conformance_cuda      the conformance crate's `cuda` test binary (new)
# The first cuda run (ceac1e4) found the LogUp kernels broken; the second
# ran 7cda3ea, logged as cuda-2.log (L names the log: LOG=cuda-2).
# Phases:
#   cuda  conformance groups $CONF_GROUPS (default compose, split_quotient,
#         logup, stark_proofs and vm_proofs; to 2^18 rows); the 2^20-cycle
#         program's CUDA proof from old and new, compared, and its warm
#         wall (three rounds, alternated); `prove_air 20 64
#         4 HASH cuda 6`, old and new alternated, $ROUNDS rounds (default 2);
#   cpu   `prove_air 20 64 4 blake3 cpu 3` (stages), old and new; the
#         cubic AIR's whole prove beside Plonky3 (`vs_plonky3 --prove 20
#         --only prove`), old and new alternated, two rounds; `kiln prove`
#         of the 2^20-cycle program on the CPU, kept (three rounds) and
#         recomputed (one): wall, peak RSS, CPU time (docs/gpu/wall.py),
#         old and new alternated, proofs compared.
# Run from the repository root: bash docs/gpu/session-s24.sh cuda|cpu
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s24}
mkdir -p "$OUT"
CHAIN="vm/examples/chain.kasm --input 262142,3"
L="$OUT/${LOG:-$1}.log"
log() { echo "== $*" | tee -a "$L"; }
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
log "$(cat $B/commit) on $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)"
case "$1" in
cuda)
    for g in ${CONF_GROUPS:-compose split_quotient logup stark_proofs vm_proofs}; do
        KILN_CONFORMANCE_MAX_LOG=18 $B/conformance_cuda "cuda::$g" --exact --test-threads 1 2>&1 \
            | grep -E "cases|test result|FAIL" | tee -a "$L"
    done
    for v in old new; do
        $B/kiln-$v prove $CHAIN --backend cuda --out "$OUT/$v-cuda.proof" | grep -E "^proof" | tee -a "$L"
    done
    cmp "$OUT/old-cuda.proof" "$OUT/new-cuda.proof" && log "CUDA proofs of old and new identical"
    for round in 1 2 3; do
        for v in old new; do
            log "$v round $round: kiln prove chain 2^20 --backend cuda (wall s, peak RSS kB, rc, cpu user+sys s)"
            python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cuda --out /tmp/$v-w.proof | tee -a "$L"
        done
    done
    for round in $(seq 1 "${ROUNDS:-2}"); do
        for h in blake3 keccak; do
            for v in old new; do
                log "$v round $round: prove_air 20 64 4 $h cuda 6"
                $B/prove_air-$v 20 64 4 $h cuda 6 2>&1 | grep -E "^(  |rounds|prove:)" | tee -a "$L"
            done
        done
    done
    rm -f "$OUT"/*.proof
    ;;
cpu)
    for v in old new; do
        log "$v: prove_air 20 64 4 blake3 cpu 3"
        $B/prove_air-$v 20 64 4 blake3 cpu 3 2>&1 | grep -E "^(  |rounds|prove:)" | tee -a "$L"
    done
    for round in 1 2; do
        for v in old new; do
            log "$v round $round: vs_plonky3 --prove 20 --only prove --reps 2"
            $B/vs_plonky3-$v --prove 20 --only prove --reps 2 2>&1 | grep "^|" | tee -a "$L"
        done
    done
    for round in 1 2 3; do
        for v in old new; do
            log "$v round $round: kiln prove chain 2^20 --backend cpu (wall s, peak RSS kB, rc, cpu user+sys s)"
            python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cpu --out /tmp/$v-cpu.proof | tee -a "$L"
        done
    done
    cmp /tmp/old-cpu.proof /tmp/new-cpu.proof && log "CPU proofs of old and new identical"
    for v in old new; do
        log "$v: kiln prove chain 2^20 --backend cpu --residency recompute (wall s, peak RSS kB, rc, cpu user+sys s)"
        python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cpu --residency recompute \
            --out /tmp/$v-rc.proof | tee -a "$L"
    done
    cmp /tmp/old-rc.proof /tmp/new-rc.proof && cmp /tmp/old-rc.proof /tmp/new-cpu.proof \
        && log "recomputed proofs of old and new identical to the kept one"
    ;;
esac
