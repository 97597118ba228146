#!/usr/bin/env bash
# Builds, from a fresh checkout, the binaries session-s43.sh runs, into
# .gpu-run (git-ignored; carry it): kiln (HEAD, --features cuda),
# kiln-reserve (HEAD with docs/gpu/logs/s42/first-prove/reserve.patch,
# built in a worktree of its own and never committed), and vs_plonky3-v4
# (HEAD, AVX-512: Plonky3 picks its SIMD code at compile time). About 6
# to 9 minutes on 2 cores from nothing (the variant's target dir builds
# the registry crates again).
set -euo pipefail
cd "$(dirname "$0")/../.."
R=.gpu-run
rm -rf "$R" && mkdir -p "$R"
git rev-parse --short HEAD >"$R/commit"
cargo build --release -p vm --features cuda
cp target/release/kiln "$R/kiln"
RUSTFLAGS="-C target-cpu=x86-64-v4" CARGO_TARGET_DIR=target/v4 cargo build --release -p benches --example vs_plonky3
cp target/v4/release/examples/vs_plonky3 "$R/vs_plonky3-v4"
wt=$(mktemp -d)
trap 'git worktree remove --force "$wt"' EXIT
git worktree add --detach "$wt" HEAD >/dev/null
git -C "$wt" apply "$PWD/docs/gpu/logs/s42/first-prove/reserve.patch"
# A target dir of its own: sharing the main one leaves the patched binary
# at target/release/kiln, and cargo, finding HEAD's units fresh, does not
# copy HEAD's back there on the next build.
(cd "$wt" && CARGO_TARGET_DIR="$OLDPWD/target/reserve" cargo build --release -p vm --features cuda)
cp target/reserve/release/kiln "$R/kiln-reserve"
# The patch adds KILN_S42_RESERVE: exactly one of the two must name it.
# (An if: set -e ignores a failure anywhere but last in an && list.)
if grep -q KILN_S42_RESERVE "$R/kiln" || ! grep -q KILN_S42_RESERVE "$R/kiln-reserve"; then
    echo "build-s43.sh: kiln and kiln-reserve are not HEAD and the variant;" \
        "a patched target/release/kiln left by an older build-s43.sh: touch vm/src/main.rs and rerun" >&2
    exit 1
fi
strip "$R"/kiln "$R"/kiln-reserve "$R"/vs_plonky3-v4
du -sh "$R"
ls "$R"
