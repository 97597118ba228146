#!/usr/bin/env bash
# Session 26 on the H200 host: the recomputed proof's queried rows
# evaluated alone (coset_rows), its values at z from the coefficients
# (evaluate_coeffs), and the CPU's tiled bit reversal. Binaries built on the
# development machine and carried (gzipped) in .gpu-run:
#   kiln-<v>     `cargo build --release -p vm --features cuda` at each
#                build <v>, with an uncommitted probe that prints VmRSS and
#                VmHWM after each prover stage when KILN_RSS is set;
#   conf-cuda    the conformance crate's `cuda` test binary (new).
# $VERSIONS names the builds a phase alternates (default "old new"). The
# logs in docs/gpu/logs/s26 say which commit each name was.
# Phases:
#   cpu    `kiln prove` of the 2^20-cycle program on the CPU, recomputed and
#          kept, the builds alternated, $ROUNDS rounds (default 3): wall,
#          peak RSS, CPU time, rounds, and the stage at the peak; the
#          proofs compared between builds and residencies;
#   check  conformance groups $CONF_GROUPS (default coset_lde deep
#          error_parity stark_proofs vm_proofs; to 2^16 rows) on CUDA;
#          the 2^20-cycle program's proofs on CUDA, kept and recomputed,
#          compared with each other, between builds and with the CPU's.
# Run from the repository root: bash docs/gpu/session-s26.sh cpu|check
# The phases are session 27's script's, which added `ops` and names the
# last of $VERSIONS where this one named `new` (the default's last).
OUT=${OUT:-/tmp/s26} exec bash "$(dirname "$0")/session-s27.sh" "$@"
