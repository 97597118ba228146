#!/usr/bin/env bash
# The LDE prototype on the warp NTT's kernels (benches/ntt-proto/lde.cu)
# beside sppark's LDE and Kiln's backend LDE, in one call: sppark's
# harness (A B B A with Kiln's ntt_io), then the prototype twice, then the
# harness again. .gpu-run/sp from `bash benches/sppark/build.sh
# .gpu-run/sp`. Logs in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/s38f}
mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache CUDA_CACHE_PATH=/tmp/nv-cache
L="$OUT/lde-vs-sppark.log"
echo "== tree $(git rev-parse --short HEAD 2>/dev/null); ntt_io $(cat .gpu-run/sp/commit); $(nvidia-smi -L | head -1)" | tee -a "$L"
timeout 200 bash benches/sppark/run.sh .gpu-run/sp 2>&1 | grep -E "^\|" | tee -a "$L"
OUT=$OUT timeout 200 bash benches/ntt-proto/lde.sh 2>&1 | grep -E "^LDE" | tee -a "$L"
timeout 200 bash benches/sppark/run.sh .gpu-run/sp 2>&1 | grep -E "^\|" | tee -a "$L"
