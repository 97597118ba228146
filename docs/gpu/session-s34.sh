#!/usr/bin/env bash
# The GPU calls sessions 34 and 35 prepared and could not make (no machine
# was lent): upload_commit with its leaves hashed under the upload
# (KILN_CUDA_LEAVES_UNDER_UPLOAD=1) checked and timed against the
# extension committed once complete, `kiln serve`'s walls (session 35),
# and the CPU chunk-size question left by session 33. Binaries built on the development machine and carried
# (gzipped or not) in .gpu-run:
#   vs_cpu, declines, conformance_cuda  the test binaries of
#       `cargo test --release -p backend-cuda --features fault-injection
#       --test vs_cpu --test declines --no-run` and
#       `cargo test --release -p conformance --features cuda --test cuda --no-run`
#       (docs/gpu/build.sh shows how to find them);
#   main_round, prove_air     `cargo build --release -p benches --features cuda
#       --example main_round --example prove_air`;
#   kiln                      `cargo build --release -p vm --features cuda`;
#   vs_plonky3-next2, -next3  `vs_plonky3` built with
#       RUSTFLAGS="-C target-cpu=x86-64-v4": MAX_CHUNK 2^15 (next2) and
#       2^16 (next3, HEAD) in backend-cpu/src/ntt.rs.
# Phases, one by name, `gpu` (check then bench), or all (most wanted first):
#   check  vs_cpu (upload_commit_matches_in_both_orders among them) and
#          declines; the conformance groups merkle, fri_fold, stark_proofs
#          and vm_proofs (the trees' levels a subtree a block), with the
#          leaves under the upload off and on; one prove under the race
#          detector;
#   bench  prove_air's device timeline by stage (KILN_CUDA_TIMELINE=1) and
#          `kiln prove --timings`'s, of the 2^20-cycle program,
#          main_round (both orders in one process) and prove_air from a
#          pageable and a pinned trace, the order alternated, both hashes;
#   serve  issue 11's walls through `kiln serve --backend cuda` (the device
#          held open): five `kiln prove --server` of the 2^20-cycle program
#          and of the default program, each process timed whole
#          (wall.py), beside five local CUDA and CPU proves, proofs compared;
#   cpu    cpu-host.sh lde with VERSIONS="next2 next3".
# Run from the repository root: bash docs/gpu/session-s34.sh all, or, under
# the 10-minute limit of one device call, `gpu` in one call and `serve`
# then `cpu` in another. Logs in $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s34}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
check() {
    local L="$OUT/check.log"
    echo "== $(cat $B/commit 2>/dev/null); $(nvidia-smi -L | head -1)" | tee -a "$L"
    $B/vs_cpu --test-threads 1 2>&1 | grep -E "^test |test result|panicked|SKIPPED" | tee -a "$L"
    # Every fault site once, sticky and strict: the main round's declines
    # now go through upload_commit's retry and fallback.
    $B/declines --test-threads 1 2>&1 | grep -E "^test |test result|panicked" | tee -a "$L"
    for under in 0 1; do for g in merkle fri_fold stark_proofs vm_proofs; do
        echo "== conformance $g, KILN_CUDA_LEAVES_UNDER_UPLOAD=$under" | tee -a "$L"
        KILN_CUDA_LEAVES_UNDER_UPLOAD=$under $B/conformance_cuda $g --test-threads 1 2>&1 \
            | grep -E "FAIL|test result|passed|failed" | tail -4 | tee -a "$L"
    done; done
    echo "== prove_air 18 64 4 keccak cuda 2, leaves under the upload, race detector on" | tee -a "$L"
    KILN_CUDA_LEAVES_UNDER_UPLOAD=1 KILN_CUDA_DEBUG_RACES=1 $B/prove_air 18 64 4 keccak cuda 2 2>&1 | grep -E "prove:|verify|error" | tee -a "$L"
}
bench() {
    local L="$OUT/bench.log"
    for h in blake3 keccak; do
        echo "== prove_air 20 64 4 $h cuda 3 pageable, KILN_CUDA_TIMELINE=1 (the device's time by stage)" | tee -a "$L"
        KILN_CUDA_TIMELINE=1 $B/prove_air 20 64 4 $h cuda 3 2>&1 | grep -vE "^(cubic|trace generation|proof size)" | tee -a "$L"
    done
    echo "== kiln prove chain.kasm --input 262142,3 --backend cuda --timings (twice: a cold and a warm kernel cache)" | tee -a "$L"
    for i in 1 2; do
        $B/kiln prove vm/examples/chain.kasm --input 262142,3 --backend cuda --timings --out /tmp/chain.proof 2>&1 \
            | grep -E "^(stages|rounds|device|memory|total)|^  [a-zA-Z]" | tee -a "$L"
    done
    for h in blake3 keccak; do
        echo "== main_round 20 64 2 $h 9" | tee -a "$L"
        $B/main_round 20 64 2 $h 9 2>&1 | tee -a "$L"
    done
    for round in 1 2; do for h in blake3 keccak; do for p in pageable pinned; do for under in 0 1; do
        echo "== round $round: prove_air 20 64 4 $h cuda 6 $p, KILN_CUDA_LEAVES_UNDER_UPLOAD=$under" | tee -a "$L"
        KILN_CUDA_LEAVES_UNDER_UPLOAD=$under $B/prove_air 20 64 4 $h cuda 6 $p 2>&1 \
            | grep -E "main commit|rounds:|prove:|verify" | tee -a "$L"
    done; done; done; done
}
serve() {
    local L="$OUT/serve.log" S=/tmp/kiln-serve.sock CHAIN="vm/examples/chain.kasm --input 262142,3"
    echo "== $(cat $B/commit 2>/dev/null); $(nvidia-smi -L | head -1)" | tee -a "$L"
    $B/kiln serve --socket $S --backend cuda 2>>"$L" &
    local server=$!
    for i in $(seq 600); do [ -S $S ] && break; sleep 0.1; done
    echo "== 2^20 cycles: served, local cuda, local cpu (wall, RSS, rc, cpu, stages)" | tee -a "$L"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln prove $CHAIN --server $S --out /tmp/served.proof | tee -a "$L"; done
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln prove $CHAIN --backend cuda --out /tmp/local.proof | tee -a "$L"; done
    for i in 1 2 3; do python3 docs/gpu/wall.py $B/kiln prove $CHAIN --backend cpu --out /tmp/cpu.proof | tee -a "$L"; done
    cmp /tmp/served.proof /tmp/local.proof && cmp /tmp/local.proof /tmp/cpu.proof && echo "proofs identical" | tee -a "$L"
    echo "== the default program: served (auto), served --backend cuda, local auto" | tee -a "$L"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln prove --server $S --out /tmp/d.proof | tee -a "$L"; done
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln prove --server $S --backend cuda --out /tmp/d.proof | tee -a "$L"; done
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py $B/kiln prove --out /tmp/d.proof | tee -a "$L"; done
    echo "== one served prove's report" | tee -a "$L"
    $B/kiln prove $CHAIN --server $S --timings --out /tmp/served.proof 2>&1 | grep -E "^(options|stages|rounds|memory|total)" | tee -a "$L"
    kill $server
}
case "$1" in
check) check ;;
gpu) check; bench ;;
bench) bench ;;
serve) serve ;;
cpu) VERSIONS="next2 next3" OUT=$OUT bash docs/gpu/cpu-host.sh lde ;;
all)
    check
    bench
    serve
    VERSIONS="next2 next3" OUT=$OUT bash docs/gpu/cpu-host.sh lde
    ;;
esac
