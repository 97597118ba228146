#!/usr/bin/env bash
# The wgpu backend on the lent H200, through Vulkan: the conformance suite
# up to 2^20 rows, every VM example proved with --backend wgpu and compared
# byte for byte with the CPU proof (and verified), per-stage times of wgpu
# against CUDA on the same card, and the 2^20-cycle program's prove time.
#
# Run from the repository root on the GPU machine:
#   bash docs/gpu/wgpu-h200.sh [all|devices|conformance|GROUP|vm|stages|prove]
# (GROUP: one conformance group, e.g. ntt, merkle, vm_proofs; each phase
# fits the machine's 10-minute command limit on its own.)
#
# Needs, in .gpu-bin/ (git-ignored, carried to the machine), the stripped
# release binaries built on the development machine:
#
#   cargo build --release -p vm --features cuda,wgpu
#   cargo build --release -p benches --features cuda,wgpu --example gpu_stages --example prove_vm
#   cargo test --release -p conformance --features wgpu --test wgpu --no-run --message-format=json \
#     | jq -r 'select(.executable != null and .target.name == "wgpu") | .executable' > /tmp/conf-wgpu
#   mkdir -p .gpu-bin && cp target/release/kiln target/release/examples/gpu_stages \
#     target/release/examples/prove_vm .gpu-bin/ && cp "$(cat /tmp/conf-wgpu)" .gpu-bin/conformance-wgpu
#   (cd /tmp && apt-get download libvulkan1 && dpkg-deb -x libvulkan1_*.deb vk) \
#     && cp -L /tmp/vk/usr/lib/x86_64-linux-gnu/libvulkan.so.1 .gpu-bin/
#
# (The release profile strips symbols.) The machine has the NVIDIA Vulkan
# driver's ICD file but no Vulkan loader: the loader comes from
# .gpu-bin/libvulkan.so.1 (Debian's libvulkan1), and VK_DRIVER_FILES points
# at the NVIDIA ICD when it is not set already. Logs go to $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=.gpu-bin
OUT=${OUT:-/tmp/wgpu-h200}
mkdir -p "$OUT"
phase=${1:-all}

[ -e "$BIN/libvulkan.so.1" ] && export LD_LIBRARY_PATH="$PWD/$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -z "${VK_ICD_FILENAMES:-}" ]; then
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
        /etc/vulkan/icd.d/nvidia_icd.json; do
        if [ -e "$icd" ]; then
            export VK_DRIVER_FILES="$icd"
            break
        fi
    done
fi
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
# The wgpu tests fail, rather than skip, when no adapter is found.
export KILN_REQUIRE_WGPU=1

run() {
    # Runs a command, keeping its output in $OUT/<name>.log.
    local name=$1
    shift
    echo "== $name: $*"
    local t0=$SECONDS
    "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "== $name: exit $rc in $((SECONDS - t0)) s"
    return "$rc"
}

devices() {
    run devices "$BIN/kiln" devices
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
}

# The suite up to 2^20 rows; every group separately so each fits the
# command limit and a failure names its group. The summary tables are in
# the logs.
GROUPS="transfers ntt coset_lde merkle logup compose split_quotient deep fri_fold grind error_parity stark_proofs vm_proofs properties"
conformance_group() {
    KILN_CONFORMANCE_MAX_LOG=20 run "conformance-$1" "$BIN/conformance-wgpu" --exact "wgpu::$1" --test-threads 1
}

# Every VM example with --backend wgpu and --backend cpu: the proof files
# must be identical, and the wgpu proof must verify.
vm() {
    local fail=0
    local dir="$OUT/proofs"
    mkdir -p "$dir"
    while read -r prog input; do
        local base
        base=$(basename "$prog" .kasm)
        for b in cpu wgpu; do
            run "prove-$base-$b" "$BIN/kiln" prove "$prog" --input "$input" --backend "$b" --on-decline strict \
                --out "$dir/$base.$b.proof" || fail=1
        done
        if cmp "$dir/$base.cpu.proof" "$dir/$base.wgpu.proof"; then
            echo "SAME $base ($(stat -c %s "$dir/$base.wgpu.proof") bytes)" | tee -a "$OUT/vm-compare.log"
        else
            echo "DIFFER $base" | tee -a "$OUT/vm-compare.log"
            fail=1
        fi
        run "verify-$base" "$BIN/kiln" verify "$dir/$base.wgpu.proof" || fail=1
    done <<'EOF'
vm/examples/fibonacci.kasm 1000
vm/examples/factorial.kasm 20
vm/examples/matmul.kasm 8
vm/examples/chain.kasm 262142,3
EOF
    return $fail
}

# Per-stage times, wgpu against CUDA (A B B A), with 32-bit-limb products
# and with SHADER_INT64 products.
stages() {
    run stages-2e20x64 "$BIN/gpu_stages" 20 64 3
    KILN_WGPU_INT64=1 run stages-2e20x64-int64 "$BIN/gpu_stages" 20 64 3
}

# The 2^20-cycle program's prove time: CPU vs CUDA and CUDA vs wgpu, A B B A.
prove() {
    run prove-chain-2e20 "$BIN/prove_vm" vm/examples/chain.kasm 262142,3 2
    KILN_WGPU_INT64=1 run prove-chain-2e20-int64 "$BIN/prove_vm" vm/examples/chain.kasm 262142,3 1
}

status=0
case "$phase" in
all)
    devices || status=1
    for g in $GROUPS; do conformance_group "$g" || status=1; done
    vm || status=1
    stages || status=1
    prove || status=1
    ;;
devices) devices || status=1 ;;
conformance) for g in $GROUPS; do conformance_group "$g" || status=1; done ;;
vm) vm || status=1 ;;
stages) stages || status=1 ;;
prove) prove || status=1 ;;
*) conformance_group "$phase" || status=1 ;;
esac
echo "== summary"
grep -h "cases:" "$OUT"/conformance-*.log 2>/dev/null | sort | uniq -c || true
grep -h "^SAME\|^DIFFER" "$OUT"/*.log 2>/dev/null || true
exit $status
