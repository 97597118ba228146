#!/usr/bin/env bash
# The concurrency fault of RESULTS.md section 9: uploads left without a
# pinned staging set copied synchronously from pageable memory, on the
# legacy stream, which returns before the last bytes land and which our
# streams do not wait for. The targeted test on the binaries before
# (concurrency-old) and after the fix, then the batches that showed it.
# Log: $OUT/pageable-race.log
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache
exec > >(tee "$OUT/pageable-race.log") 2>&1
cat .gpu-bin/commit
T=uploads_past_the_staging_sets_land_before_their_stream_reads_them
for bin in concurrency-old concurrency; do
  for i in 1 2 3; do
    KILN_SHARE_ROUNDS=5 timeout 120 .gpu-bin/$bin --exact $T --test-threads 1 2>&1 | grep -E "differs|test result" | head -3
  done
done
KILN_SHARE_ROUNDS=3 timeout 300 .gpu-bin/concurrency --test-threads 1 2>&1 | grep -E "^test |test result|peak|wait" | head -20
N1=${N1:-12} N2=0 N3=0 bash docs/gpu/batch-race.sh
