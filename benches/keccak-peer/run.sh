#!/usr/bin/env bash
# Kiln's Keccak-256 leaves and permutation beside ICICLE v2's (peer.cu),
# built with nvcc on the GPU machine. ICICLE's source is not in this
# repository: put the two files it needs under DIR first (here, where git
# can reach GitHub; .gpu-run is carried to the GPU machine):
#   mkdir -p .gpu-run/icicle && git -C <clone of ingonyama-zk/icicle> archive 9c9e76490 \
#       icicle/src/hash/keccak/kernels.cu icicle/include/gpu-utils/modifiers.cuh | tar -x -C .gpu-run/icicle
# Then, on the GPU machine, from the repository root:
#   bash benches/keccak-peer/run.sh [DIR] [LOG_ROWS] [REPS]   (defaults .gpu-run/icicle, 21, 16)
# Prints one markdown table, and the SASS instruction mix of each kernel.
# NVCC_FLAGS=-DKILN_KECCAK='"PATH"' times another keccak.cuh of ours in
# place of the checkout's (an absolute PATH without spaces: a quoted
# include is found relative to peer.cu).
set -euo pipefail
DIR=${1:-.gpu-run/icicle}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
ARCH=${ARCH:-sm_90}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
FLAGS=(${NVCC_FLAGS:-} -O3 -std=c++17 -arch="$ARCH" -I"$DIR/icicle/include" -DICICLE_KECCAK="\"$(realpath "$DIR")/icicle/src/hash/keccak/kernels.cu\"")
"$NVCC" "${FLAGS[@]}" -cubin -o "$W/k.cubin" benches/keccak-peer/peer.cu
"$(dirname "$NVCC")/cuobjdump" -sass "$W/k.cubin" | python3 benches/sass_mix.py permute leaves hash_blocks
"$NVCC" "${FLAGS[@]}" -o "$W/peer" benches/keccak-peer/peer.cu
"$W/peer" "${2:-21}" "${3:-16}"
