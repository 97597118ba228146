#!/usr/bin/env bash
# Where the wall of one `kiln prove --backend cuda` goes: whole-process
# walls (warm caches), the process's own accounting, the first prove
# against later proves of one process, lazy against eager module loading,
# and the time between the last line printed and the process's exit
# (teardown). Binaries in ${B:-.gpu-bin}; logs in $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
B=${B:-.gpu-bin}; export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/first-prove.log"
log() { echo "== $*" | tee -a "$L"; }
w() { python3 docs/gpu/wall.py "$@" | tee -a "$L"; }
CHAIN="vm/examples/chain.kasm --input 262142,3"
for K in ${KILNS:-kiln}; do
  log "$K: $(cat $B/commit 2>/dev/null) on $(nproc) cores; $(nvidia-smi -L | head -1)"
  $B/$K prove $CHAIN --backend cuda --out /tmp/c.proof > /dev/null
  log "$K chain 2^20 cuda, warm caches, 5 runs"
  for i in 1 2 3 4 5; do w $B/$K prove $CHAIN --backend cuda --out /tmp/c.proof; done
  log "$K default program cuda, 3 runs"
  for i in 1 2 3; do w $B/$K prove --backend cuda --out /tmp/d.proof; done
  log "$K chain, --timings"
  $B/$K prove $CHAIN --backend cuda --out /tmp/$K.proof --timings 2>&1 | grep -v "^ " | tee -a "$L"
  log "$K chain, CUDA_MODULE_LOADING=EAGER, 3 runs"
  for i in 1 2 3; do CUDA_MODULE_LOADING=EAGER w $B/$K prove $CHAIN --backend cuda --out /tmp/c.proof; done
  log "$K chain --repeat 3 --jobs 1 (later proves of one process)"
  $B/$K prove $CHAIN --backend cuda --repeat 3 --jobs 1 --out /tmp/r.proof --timings 2>&1 | grep -v "^ " | tail -25 | tee -a "$L"
  log "$K: the last line printed to the process's exit, 3 runs"
  for i in 1 2 3; do
    python3 - $B/$K prove $CHAIN --backend cuda --out /tmp/c.proof <<'PY' | tee -a "$L"
import subprocess, sys, time
t0 = time.monotonic(); p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
last = t0
for line in p.stdout: last = time.monotonic()
p.wait(); end = time.monotonic()
print(f"wall {end - t0:.3f} s, last line at {last - t0:.3f} s, exit {end - last:.3f} s after it")
PY
  done
done
set -- ${KILNS:-kiln}
[ $# -ge 2 ] && { cmp /tmp/$1.proof /tmp/$2.proof && log "$1 and $2: proof files identical" || log "$1 and $2: proofs DIFFER"; }
log "a bare CUDA process (python, driver API): context only, and with 4 GiB allocated; the last line to exit, 3 runs each"
for alloc in 0 4294967296; do
  for i in 1 2 3; do
    python3 - "$alloc" <<'PY' | tee -a "$L"
import subprocess, sys, time
child = r'''
import ctypes, sys
cu = ctypes.CDLL("libcuda.so.1"); cu.cuInit(0)
dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev); cu.cuCtxSetCurrent(ctx)
p = ctypes.c_uint64()
if int(sys.argv[1]): assert cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(int(sys.argv[1]))) == 0
print("ready", flush=True)
'''
t0 = time.monotonic(); p = subprocess.Popen([sys.executable, "-c", child, sys.argv[1]], stdout=subprocess.PIPE, text=True)
last = t0
for line in p.stdout: last = time.monotonic()
p.wait(); end = time.monotonic()
print(f"alloc {int(sys.argv[1]) >> 20} MiB: ready at {last - t0:.3f} s, exit {end - last:.3f} s after it")
PY
  done
done
