#!/usr/bin/env bash
# The conformance groups that compose, with the interpreter kernel selected.
export KILN_CACHE_DIR=/tmp/kiln-cache
KILN_CUDA_COMPOSE=interpret KILN_CONFORMANCE_MAX_LOG=20 .gpu-bin/conformance_cuda --test-threads 1 compose stark_proofs vm_proofs 2>&1 | grep -E "^test |cases:|test result"
