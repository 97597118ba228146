#!/usr/bin/env bash
# Recomputed residency (issue 15) on one H200, with .gpu-run carried (kiln
# with CUDA, the residency example and the CUDA conformance test binary,
# built on the development machine). Logs in $OUT. PART=1: the CUDA
# conformance groups that recompute touches (blowup-1 LDEs, leaf digests
# and rows, recomputed proofs); the seeds' shape 2^21 x 449 at blowup 4,
# kept on the whole card, recomputed and spilled under a 24 GiB cap; the
# 2^20-cycle VM program kept and recomputed through the CLI, on CUDA and
# on the host's CPU (wall and peak RSS). PART=2:
# 2^22 x 512 kept on the whole card and recomputed under a 64 GiB cap.
# PART=3: the CUDA conformance groups that pieces touch (intt_in_place,
# fold_coeffs, composition on a piece given its next rows,
# combine_columns, proofs recomputed in pieces), then 2^22 x 512 kept and recomputed under a 32 GiB cap (cosets
# in pieces), as chosen by --residency recompute and by auto. PART=4: the
# same two runs, kept and recomputed under 32 GiB, three proofs each on a
# warm device.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache
B=${B:-.gpu-run}
cat $B/commit
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "${PART:-1}" = 1 ]; then
  timeout 240 $B/conformance_cuda coset_lde merkle stark_proofs vm_proofs --test-threads 1 > "$OUT/conformance.log" 2>&1
  grep -E "cases:|test result|recomputed|FAIL|fail" "$OUT/conformance.log" | head -30
  /usr/bin/time -v timeout 300 $B/residency 21 449 4 24 modes=recompute,spill > "$OUT/residency-21x449.log" 2> "$OUT/residency-21x449.time"
  cat "$OUT/residency-21x449.log"; grep -E "Maximum resident|Elapsed|error" "$OUT/residency-21x449.time"
  P="vm/examples/chain.kasm --input 262142,3 --backend cuda"
  for r in keep recompute; do
    for i in 1 2 3; do $B/kiln prove $P --residency $r --out /tmp/chain-$r.proof; done
    $B/kiln prove $P --residency $r --out /tmp/chain-$r.proof --timings
  done > "$OUT/cli-chain.log" 2>&1
  cmp /tmp/chain-keep.proof /tmp/chain-recompute.proof && echo "chain: kept and recomputed proof files identical" | tee -a "$OUT/cli-chain.log"
  grep -E "memory|^total|error" "$OUT/cli-chain.log"
  P="vm/examples/chain.kasm --input 262142,3 --backend cpu"
  for r in keep recompute; do
    for i in 1 2 3; do /usr/bin/time -f "wall %e s, peak RSS %M KB" $B/kiln prove $P --residency $r --out /tmp/cpu-$r.proof; done
  done > "$OUT/cli-chain-cpu.log" 2>&1
  cmp /tmp/cpu-keep.proof /tmp/cpu-recompute.proof && cmp /tmp/cpu-keep.proof /tmp/chain-keep.proof && echo "chain: CPU kept, CPU recomputed and CUDA proof files identical" | tee -a "$OUT/cli-chain-cpu.log"
  grep -E "memory|^total|wall|error" "$OUT/cli-chain-cpu.log"
fi
if [ "${PART:-1}" = 2 ]; then
  /usr/bin/time -v timeout 400 $B/residency 22 512 4 64 modes=recompute > "$OUT/residency-22x512.log" 2> "$OUT/residency-22x512.time"
  cat "$OUT/residency-22x512.log"; grep -E "Maximum resident|Elapsed|error" "$OUT/residency-22x512.time"
fi
if [ "${PART:-1}" = 3 ]; then
  timeout 300 $B/conformance_cuda ntt coset_lde compose deep error_parity properties stark_proofs vm_proofs --test-threads 1 > "$OUT/conformance.log" 2>&1
  grep -E "cases:|test result|piece|quarters|halves|FAIL|fail" "$OUT/conformance.log" | grep -v " pass$" | head -30
  grep -cE "on a piece .* pass$|quarters .* pass$|halves .* pass$" "$OUT/conformance.log"
  /usr/bin/time -v timeout 400 $B/residency 22 512 4 32 modes=recompute,auto > "$OUT/residency-22x512-32.log" 2> "$OUT/residency-22x512-32.time"
  cat "$OUT/residency-22x512-32.log"; grep -E "Maximum resident|Elapsed|error" "$OUT/residency-22x512-32.time"
fi
if [ "${PART:-1}" = 4 ]; then
  /usr/bin/time -v timeout 400 $B/residency 22 512 4 32 modes=recompute reps=3 > "$OUT/residency-22x512-32-reps.log" 2> "$OUT/residency-22x512-32-reps.time"
  cat "$OUT/residency-22x512-32-reps.log"; grep -E "Maximum resident|Elapsed|error" "$OUT/residency-22x512-32-reps.time"
fi
