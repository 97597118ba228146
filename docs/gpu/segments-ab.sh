#!/usr/bin/env bash
# Issue 16 follow-up on nvidia-h200-x2: (1) what the segment columns cost a
# whole run: the 2^20-cycle chain on CUDA with kiln before them
# (.gpu-bin/kiln-old, built at c47fe19) and after (.gpu-bin/kiln), A B B A
# twice after a warm-up of each; (2) segments in flight per GPU (--jobs 1,
# 2, 3) on one and two H200s, every file identical. Log: $OUT/segments-ab.log
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export KILN_CACHE_DIR=/tmp/kiln-cache
W=/tmp/seg && mkdir -p $W
exec > >(tee "$OUT/segments-ab.log") 2>&1
cat .gpu-bin/commit
show() { python3 -c 'import json,sys; v=json.load(sys.stdin); t=v["timings_ms"]; print("'"$1"'", "total %.0f prove %.0f trace %.0f device_start %s" % (v["total_ms"], t["prove"], t["trace"], v.get("device_start_ms")), v["prover_rounds_ms"])'; }
W2="vm/examples/chain.kasm --input 262142,3 --backend cuda --json"
.gpu-bin/kiln-old prove $W2 --out $W/old.proof >/dev/null; .gpu-bin/kiln prove $W2 --out $W/new.proof >/dev/null
for b in old new new old old new new old; do
  if [ $b = old ]; then .gpu-bin/kiln-old prove $W2 --out $W/old.proof | show old; else .gpu-bin/kiln prove $W2 --out $W/new.proof | show new; fi
done
C="vm/examples/chain.kasm --input 4194302,3 --segment-cycles 2^20 --backend cuda --json"
seg() { python3 -c 'import json,sys; v=json.load(sys.stdin); print("'"$1"'", "prove %.0f ms, %.2f segments/s, verify %.1f ms/segment" % (v["prove_ms"], v["segments_per_s"], v["verify_ms_per_segment"]))'; }
for j in 1 2 3; do
  for d in 0 0,1; do
    timeout 120 .gpu-bin/kiln prove $C --devices $d --jobs $j --out $W/s-$j-$d.proof | seg "devices $d jobs $j:"
  done
done
for f in $W/s-*.proof; do cmp $W/s-1-0.proof $f || echo "DIFFER $f"; done; echo "compared $(ls $W/s-*.proof | wc -l) segmented files"
