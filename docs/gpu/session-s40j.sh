#!/usr/bin/env bash
# Issue 14's GPU rows in one call at the session's last code commit, as
# session-s39c.sh, with f0ea7ff's prove_air (.gpu-run/base) alternated
# with this build's in the prove rows. .gpu-run as
# docs/gpu/logs/s40/README.md says (with sp, icicle and base). Logs in
# $OUT.
OUT=${OUT:-/tmp/s40j}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
heading "$OUT/check.log" $B
checks "$OUT/check.log" $B vs_cpu declines conformance_cuda
conformance "$OUT/check.log" $B 22 split_quotient deep
L="$OUT/bench.log"
heading "$L" $B
peers "$L" $B
proves "$L" "pageable pinned" "blake3 keccak" $B/base $B
timelines "$L" $B/base $B
cold_starts "$OUT/cold.log" $B
