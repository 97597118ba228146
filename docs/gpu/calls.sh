# The steps the GPU call scripts (docs/gpu/session-*.sh from s40 on) share,
# sourced after a script sets OUT (its log folder). Every step takes the
# log it appends to and the builds it runs: folders holding a build's
# binaries and its `commit` (as .gpu-run and its subfolders do). Each
# prints what it logs.

set -uo pipefail
mkdir -p "$OUT"
# A kernel cache of the call's own (the cold start sets its own).
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

# heading LOG BUILD: the build's commit and the card.
heading() {
    echo "== $(tr '\n' ' ' <"$2/commit"); $(nvidia-smi -L | head -1)" | tee -a "$1"
}

# checks LOG BUILD TEST...: each test binary (vs_cpu, declines), the
# conformance suite's every group for conformance_cuda.
checks() {
    local log=$1 build=$2 t pattern
    shift 2
    for t in "$@"; do
        if [ "$t" = conformance_cuda ]; then
            echo "== conformance_cuda, every group" | tee -a "$log"
            pattern="FAIL|test result|cases"
        else
            echo "== $t" | tee -a "$log"
            pattern="^test |test result|panicked|differ"
        fi
        timeout 300 "$build/$t" --test-threads 1 2>&1 | grep -E "$pattern" | tee -a "$log"
    done
}

# peers LOG BUILD: the NTT and LDEs beside sppark (BUILD/sp), Keccak's
# leaves beside ICICLE (BUILD/icicle) twice, and main_round's commitment
# of a 2^21 and a 2^22 x 64 LDE with each hash.
peers() {
    local log=$1 build=$2 round h lb
    OUT=$OUT timeout 240 bash benches/sppark/run.sh "$build/sp" 2>&1 | grep -E "^\|" | tee -a "$log"
    for round in 1 2; do
        timeout 120 bash benches/keccak-peer/run.sh "$build/icicle" 21 16 2>&1 | grep -E "^\|" | tee -a "$log"
    done
    for h in keccak blake3; do
        for lb in 1 2; do
            echo "== main_round 20 64 $lb $h 9" | tee -a "$log"
            timeout 120 "$build/main_round" 20 64 "$lb" "$h" 9 2>&1 | grep -E "commit of the LDE" | tee -a "$log"
        done
    done
}

# conformance LOG BUILD MAX_LOG GROUP...: conformance groups with traces
# up to 2^(MAX_LOG - 2) rows.
conformance() {
    local log=$1 build=$2 max=$3 g
    shift 3
    for g in "$@"; do
        echo "== conformance $g, KILN_CONFORMANCE_MAX_LOG=$max" | tee -a "$log"
        KILN_CONFORMANCE_MAX_LOG=$max timeout 300 "$build/conformance_cuda" "$g" --test-threads 1 2>&1 |
            grep -E "FAIL|test result|cases" | tee -a "$log"
    done
}

# kernel_times KERNELS METRICS BUILD...: Nsight Compute's METRICS for the
# launches of the kernels named by the regular expression KERNELS in two
# pinned BLAKE3 proves of the cubic AIR; one CSV a build,
# $OUT/ncu-<build>.csv.
kernel_times() {
    local kernels=$1 metrics=$2 build
    shift 2
    for build in "$@"; do
        timeout 200 "$NCU" --clock-control none -k "regex:^($kernels)\$" --metrics "$metrics" --csv \
            "$build/prove_air" 20 64 4 blake3 cuda 2 pinned 2>/dev/null | grep -E '^"[0-9]' >"$OUT/ncu-$(basename "$build").csv"
    done
}

# timelines LOG BUILD...: one pinned BLAKE3 prove's device time by stage.
timelines() {
    local log=$1 build
    shift
    for build in "$@"; do
        echo "== $(basename "$build") prove_air 20 64 4 blake3 cuda 3 pinned, KILN_CUDA_TIMELINE=1" | tee -a "$log"
        KILN_CUDA_TIMELINE=1 timeout 120 "$build/prove_air" 20 64 4 blake3 cuda 3 pinned 2>&1 |
            grep -E "^  [a-z-]+ +[0-9]+ ops|timeline" | tee -a "$log"
    done
}

# proves LOG "MODE..." "HASH..." BUILD...: the cubic AIR's six proves, two
# rounds, each mode and hash, the builds alternated.
proves() {
    local log=$1 modes=$2 hashes=$3 round mode h build
    shift 3
    for round in 1 2; do
        for mode in $modes; do
            for h in $hashes; do
                for build in "$@"; do
                    echo "== $(basename "$build") prove_air 20 64 4 $h cuda 6 $mode" | tee -a "$log"
                    timeout 120 "$build/prove_air" 20 64 4 "$h" cuda 6 "$mode" 2>&1 |
                        grep -E "rounds|prove:|verify" | tee -a "$log"
                done
            done
        done
    done
}

