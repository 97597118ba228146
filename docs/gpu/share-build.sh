#!/usr/bin/env bash
# Builds, on the development machine, the binaries docs/gpu/share-h200.sh
# runs on the GPU machine: release, stripped (profile.release.strip), into
# .gpu-bin/ (git-ignored), with stable names. Carry it with the run:
# `carry: [".gpu-bin"]`.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-bin
cargo build --release --features cuda -p vm
cargo build --release -p benches --features cuda --example prove_share --example model_check
cp target/release/kiln target/release/examples/prove_share target/release/examples/model_check .gpu-bin/
# Test binaries carry a hash in their names: take them from cargo's JSON.
cargo test --release -p backend-cuda --features fault-injection --no-run --message-format=json \
  | python3 -c '
import json, shutil, sys
want = {"concurrency", "races", "visible_devices", "declines", "vs_cpu"}
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and t.get("kind") == ["test"] and t.get("name") in want and m.get("executable"):
        shutil.copy(m["executable"], ".gpu-bin/" + t["name"])
        want.discard(t["name"])
if want:
    sys.exit("missing test binaries: " + ", ".join(sorted(want)))
'
ls -la .gpu-bin
du -sh .gpu-bin
