#!/usr/bin/env bash
# Prepares, on a machine with a Rust toolchain, what run.sh needs on the
# GPU machine, in BIN (default .gpu-bin, git-ignored; carry it): the
# ntt_io example (release, stripped) and the CUDA headers of the sppark
# crate, unpacked from its crates.io package (Apache-2.0; not vendored in
# this repository).
#   bash benches/sppark/build.sh [BIN]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-.gpu-bin}
V=0.1.16
mkdir -p "$B"
git rev-parse --short HEAD > "$B/commit"
cargo build --release -p benches --features cuda --example ntt_io
cp target/release/examples/ntt_io "$B/"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/src" && touch "$T/src/lib.rs"
printf '[package]\nname = "fetch-sppark"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nsppark = "=%s"\n' "$V" > "$T/Cargo.toml"
cargo fetch -q --manifest-path "$T/Cargo.toml"
crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/sppark-$V.crate | head -1)
tar xzf "$crate" -C "$T"
rm -rf "$B/sppark" && cp -r "$T/sppark-$V/sppark" "$B/sppark"
du -sh "$B"
