#!/usr/bin/env bash
# Runs a GPU call script (docs/gpu/session-*.sh) here, without a GPU, with
# every binary it would run replaced by a stub, and prints the commands
# it would run, one a line, with the variables that steer them: to check
# a script before spending device time on it, or that a rewrite of one
# still runs what it ran.
#
# bash docs/gpu/dry-run.sh docs/gpu/session-s40j.sh [ARGUMENT...]
set -euo pipefail
script=$1
shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
export DRY_LOG=$root/commands
: >"$DRY_LOG"

stub() {
    cat >"$1" <<'EOF'
#!/usr/bin/env bash
echo "${0#$DRY_ROOT/} $* [KILN_CONFORMANCE_MAX_LOG=${KILN_CONFORMANCE_MAX_LOG:-} KILN_CUDA_TIMELINE=${KILN_CUDA_TIMELINE:-} KILN_CACHE_DIR=${KILN_CACHE_DIR:-}]" >>"$DRY_LOG"
EOF
    chmod +x "$1"
}
export DRY_ROOT=$root
mkdir -p "$root/bin" "$root/docs/gpu"
stub "$root/bin/ncu"
printf '#!/usr/bin/env bash\necho "GPU 0: (dry run)"\n' >"$root/bin/nvidia-smi"
printf '#!/usr/bin/env bash\nshift\nexec "$@"\n' >"$root/bin/timeout"
chmod +x "$root/bin/nvidia-smi" "$root/bin/timeout"
cp "$repo"/docs/gpu/*.sh "$root/docs/gpu/"
cat >"$root/docs/gpu/wall.py" <<'EOF'
import os, sys
with open(os.environ["DRY_LOG"], "a") as f:
    f.write("docs/gpu/wall.py " + " ".join(sys.argv[1:]) + "\n")
EOF
for sh in "$repo"/benches/*/run.sh; do
    mkdir -p "$(dirname "$root/${sh#$repo/}")" && stub "$root/${sh#$repo/}"
done
# The carried folder: its binaries, in it and in every subfolder the
# script names ($B/NAME or .gpu-run/NAME that is not a binary).
bins="prove_air vs_cpu declines conformance_cuda main_round kiln ntt_io compose_kernels vs_plonky3-v3 vs_plonky3-v4 vs_plonky3-new kiln-reserve"
dirs=". $({ grep -oE '(\$B|\.gpu-run)/[A-Za-z0-9_]+' "$script" || true; } | sed -E 's#^[^/]+/##' | sort -u | tr '\n' ' ')"
for d in $dirs; do
    case " $bins commit " in *" $d "*) continue ;; esac
    mkdir -p "$root/.gpu-run/$d"
    echo "(dry run)" >"$root/.gpu-run/$d/commit"
    for b in $bins; do stub "$root/.gpu-run/$d/$b"; done
done
cp "$script" "$root/docs/gpu/"
(cd "$root" && PATH="$root/bin:$PATH" OUT="$root/out" bash "docs/gpu/$(basename "$script")" "$@" >/dev/null 2>&1) || true
sed -E 's#/tmp/tmp\.[A-Za-z0-9]+#/tmp/TMP#g' "$DRY_LOG"
