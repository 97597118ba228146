#!/usr/bin/env bash
# The CPU backend beside Plonky3 on the GPU host's cores at e892d91 (the
# CPU backend as of 90cb0fe, never measured there), and issue 11's CLI
# walls on the lent card. .gpu-run holds kiln (`--features cuda`) and
# vs_plonky3-v4 / -v3 (RUSTFLAGS target-cpu x86-64-v4 / v3, target/v4 and
# target/v3), all at e892d91. Logs in $OUT.
OUT=${OUT:-/tmp/s41a}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
heading "$OUT/cli.log" $B
cli_walls "$OUT/cli.log" $B
cpu_peers "$OUT/cpu.log" $B
