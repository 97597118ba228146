#!/usr/bin/env bash
# Another representation of the field beside Kiln's NTT (issue 14): the
# public yrrid/GoldilocksNTT (MIT) keeps elements as four 24-bit limbs in
# int32 modulo 2^96 + 1 and runs batched 1024-point NTTs, one warp each,
# 32 elements a lane in registers. It has no 2^20 transform, so this
# times both sides at 1024 points on the same amount of data, and the
# peer also from L2 only and without its arithmetic, to bound what a 2^20
# transform built from two such passes could take.
#
# Staging, on a machine with git (its code is not part of this repository):
#   mkdir -p .gpu-run/yrrid && git -C <clone of yrrid/GoldilocksNTT> archive 43d3b27 | tar -x -C .gpu-run/yrrid
#   cargo build --release -p benches --features cuda --example ntt_io && cp target/release/examples/ntt_io .gpu-run/
# On the GPU machine: bash docs/gpu/yrrid-peer.sh   (logs in $OUT)
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/yrrid}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$OUT"
L="$OUT/yrrid-peer.log"
W=$(mktemp -d)
cp $B/yrrid/* "$W"/
sms=$(python3 - <<'EOF' 2>/dev/null || echo 132
import ctypes
cu = ctypes.CDLL("libcuda.so.1"); cu.cuInit(0)
d = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(d), 0)
v = ctypes.c_int(); cu.cuDeviceGetAttribute(ctypes.byref(v), 16, d)  # MULTIPROCESSOR_COUNT
print(v.value)
EOF
)
# The peer's launches assume a 60-SM card: one persistent block an SM.
sed -i "s/<<<60,/<<<$sms,/" "$W/Tester.cu" "$W/DataOnly.cu"
{
    echo "== kiln $(cat $B/commit); yrrid/GoldilocksNTT 43d3b27; $(nvidia-smi -L | head -1); $sms SMs; $($NVCC --version | tail -1)"
} | tee -a "$L"
(cd "$W" && $NVCC -O3 -arch=sm_90 Tester.cu -o gpu_tester && $NVCC -O3 -arch=sm_90 Tester.cu -o compute_only -DCOMPUTE_ONLY \
    && $NVCC -O3 -arch=sm_90 DataOnly.cu -o data_only && gcc -O2 Correct.c -o correct) 2>&1 | grep -v "^$" | tail -5 | tee -a "$L"
# The peer's own check: the same rand() inputs through its CPU model.
(cd "$W" && ./gpu_tester 264 3 > g.txt 2>/dev/null && ./correct 264 3 > c.txt 2>/dev/null \
    && cmp -s g.txt c.txt && echo "peer output matches its CPU model (264 NTTs x 3)" || echo "PEER OUTPUT DIFFERS") | tee -a "$L"
# 65536 transforms of 1024 points: the 512 MiB of a 64 x 2^20 matrix.
for run in 1 2; do
    for what in gpu_tester compute_only data_only; do
        echo "$what 65536 x 20: $(cd "$W" && ./$what 65536 20 2>&1 >/dev/null | grep Runtime) (20 launches)" | tee -a "$L"
    done
    echo "gpu_tester 3072 x 100 (L2-resident): $(cd "$W" && ./gpu_tester 3072 100 2>&1 >/dev/null | grep Runtime)" | tee -a "$L"
    echo "-- kiln ntt_io 2^10 x 65536 (median of 15)" | tee -a "$L"
    $B/ntt_io prep "$W/k10" 10 65536 2>&1 | grep ntt | tee -a "$L"
    echo "-- kiln ntt_io 2^20 x 64 (median of 15)" | tee -a "$L"
    $B/ntt_io prep "$W/k20" 20 64 2>&1 | grep ntt | tee -a "$L"
    rm -rf "$W/k10" "$W/k20"
done

# Kiln's prototype at the same size (benches/ntt-proto/warp1024.cu): one
# warp a transform in canonical 64-bit arithmetic, at four register caps.
for v in "8 1" "4 3" "8 2" "4 4"; do
    set -- $v
    echo "-- warp1024 prototype, WARPS=$1 MINB=$2" | tee -a "$L"
    $NVCC -O3 -std=c++17 -arch=sm_90 -DWARPS=$1 -DMINB=$2 -o /tmp/warp1024 benches/ntt-proto/warp1024.cu 2>&1 | grep -v "^$" | tail -3 | tee -a "$L"
    /tmp/warp1024 65536 2>&1 | tee -a "$L"
done
rm -rf "$W"
