#!/usr/bin/env bash
# sppark's Goldilocks NTT beside Kiln's CUDA NTT on the same inputs. On the
# GPU machine, from the repository root, with BIN made by build.sh:
#   bash benches/sppark/run.sh .gpu-bin [LOG_N] [WIDTH]     (defaults 20, 64)
# Compiles ntt_peer.cu with nvcc against BIN/sppark, then runs Kiln,
# sppark, sppark, Kiln (A B B A) on one input file in a scratch folder;
# the last step checks the outputs agree and prints the table (also
# written to $OUT/sppark_peer.txt when $OUT is set).
set -euo pipefail
B=${1:?usage: run.sh BIN [LOG_N] [WIDTH]}
LOG_N=${2:-20}
WIDTH=${3:-64}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
ARCH=${ARCH:-sm_90}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
{
    echo "commit: $(cat "$B/commit" 2>/dev/null || echo unknown); sppark 0.1.16 (crates.io); $(date -u +%F)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
    "$NVCC" --version | tail -1
} | tee "$W/table.txt"
"$NVCC" -O3 -std=c++17 -arch="$ARCH" -I"$B/sppark" -o "$W/ntt_peer" benches/sppark/ntt_peer.cu
"$B/ntt_io" prep "$W" "$LOG_N" "$WIDTH"
"$W/ntt_peer" "$W" 1
"$W/ntt_peer" "$W" 2
"$B/ntt_io" check "$W" | tee -a "$W/table.txt"
if [ -n "${OUT:-}" ]; then
    cp "$W/table.txt" "$OUT/sppark_peer.txt"
fi
