set -u
export KILN_CACHE_DIR=/tmp/kiln-cache
C="vm/examples/chain.kasm --input 4194302,3 --segment-cycles 2^20 --backend cuda --json"
for cfg in "0 1" "0 1" "0,1 1" "0,1 1" "0,1 3" "0 3"; do set -- $cfg
  .gpu-bin/kiln prove $C --devices $1 --jobs $2 --out /tmp/s.proof | python3 -c 'import json,sys; v=json.load(sys.stdin); print("devices '$1' jobs '$2'", "prove %.0f start %.0f" % (v["prove_ms"], v.get("device_start_ms", -1)), {k: round(x) for k,x in v["phases_ms"].items()}, "traces %.0f" % v["trace_ms_summed_over_threads"], {k: round(x) for k,x in v["prove_rounds_ms_summed_over_segments"].items()})'
done
for d in 0 0,1; do CUDA_MODULE_LOADING=EAGER .gpu-bin/kiln prove $C --devices $d --jobs 1 --out /tmp/s.proof | python3 -c 'import json,sys; v=json.load(sys.stdin); print("EAGER devices '$d'", "prove %.0f start %.0f" % (v["prove_ms"], v["device_start_ms"]), {k: round(x) for k,x in v["phases_ms"].items()})'; done
nproc; nvidia-smi --query-gpu=index,utilization.gpu --format=csv
