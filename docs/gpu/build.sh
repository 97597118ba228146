#!/usr/bin/env bash
# Builds, on a machine with a Rust toolchain, everything the GPU scripts run
# into .gpu-bin (release, stripped; git-ignored): the kiln CLI with CUDA
# and wgpu, the benches, the CUDA backend's GPU tests, both GPU conformance
# suites, and Debian's Vulkan loader (the GPU machine has the NVIDIA ICD
# but no loader). Carry .gpu-bin with the device tool's `carry`.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=.gpu-bin
rm -rf "$B" && mkdir -p "$B"
git rev-parse --short HEAD > "$B/commit"
cargo build --release -p vm --features cuda,wgpu
cargo build --release -p backend-cuda --example cuda_bench
cargo build --release -p benches --features cuda,wgpu --example prove_vm --example compose_kernels --example gpu_stages \
    --example prove_share --example model_check --example residency --example main_round --example prove_air
cp target/release/kiln target/release/examples/{cuda_bench,prove_vm,compose_kernels,gpu_stages,prove_share,model_check,residency,main_round,prove_air} "$B/"
# Test binaries: `name path` for every test target the cargo call builds.
tests() {
    cargo test --release "$@" --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])'
}
tests -p backend-cuda --features fault-injection | while read -r n e; do cp "$e" "$B/$n"; done
tests -p conformance --features cuda --test cuda | while read -r n e; do cp "$e" "$B/conformance_cuda"; done
tests -p conformance --features wgpu --test wgpu | while read -r n e; do cp "$e" "$B/conformance-wgpu"; done
strip "$B"/* 2>/dev/null || true
(cd /tmp && rm -rf vk libvulkan1_*.deb && apt-get download libvulkan1 >/dev/null && dpkg-deb -x libvulkan1_*.deb vk)
cp -L /tmp/vk/usr/lib/x86_64-linux-gnu/libvulkan.so.1 "$B/"
# The Plonky3 peer bench: Plonky3 picks its SIMD code at compile time, so
# it is built for AVX-512 (the host's Xeons have it) in a target dir of its own.
RUSTFLAGS="-C target-cpu=x86-64-v4" CARGO_TARGET_DIR=target/v4 cargo build --release -p benches --example vs_plonky3
cp target/v4/release/examples/vs_plonky3 "$B/"
# The sppark peer bench: ntt_io and sppark's CUDA headers (benches/sppark/run.sh).
bash benches/sppark/build.sh "$B"
du -sh "$B"; ls "$B"
