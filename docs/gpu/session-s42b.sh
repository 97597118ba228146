#!/usr/bin/env bash
# The device timeline of a process's first prove against a server's,
# and the first prove with the device's pool grown at start-up.
# .gpu-run/kiln (c31c69d, --features cuda); .gpu-run/kiln-reserve is
# 36867c2 with docs/gpu/logs/s42/first-prove/reserve.patch applied (its
# start-up reserves KILN_S42_RESERVE bytes of the device's pool beside
# the rehearsal; not committed), built `cargo build --release -p vm
# --features cuda`. Logs in $OUT.
OUT=${OUT:-/tmp/s42b}
mkdir -p "$OUT"

# Why a process's first prove of 2^20 cycles takes about twice a served
# one (section 41: 55-61 ms against 27-28 ms, most of it the main round):
# the whole --timings report, device timeline included, of three local
# proves (the first fills the kernel cache) and of a fresh server's first three.
T="$OUT/first-prove.log"
echo "== $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo); $(nvidia-smi -L | head -1)" | tee -a "$T"
chain="vm/examples/chain.kasm --input 262142,3"
for i in 1 2 3; do
    echo "== local --backend cuda --timings, run $i" | tee -a "$T"
    timeout 60 .gpu-run/kiln prove $chain --backend cuda --timings --out /tmp/local.proof 2>&1 | tee -a "$T"
done
sock=/tmp/kiln-s42.sock
.gpu-run/kiln serve --socket $sock --backend cuda 2>>"$T" &
server=$!
for i in $(seq 600); do [ -S $sock ] && break; sleep 0.1; done
for i in 1 2 3; do
    echo "== served --timings, prove $i of a fresh server" | tee -a "$T"
    timeout 60 .gpu-run/kiln prove $chain --server $sock --timings --out /tmp/served.proof 2>&1 | tee -a "$T"
done
kill $server
wait $server 2>/dev/null
cmp /tmp/local.proof /tmp/served.proof && echo "proofs identical" | tee -a "$T"

# The first prove with the device's pool grown during start-up: the
# reserving build with no reservation and with 4 GiB (the 2^20-cycle
# proof's device peak is 3.5 GiB), alternated; each process timed whole
# (wall.py), then one --timings report of each.
R="$OUT/reserve.log"
for round in 1 2 3; do
    for r in 0 4294967296; do
        echo "== round $round: KILN_S42_RESERVE=$r" | tee -a "$R"
        KILN_S42_RESERVE=$r python3 docs/gpu/wall.py .gpu-run/kiln-reserve prove $chain --backend cuda --out /tmp/r.proof | tee -a "$R"
    done
done
for r in 0 4294967296; do
    echo "== KILN_S42_RESERVE=$r --timings" | tee -a "$R"
    KILN_S42_RESERVE=$r timeout 60 .gpu-run/kiln-reserve prove $chain --backend cuda --timings --out /tmp/r.proof 2>&1 | tee -a "$R"
done
cmp /tmp/r.proof /tmp/local.proof && echo "proofs identical" | tee -a "$R"
