#!/usr/bin/env bash
# Builds of the CPU coset LDE side by side, each in its own process
# (`benches/examples/cpu_lde.rs`), alternated for $ROUNDS rounds, with
# Plonky3's LDE once a round. BINS names the cpu_lde binaries, one per
# build, each built with RUSTFLAGS="-C target-cpu=x86-64-v4"; the log's
# heading names the machine.
# Usage: BINS="a b ..." bash docs/gpu/cpu-lde-ab.sh > log
set -uo pipefail
echo "== $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $(nproc) threads; KILN_CPU_NO_HUGEPAGES=${KILN_CPU_NO_HUGEPAGES:-unset}"
for round in $(seq "${ROUNDS:-3}"); do
    for b in $BINS; do
        echo "== $b round $round"
        "$b" 20 1 3 kiln
        "$b" 20 3 2 kiln
    done
    first=${BINS%% *}
    echo "== plonky3 round $round"
    "$first" 20 1 3 plonky3
    "$first" 20 3 2 plonky3
done
