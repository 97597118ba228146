#!/usr/bin/env bash
# Traces bigger than the card (issue 15), on one H200 with .gpu-bin carried
# (built by docs/gpu/build.sh, or just kiln, residency and conformance_cuda).
# Logs in $OUT. Sections: the CUDA conformance proof groups (spilled cases
# included); the seeds' shape, 2^21 x 449 at blowup 4, kept on the whole
# card, spilled under a 24 GiB cap, and on the CPU; the 2^20-cycle VM
# program kept and spilled through the CLI; then 2^22 x 512 (64 GiB of LDE)
# kept and under a 32 GiB cap.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache
B=.gpu-bin
cat $B/commit
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
free -g | head -2
[ "${SMALL:-1}" = 1 ] && (timeout 240 $B/conformance_cuda stark_proofs vm_proofs --test-threads 1 2>&1 | grep -E "spilled|test result|FAIL|fail" ) > "$OUT/conformance-proofs.log" 2>&1
tail -12 "$OUT/conformance-proofs.log"
[ "${SMALL:-1}" = 1 ] && /usr/bin/time -v timeout 300 $B/residency 21 449 4 24 cpu > "$OUT/residency-21x449.log" 2> "$OUT/residency-21x449.time"
cat "$OUT/residency-21x449.log"; grep -E "Maximum resident|Elapsed" "$OUT/residency-21x449.time"
P="vm/examples/chain.kasm --input 262142,3 --backend cuda"
[ "${SMALL:-1}" = 1 ] && for r in keep spill; do $B/kiln prove $P --residency $r --out /tmp/chain-$r.proof --vram-budget 8G; done > "$OUT/cli-chain.log" 2>&1
cmp /tmp/chain-keep.proof /tmp/chain-spill.proof && echo "chain: kept and spilled proof files identical" | tee -a "$OUT/cli-chain.log"
grep -E "memory|stages|total|error" "$OUT/cli-chain.log"
if [ "${BIG:-1}" = 1 ]; then
  /usr/bin/time -v timeout 300 $B/residency 22 512 4 32 > "$OUT/residency-22x512.log" 2> "$OUT/residency-22x512.time"
  cat "$OUT/residency-22x512.log"; grep -E "Maximum resident|Elapsed|error" "$OUT/residency-22x512.time"
fi
