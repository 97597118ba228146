#!/usr/bin/env python3
"""wall.py CMD...: runs CMD and prints, on one line, its wall time in
seconds, its peak resident set in kB (this process's only child), its
exit code, and its last output line starting with `stages` or `error`
(kiln's own accounting), for shell loops that take medians."""
import resource
import subprocess
import sys
import time

t0 = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
wall = time.monotonic() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
lines = [l for l in p.stdout.splitlines() if l.startswith(("stages", "error"))]
print(f"{wall:.3f} {rss} rc={p.returncode} {lines[-1] if lines else ''}")
