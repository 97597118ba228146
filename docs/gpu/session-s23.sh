#!/usr/bin/env bash
# Session 23 on the H200 host. Binaries built on the development machine
# and carried (gzipped) in .gpu-run; "old" is the commit before the
# session's change, "new" the change (.gpu-run/commit names both):
#   kiln-{old,new}        `cargo build --release -p vm --features cuda`
#   prove_air-{old,new}   `cargo build --release -p benches --features cuda
#                         --example prove_air`
#   vs_plonky3-{old,new}  `cargo build --release -p benches --example
#                         vs_plonky3` with RUSTFLAGS="-C target-cpu=x86-64-v4"
#   conformance_cuda      the conformance crate's `cuda` test binary
#                         (`cargo test --release -p conformance --features
#                         cuda --no-run`)
# Phases:
#   cuda  conformance groups $CONF_GROUPS (default split_quotient, deep,
#         stark_proofs and vm_proofs; to 2^18 rows); the 2^20-cycle
#         program's CUDA proof from old and new, compared; `prove_air 20 64
#         4 HASH cuda 6`, old and new alternated, $ROUNDS rounds (default 2);
#   cpu   `prove_air 20 64 4 blake3 cpu 3` (stages), old and new; the
#         cubic AIR's whole prove beside Plonky3 (`vs_plonky3 --prove 20
#         --only prove`), old and new alternated, two rounds; Merkle beside
#         Plonky3 at 2^21 and 2^23 LDE rows (new); `kiln prove` of the
#         2^20-cycle program on the CPU: wall, peak RSS, CPU time
#         (docs/gpu/wall.py), old and new alternated, proofs compared;
#   kiln  that last part alone;
#   lde   the coset LDE 2^20 x 64 at blowups 2 and 8 beside Plonky3
#         (`vs_plonky3 --lde 20 --only lde`, values checked), old and new
#         alternated, two rounds; then the whole prove (`--prove 20 --only
#         prove`), old and new, one round;
#   crossover  `kiln-new prove` of the chain program at 2^18, 300,000,
#         2^18.5 and 2^19 cycles, --backend cpu and cuda alternated, three
#         rounds: where `auto` should switch (AUTO_GPU_MIN_CYCLES);
#   keccak  benches/keccak-rot/run.sh: Keccak-f with its rotations on the
#         funnel-shift or the multiply-add pipe, register caps, unrolling.
# Run from the repository root:
#   bash docs/gpu/session-s23.sh cuda|cpu|kiln|lde|crossover|keccak
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s23}
mkdir -p "$OUT"
CHAIN="vm/examples/chain.kasm --input 262142,3"
L="$OUT/$1.log"
log() { echo "== $*" | tee -a "$L"; }
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
log "$(cat $B/commit) on $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)"
kiln_cpu() {
    for round in 1 2 3; do
        for v in old new; do
            log "$v round $round: kiln prove chain 2^20 --backend cpu (wall s, peak RSS kB, rc, cpu user+sys s)"
            python3 docs/gpu/wall.py $B/kiln-$v prove $CHAIN --backend cpu --out /tmp/$v-cpu.proof | tee -a "$L"
        done
    done
    cmp /tmp/old-cpu.proof /tmp/new-cpu.proof && log "CPU proofs of old and new identical"
}
case "$1" in
cuda)
    for g in ${CONF_GROUPS:-split_quotient deep stark_proofs vm_proofs}; do
        KILN_CONFORMANCE_MAX_LOG=18 $B/conformance_cuda "cuda::$g" --exact --test-threads 1 2>&1 \
            | grep -E "cases|test result" | tee -a "$L"
    done
    for v in old new; do
        $B/kiln-$v prove $CHAIN --backend cuda --out "$OUT/$v-cuda.proof" | grep -E "^proof" | tee -a "$L"
    done
    cmp "$OUT/old-cuda.proof" "$OUT/new-cuda.proof" && log "CUDA proofs of old and new identical"
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
    log "new: vs_plonky3 --lde 20 --blowups 2,8 --only merkle --reps 3"
    $B/vs_plonky3-new --lde 20 --blowups 2,8 --only merkle --reps 3 2>&1 | grep "^|" | tee -a "$L"
    kiln_cpu
    ;;
kiln)
    kiln_cpu
    ;;
lde)
    for round in 1 2; do
        for v in old new; do
            log "$v round $round: vs_plonky3 --lde 20 --blowups 2,8 --only lde --reps 2"
            $B/vs_plonky3-$v --lde 20 --blowups 2,8 --only lde --reps 2 2>&1 | grep "^|" | tee -a "$L"
        done
    done
    for v in old new; do
        log "$v: vs_plonky3 --prove 20 --only prove --reps 2"
        $B/vs_plonky3-$v --prove 20 --only prove --reps 2 2>&1 | grep "^|" | tee -a "$L"
    done
    ;;
crossover)
    # chain with input x runs 4 x + 8 cycles.
    for x in 65534 74998 92680 131070; do
        for round in 1 2 3; do
            for be in cpu cuda; do
                log "$((4 * x + 8)) cycles, --backend $be, round $round (wall s, peak RSS kB, rc, cpu user+sys s)"
                python3 docs/gpu/wall.py $B/kiln-new prove vm/examples/chain.kasm --input $x,3 --backend $be \
                    --out /tmp/x.proof | tee -a "$L"
            done
        done
    done
    ;;
keccak)
    bash benches/keccak-rot/run.sh 20 16 2>&1 | grep -v "ptxas info    : \(Compile time\|Function properties\|0 bytes gmem\)" | tee -a "$L"
    ;;
esac
