#!/usr/bin/env bash
# Issue 14's GPU rows in one call, at the session's last commit: every
# vs_cpu, declines and conformance test; the NTT and LDEs beside sppark;
# Keccak's leaves beside ICICLE; both hashes' commitments (main_round);
# the whole prove, both hashes, pageable and pinned, twice; the cold
# start. .gpu-run as docs/gpu/logs/s39/README.md says (with sp and
# icicle). Logs in $OUT.
OUT=${OUT:-/tmp/s39c}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
heading "$OUT/check.log" $B
checks "$OUT/check.log" $B vs_cpu declines conformance_cuda
L="$OUT/bench.log"
heading "$L" $B
peers "$L" $B
proves "$L" "pageable pinned" "blake3 keccak" $B
cold_starts "$OUT/cold.log" $B
