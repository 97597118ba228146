#!/usr/bin/env python3
"""wall.py CMD...: runs CMD and prints, on one line, its wall time in
seconds, its peak resident set in kB (this process's only child), its
exit code, its CPU time as user+system seconds, and its last output line
starting with `stages` or `error` (kiln's own accounting), for shell
loops that take medians."""
import resource
import subprocess
import sys
import time

t0 = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
wall = time.monotonic() - t0
use = resource.getrusage(resource.RUSAGE_CHILDREN)
rss = use.ru_maxrss
lines = [l for l in p.stdout.splitlines() if l.startswith(("stages", "error"))]
cpu = f"cpu={use.ru_utime:.2f}+{use.ru_stime:.2f}"
print(f"{wall:.3f} {rss} rc={p.returncode} {cpu} {lines[-1] if lines else ''}")
