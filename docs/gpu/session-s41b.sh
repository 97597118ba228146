#!/usr/bin/env bash
# Issue 11's CLI walls before and after ddab978 (the fixed columns'
# out-of-domain values through base-field inverses, in the prover's check
# and the verifier): e892d91's kiln (.gpu-run/old) and this session's
# (.gpu-run; its `commit` names it: ddab978, then c31c69d), each `cargo
# build --release -p vm --features cuda`, alternated twice; the proofs
# compared across builds. Logs in $OUT.
OUT=${OUT:-/tmp/s41b}
source "$(dirname "$0")/calls.sh"
B=.gpu-run
L="$OUT/cli.log"
for round in 1 2; do
    for build in $B/old $B; do
        heading "$L" $build
        cli_walls "$L" $build
        cp /tmp/local.proof "/tmp/local-$(basename $build)-$round.proof"
        cp /tmp/d.proof "/tmp/d-$(basename $build)-$round.proof"
    done
done
for f in local d; do
    for p in /tmp/$f-*.proof; do cmp "/tmp/$f-old-1.proof" "$p" || echo "$p differs" | tee -a "$L"; done
done
echo "proofs compared across builds" | tee -a "$L"
echo "== kiln verify of the default program's proof and the 2^20-cycle one, five each, old then new (checked in)" | tee -a "$L"
for build in $B/old $B; do
    for p in "/tmp/d-old-1.proof" "/tmp/local-old-1.proof"; do
        for i in 1 2 3 4 5; do "$build/kiln" verify "$p" | grep -E "^security" | tee -a "$L"; done
    done
done
