#!/usr/bin/env bash
# Issue 16 (segmented proving) on nvidia-h200-x2, from the repository root,
# with the kiln binary (features cuda) in .gpu-bin/ (docs/gpu/build.sh, or
# just `cargo build --release -p vm --features cuda,wgpu` and a copy).
# Log in $OUT/segments.log. About 3 minutes.
#
#  air       the VM's AIR with its segment columns on CUDA: every example's
#            proof file equals the CPU's; the 2^20-cycle whole-run prove
#  segments  2^24 cycles of chain.kasm in 16 segments of 2^20 on one H200
#            (--devices 0) and on two (--devices 0,1), A B B A: the files
#            are identical and verify; segments per second, verify time
#            per segment
#  memory    a run whose memory crosses every boundary (matmul 60 in
#            segments of 2^16): CUDA file equals the CPU file
#  cpu       the 2^24-cycle run on the CPU (16 cores) gives the same file
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
K=.gpu-bin/kiln
export KILN_CACHE_DIR=/tmp/kiln-cache
W=/tmp/seg && mkdir -p $W
exec > >(tee "$OUT/segments.log") 2>&1
set -x
cat .gpu-bin/commit; nvidia-smi --query-gpu=index,name,memory.total --format=csv

: ==== air
for ex in fibonacci:1000 factorial:20 matmul:8 chain:1000,3; do
  p=${ex%%:*}; i=${ex#*:}
  $K prove vm/examples/$p.kasm --input $i --backend cpu --out $W/cpu-$p.proof >/dev/null &&
  $K prove vm/examples/$p.kasm --input $i --backend cuda --out $W/cuda-$p.proof >/dev/null &&
  cmp $W/cpu-$p.proof $W/cuda-$p.proof && echo "AIR $p: cuda file identical to cpu"
done
for r in 1 2 3; do $K prove vm/examples/chain.kasm --input 262142,3 --backend cuda --json --out $W/w.proof | python3 -c 'import json,sys; v=json.load(sys.stdin); print("whole 2^20 run: prove_ms", v.get("prove_ms"), "total_ms", v.get("total_ms"))'; done

: ==== segments
C="vm/examples/chain.kasm --input 4194302,3 --segment-cycles 2^20 --backend cuda --json"
timeout 200 $K prove $C --devices 0 --out $W/one-a.proof
timeout 200 $K prove $C --devices 0,1 --out $W/two-a.proof
timeout 200 $K prove $C --devices 0,1 --out $W/two-b.proof
timeout 200 $K prove $C --devices 0 --out $W/one-b.proof
cmp $W/one-a.proof $W/two-a.proof && cmp $W/one-a.proof $W/two-b.proof && cmp $W/one-a.proof $W/one-b.proof && echo "SEGMENTS: 1 and 2 GPUs, 4 runs, identical files"
$K verify $W/two-a.proof --program vm/examples/chain.kasm --input 4194302,3 --json

: ==== memory
M="vm/examples/matmul.kasm --input 60 --segment-cycles 2^16 --json"
timeout 120 $K prove $M --backend cuda --devices 0,1 --out $W/mm-cuda.proof
timeout 200 $K prove $M --backend cpu --out $W/mm-cpu.proof
cmp $W/mm-cuda.proof $W/mm-cpu.proof && echo "MEMORY: cuda and cpu segmented files identical"

: ==== cpu
timeout 240 $K prove vm/examples/chain.kasm --input 4194302,3 --segment-cycles 2^20 --backend cpu --json --out $W/cpu.proof &&
cmp $W/cpu.proof $W/one-a.proof && echo "CPU: the 16-core file equals the GPU files"
ls -la $W
