#!/usr/bin/env python3
"""sass_mix.py [SUBSTRING...] < cuobjdump -sass output: each kernel's SASS
instruction count and how many of them are the integer and multiply-add
pipes' opcodes, global loads and local spills, for the peer and prototype
scripts under benches/.
With SUBSTRINGs, only kernels whose mangled name contains one of them."""
import collections
import re
import sys

OPCODES = ("LOP3", "SHF", "IMAD", "IADD3", "MOV", "PRMT", "LDG", "STL", "LDL")
wanted = sys.argv[1:]
name, counts = None, collections.Counter()


def flush():
    if name and (not wanted or any(w in name for w in wanted)):
        mix = " ".join(f"{k}={counts[k]}" for k in OPCODES)
        print(f"{name[:60]} SASS {sum(counts.values())} {mix}")


for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        flush()
        name, counts = m.group(1), collections.Counter()
        continue
    m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", line)
    if m:
        counts[m.group(1)] += 1
flush()
