#!/usr/bin/env bash
# The conformance logup group from 1 row to 2^22 rows.
export KILN_CACHE_DIR=/tmp/kiln-cache
KILN_CONFORMANCE_MAX_LOG=22 .gpu-bin/conformance_cuda --test-threads 1 --nocapture logup 2>&1 | grep -E "^logup|^test |cases:|test result"
