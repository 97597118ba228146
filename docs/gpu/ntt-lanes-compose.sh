set -uo pipefail; B=.gpu-bin; export KILN_CACHE_DIR=/tmp/kiln-cache; mkdir -p $OUT
python3 docs/gpu/arith_bound.py 2>&1 | tee $OUT/arith.log
echo "== vs_cpu (max 2^22)"; KILN_CUDA_TEST_MAX_LOG=22 $B/vs_cpu --test-threads=2 2>&1 | grep -E "^test |test result|panicked|differ" | head -20
echo "== conformance ntt, logup to 2^22"; KILN_CONFORMANCE_MAX_LOG=22 $B/conformance_cuda --test-threads 1 ntt logup 2>&1 | grep -E "^test |cases:|FAIL|fail" | head
echo "== conformance compose + proofs with the interpreter"; KILN_CUDA_COMPOSE=interpret KILN_CONFORMANCE_MAX_LOG=20 $B/conformance_cuda --test-threads 1 compose stark_proofs vm_proofs 2>&1 | grep -E "^test |cases:|FAIL|fail" | head
for l in 0 1 0 1; do echo "== cuda_bench KILN_CUDA_NTT_LANES=$l"; KILN_CUDA_NTT_LANES=$l $B/cuda_bench 2>&1 | grep -E "^(ntt|intt|coset_lde blowup 2|split)"; done
echo "== compose kernels"; $B/compose_kernels 20 2 2>&1 | tee $OUT/compose.log
