#!/usr/bin/env bash
# Keccak-f rotations on the SHF pipe or the IMAD pipe (keccak_rot.cu). On
# the GPU machine, from the repository root:
#   bash benches/keccak-rot/run.sh [LOG_STATES] [REPS]   (defaults 20, 16)
# Prints each kernel's SASS instruction mix (SHF, LOP3, IMAD) and the
# permutations per second of each variant, states compared.
set -euo pipefail
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
ARCH=${ARCH:-sm_90}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$NVCC" --version | tail -1
"$NVCC" -O3 -std=c++17 -arch="$ARCH" -Xptxas -v -cubin -o "$W/k.cubin" benches/keccak-rot/keccak_rot.cu
"$(dirname "$NVCC")/cuobjdump" -sass "$W/k.cubin" | python3 benches/sass_mix.py
"$NVCC" -O3 -std=c++17 -arch="$ARCH" -o "$W/keccak_rot" benches/keccak-rot/keccak_rot.cu
"$W/keccak_rot" "${1:-20}" "${2:-16}"
