#!/usr/bin/env bash
# Session 19 on the H200 (binaries built on the development machine and
# carried in .gpu-run, the Vulkan loader's packages in .gl):
#   cold   `kiln prove` of the 2^20-cycle program with empty kernel caches
#          (ours and the driver's, fresh per run), for each binary in
#          $COLD, alternated; then every kernel's cold NVRTC time alone;
#   wgpu   the wgpu backend against CUDA: `prove_vm` (rounds and stages)
#          for each binary in $PROVE, `gpu_stages` (the stages, uploads
#          and downloads included) at 2^20 x 64 for each in $STAGES, and
#          one `kiln prove --backend wgpu --timings` (per table);
#   check  `vs_cpu` and the CUDA conformance groups that run inverses
#          (logup, deep, compose, stark_proofs, vm_proofs; to 2^18 rows),
#          and the 2^20-cycle program's proof from each binary in $PROOFS
#          on CUDA and from kiln-new on wgpu, compared byte for byte.
#   wgpucold  `kiln prove --backend wgpu` of the 2^20-cycle program with
#          the driver's shader cache off and in a fresh folder, for each
#          binary in $COLDW (what a first prove on a machine pays);
#   wgpucheck  the wgpu conformance groups $WGROUPS (compose,
#          stark_proofs and vm_proofs) on the H200 (to 2^$MAXLOG rows, 18 unless set), and
#          (when that binary is carried) $CHECK_KILN's wgpu proof
#          against its CUDA proof;
#   profile    one prove_vm run ($PROFILE) with KILN_WGPU_PROFILE=1: the
#          wgpu backend's device time per stage and kernel;
#   roundtrip  wgpu's own round trips on the H200 (`round_trip`, from
#          backend-wgpu's examples): submission, dispatch, small and large
#          read-backs into fresh and reused staging, an allocation.
# Binaries carried gzipped (`*.gz`) are unpacked first.
# Run from the repository root:
#   bash docs/gpu/session-s19.sh cold|wgpu|check|wgpucold|wgpucheck|profile|roundtrip
# Logs go to $OUT.
set -uo pipefail
B=.gpu-run
OUT=${OUT:-/tmp/s19}
mkdir -p "$OUT"
CHAIN="vm/examples/chain.kasm --input 262142,3"
L="$OUT/$1.log"
log() { echo "== $*" | tee -a "$L"; }
# The Vulkan loader (the machine has only the NVIDIA ICD) for wgpu.
vulkan() {
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
}
for z in $B/*.gz; do [ -e "$z" ] && gunzip -f "$z" && chmod +x "${z%.gz}"; done
log "$(cat $B/commit) on $(nproc) cores; $(nvidia-smi -L | head -1)"
case "$1" in
cold)
    for round in 1 2; do
        for K in ${COLD:-kiln-new}; do
            d=$(mktemp -d)
            log "$K round $round: chain 2^20 --backend cuda, empty caches (wall, peak RSS, stages; device line)"
            KILN_CACHE_DIR=$d/kiln CUDA_CACHE_PATH=$d/nv $B/$K prove $CHAIN --backend cuda --timings \
                --out /tmp/$K.proof 2>&1 | grep -E "^(stages|device)" | tee -a "$L"
        done
    done
    log "every kernel, cold, one at a time"
    CUDA_CACHE_PATH=$(mktemp -d) $B/kernel_compile 2>&1 | tee -a "$L"
    ;;
wgpu)
    vulkan
    for P in ${PROVE:-prove_vm-new}; do
        log "$P chain 262142,3 2 (CPU vs CUDA, then CUDA vs wgpu)"
        $B/$P vm/examples/chain.kasm 262142,3 2 2>&1 | tee -a "$L"
    done
    for G in ${STAGES:-gpu_stages}; do
        log "$G 20 64 3"
        $B/$G 20 64 3 2>&1 | tee -a "$L"
    done
    log "kiln-new prove $CHAIN --backend wgpu --timings (second run: warm driver cache)"
    for i in 1 2; do
        $B/kiln-new prove $CHAIN --backend wgpu --timings --out /tmp/w.proof > "$OUT/wgpu-timings.txt" 2>&1
    done
    tee -a "$L" < "$OUT/wgpu-timings.txt"
    ;;
check)
    $B/vs_cpu --test-threads 1 2>&1 | tail -3 | tee -a "$L"
    for g in logup deep compose stark_proofs vm_proofs; do
        KILN_CONFORMANCE_MAX_LOG=18 $B/conformance_cuda "cuda::$g" --exact --test-threads 1 2>&1 \
            | grep -E "cases|test result" | tee -a "$L"
    done
    for K in ${PROOFS:-kiln-new}; do
        $B/$K prove $CHAIN --backend cuda --out "$OUT/$K-cuda.proof" | grep -E "^proof" | tee -a "$L"
    done
    vulkan
    $B/kiln-new prove $CHAIN --backend wgpu --out "$OUT/kiln-new-wgpu.proof" | grep -E "^proof" | tee -a "$L"
    for p in "$OUT"/*.proof; do echo "$(sha256sum < "$p" | cut -c1-16) $(basename "$p")"; done | tee -a "$L"
    ;;
wgpucold)
    vulkan
    for K in ${COLDW:-kiln-new}; do
        log "$K: --backend wgpu, driver shader cache off"
        __GL_SHADER_DISK_CACHE=0 __GL_SHADER_DISK_CACHE_PATH=$(mktemp -d) $B/$K prove $CHAIN --backend wgpu \
            --timings --out /tmp/$K.proof 2>&1 | grep -E "^(stages|rounds|prover|total)" | tee -a "$L"
    done
    ;;
wgpucheck)
    vulkan
    export KILN_REQUIRE_WGPU=1
    for g in ${WGROUPS:-compose stark_proofs vm_proofs}; do
        KILN_CONFORMANCE_MAX_LOG=${MAXLOG:-18} $B/conformance-wgpu "wgpu::$g" --exact --test-threads 1 2>&1 \
            | grep -E "cases|test result" | tee -a "$L"
    done
    [ -e "$B/${CHECK_KILN:-kiln-new}" ] || exit 0
    for be in cuda wgpu; do
        $B/${CHECK_KILN:-kiln-new} prove $CHAIN --backend $be --out "$OUT/$be.proof" | grep -E "^proof" | tee -a "$L"
    done
    cmp "$OUT/cuda.proof" "$OUT/wgpu.proof" && echo "wgpu proof identical to the CUDA proof" | tee -a "$L"
    ;;
profile)
    vulkan
    log "KILN_WGPU_PROFILE=1 ${PROFILE:-prove_vm-new} chain 262142,3 1 (device time per kernel; every job waits)"
    KILN_WGPU_PROFILE=1 $B/${PROFILE:-prove_vm-new} vm/examples/chain.kasm 262142,3 1 2>&1 | tee -a "$L"
    ;;
roundtrip)
    vulkan
    $B/round_trip 512 2>&1 | tee -a "$L"
    ;;
esac
