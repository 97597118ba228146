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
