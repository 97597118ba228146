#!/usr/bin/env bash
# The CPU LDE's chunk size on the host's 16 cores: e892d91's vs_plonky3
# (.gpu-run/vs_plonky3-v4, chunk_size the smallest chunk with the fewest
# fused passes, up to 2^16) alternated with two variants built the same
# way (RUSTFLAGS target-cpu x86-64-v4): A, the largest such chunk up to
# 2^16; B, the largest up to 2^17. Two rounds, logs in $OUT.
OUT=${OUT:-/tmp/s41c}
mkdir -p "$OUT"
VERSIONS="v4 A B" OUT=$OUT bash "$(dirname "$0")/cpu-host.sh" lde