# cold_starts LOG BUILD: `kiln prove` of the 2^20-cycle program with empty
# kernel caches, twice, the wall by docs/gpu/wall.py; the proofs compared.
cold_starts() {
    local log=$1 build=$2 round d
    for round in 1 2; do
        d=$(mktemp -d)
        echo "== cold kiln prove chain 2^20 cycles, empty caches" | tee -a "$log"
        KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv python3 docs/gpu/wall.py \
            "$build/kiln" prove vm/examples/chain.kasm --input 262142,3 --backend cuda --out "/tmp/cold-$round.proof" |
            tee -a "$log"
        rm -rf "$d"
    done
    cmp /tmp/cold-1.proof /tmp/cold-2.proof && echo "proofs identical" | tee -a "$log"
}

# cpu_peers LOG BUILD: the CPU backend beside Plonky3 on the host's cores:
# the coset LDE 2^20 x 64 at blowups 2 and 8 twice and 2^18 once (values
# checked), and the cubic AIR's whole prove with each hash (both proofs
# verified). BUILD holds vs_plonky3-v4 (AVX-512) and vs_plonky3-v3 (AVX2):
# Plonky3 picks its SIMD code at compile time, so the host's flags choose.
cpu_peers() {
    local log=$1 build=$2 bin round
    bin=$build/vs_plonky3-v3
    grep -qw avx512f /proc/cpuinfo && bin=$build/vs_plonky3-v4
    echo "== $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo); $(basename "$bin")" | tee -a "$log"
    for round in 1 2; do
        echo "== round $round: vs_plonky3 --lde 20 --blowups 2,8 --only lde --reps 3" | tee -a "$log"
        timeout 200 "$bin" --lde 20 --blowups 2,8 --only lde --reps 3 2>&1 | grep "^| coset" | tee -a "$log"
    done
    echo "== vs_plonky3 --lde 18 --blowups 2,8 --only lde --reps 5" | tee -a "$log"
    timeout 100 "$bin" --lde 18 --blowups 2,8 --only lde --reps 5 2>&1 | grep "^| coset" | tee -a "$log"
    echo "== vs_plonky3 --prove 20 --only prove --reps 2" | tee -a "$log"
    timeout 200 "$bin" --prove 20 --only prove --reps 2 2>&1 | grep "^| prove" | tee -a "$log"
}

# cli_walls LOG BUILD: issue 11's rows, each client process timed whole by
# docs/gpu/wall.py: the 2^20-cycle program served by `kiln serve`, local
# on CUDA (five each), local on the CPU kept and within a 2 GB budget
# (three each); the embedded default program served, local on CUDA and
# local `auto`; the proofs compared.
cli_walls() {
    local log=$1 build=$2 sock=/tmp/kiln-serve.sock server i
    local chain="vm/examples/chain.kasm --input 262142,3"
    "$build/kiln" serve --socket $sock --backend cuda 2>>"$log" &
    server=$!
    for i in $(seq 600); do [ -S $sock ] && break; sleep 0.1; done
    echo "== 2^20 cycles: served x5, local cuda x5, local cpu x3, cpu --memory-budget 2G x3 (wall s, peak RSS kB, rc, cpu, stages)" | tee -a "$log"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py "$build/kiln" prove $chain --server $sock --out /tmp/served.proof | tee -a "$log"; done
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py "$build/kiln" prove $chain --backend cuda --out /tmp/local.proof | tee -a "$log"; done
    for i in 1 2 3; do python3 docs/gpu/wall.py "$build/kiln" prove $chain --backend cpu --out /tmp/cpu.proof | tee -a "$log"; done
    for i in 1 2 3; do python3 docs/gpu/wall.py "$build/kiln" prove $chain --backend cpu --memory-budget 2G --out /tmp/cpu2g.proof | tee -a "$log"; done
    cmp /tmp/served.proof /tmp/local.proof && cmp /tmp/local.proof /tmp/cpu.proof && cmp /tmp/cpu.proof /tmp/cpu2g.proof &&
        echo "proofs identical" | tee -a "$log"
    echo "== the default program: served --backend cuda x5, local --backend cuda x5, local auto x5" | tee -a "$log"
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py "$build/kiln" prove --server $sock --backend cuda --out /tmp/d.proof | tee -a "$log"; done
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py "$build/kiln" prove --backend cuda --out /tmp/d.proof | tee -a "$log"; done
    for i in 1 2 3 4 5; do python3 docs/gpu/wall.py "$build/kiln" prove --out /tmp/d.proof | tee -a "$log"; done
    echo "== a local cuda prove's report" | tee -a "$log"
    "$build/kiln" prove $chain --backend cuda --timings --out /tmp/local.proof 2>&1 | grep -E "^(options|stages|rounds|memory|total)" | tee -a "$log"
    # Gone before the next step: a server still closing its device holds
    # the socket (the next server refuses it) and slows local proves.
    kill $server
    wait $server 2>/dev/null
}
