#!/usr/bin/env bash
# Session 27 on the H200 host: the recomputed CPU proof's transforms.
# Binaries built on the development machine and carried (gzipped) in
# .gpu-run:
#   kiln-<v>     `cargo build --release -p vm` at each build <v>, with two
#                uncommitted probes: VmRSS and VmHWM printed after each
#                prover stage when KILN_RSS is set, and, when KILN_OPS is
#                set, the CPU backend wrapped to print each operation's
#                total time and count per table at the end (OP lines).
# $VERSIONS names the builds a phase alternates (default "old new"). The
# logs in docs/gpu/logs/s27 say which commit each name was.
# Phases:
#   cpu    `kiln prove` of the 2^20-cycle program on the CPU, recomputed and
#          kept, the builds alternated, $ROUNDS rounds (default 3): wall,
#          peak RSS, CPU time, rounds, and the stage at the peak; the
#          proofs compared between builds and residencies;
#   ops    the same program once per build and residency with KILN_OPS:
#          the time in each backend operation of the cpu table;
#   check  conformance groups $CONF_GROUPS (default coset_lde deep
#          error_parity stark_proofs vm_proofs; to 2^16 rows) on CUDA with
#          conf-cuda, the conformance crate's `cuda` test binary (new); the
#          2^20-cycle program's proofs on CUDA, kept and recomputed,
#          compared with each other, between builds and with the last
#          build's CPU proof.
#          kiln-<v> built with `--features cuda` for this phase.
# Run from the repository root: bash docs/gpu/session-s27.sh cpu|ops|check
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s27}
mkdir -p "$OUT"
CHAIN="vm/examples/chain.kasm --input 262142,3"
VERSIONS=${VERSIONS:-old new}
for z in $B/*.gz; do gunzip -kf "$z" && chmod +x "${z%.gz}"; done
echo "== $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo); $(date -u)"
peak='{for(i=1;i<=NF;i++) if($i=="peak") p=$(i+1)+0; if (p>m) {m=p; l=$0}} END {print "first at peak: " l}'
case "$1" in
cpu)
    for round in $(seq 1 "${ROUNDS:-3}"); do
        for mode in recompute keep; do
            for v in $VERSIONS; do
                echo "== round $round $mode $v"
                KILN_RSS=1 /usr/bin/time -f "WALL %e s %M kB user %U sys %S" $B/kiln-$v prove $CHAIN --backend cpu \
                    --residency $mode --timings --out "$OUT/$v-$mode.proof" > "$OUT/run.txt" 2>&1
                grep -E "^(WALL|stages|rounds|prover|total)" "$OUT/run.txt"
                grep RSS "$OUT/run.txt" | awk "$peak"
            done
        done
    done
    first=${VERSIONS%% *}
    for mode in recompute keep; do
        for v in $VERSIONS; do cmp "$OUT/$first-$mode.proof" "$OUT/$v-$mode.proof" && echo "$mode: $v = $first"; done
    done
    for v in $VERSIONS; do cmp "$OUT/$v-keep.proof" "$OUT/$v-recompute.proof" && echo "$v: keep = recompute"; done
    ;;
check)
    for g in ${CONF_GROUPS:-coset_lde deep error_parity stark_proofs vm_proofs}; do
        (cd conformance && KILN_CONFORMANCE_MAX_LOG=16 ../$B/conf-cuda "cuda::$g" --exact --test-threads 1 2>&1) \
            | grep -E "cases|test result|FAIL|coset_rows of 40 .*2\^16|evaluate_coeffs .*2\^16"
    done
    for v in $VERSIONS; do
        for mode in keep recompute; do
            $B/kiln-$v prove $CHAIN --backend cuda --residency $mode --out "$OUT/$v-cuda-$mode.proof" 2>&1 \
                | grep -E "^(rounds|proof|total)"
        done
        cmp "$OUT/$v-cuda-keep.proof" "$OUT/$v-cuda-recompute.proof" && echo "$v cuda: keep = recompute"
    done
    last=${VERSIONS##* }
    $B/kiln-$last prove $CHAIN --backend cpu --out "$OUT/$last-cpu.proof" | grep -E "^proof"
    for v in $VERSIONS; do cmp "$OUT/$last-cpu.proof" "$OUT/$v-cuda-recompute.proof" && echo "$v cuda recompute = $last cpu"; done
    ;;
ops)
    for mode in recompute keep; do
        for v in $VERSIONS; do
            echo "== ops $mode $v"
            KILN_OPS=1 $B/kiln-$v prove $CHAIN --backend cpu --residency $mode --out "$OUT/$v-$mode.proof" 2>&1 \
                | grep -E "^(rounds|total)|^OP .* cpu "
        done
    done
    ;;
esac
rm -f "$OUT"/*.proof "$OUT/run.txt"
