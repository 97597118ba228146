#!/usr/bin/env bash
# One call for the next device session: whether the CPU LDE's remaining
# gap to Plonky3 at blowup 2 is its output's first touch, then section
# 42's first-prove questions (session-s42b.sh). Binaries from docs/gpu/build-s43.sh
# (.gpu-run: kiln, kiln-reserve, vs_plonky3-v4). Logs in $OUT.
OUT=${OUT:-/tmp/s43}
. docs/gpu/calls.sh
mkdir -p "$OUT/first-prove" "$OUT/first-touch"

# The blowup-2 LDE writes a fresh 2n-row output (1 GiB for 2^20 x 64),
# every page of it faulted in and zeroed by the kernel inside the timed
# call; Plonky3's takes its input by value and grows it, so only the new
# half is faulted. With glibc's mmap off and no trimming, freed memory
# is reused and neither side faults after the first repetition: if the
# ratio falls to 1.0 or below there, the gap is the first touch, not the
# transforms. The host's THP mode decides how much a fault costs (Kiln
# asks for huge pages with madvise; Plonky3 does not: the third mode is
# fresh memory with Kiln's request off).
L="$OUT/first-touch/lde.log"
heading "$L" .gpu-run
{
    echo "== $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo)"
    echo "== THP enabled: $(cat /sys/kernel/mm/transparent_hugepage/enabled); defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
} | tee -a "$L"
reuse="MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1000000000000"
for round in 1 2 3; do
    for mode in fresh reuse no-thp; do
        echo "== round $round: $mode" | tee -a "$L"
        case $mode in
        fresh) vars="KILN_S43=fresh" ;;
        reuse) vars=$reuse ;;
        no-thp) vars="KILN_CPU_NO_HUGEPAGES=1" ;;
        esac
        env $vars timeout 200 .gpu-run/vs_plonky3-v4 --lde 20 --blowups 2,4,8 --only lde --reps 3 2>&1 | tee -a "$L"
    done
done

# Second, so a call cut short by its time limit still brings back the
# first-touch log whole.
OUT="$OUT/first-prove" bash docs/gpu/session-s42b.sh
