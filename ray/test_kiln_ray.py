#!/usr/bin/env python3
"""End-to-end test of ray/kiln_ray.py against a built `kiln` (no pytest).

    KILN_BIN=target/release/kiln python3 ray/test_kiln_ray.py

For each case (a program, its inputs, a segment size giving several
segments): prove it the local way (`kiln prove --segment-cycles`), prove it
through the driver on a fresh local Ray cluster with one task's worker
SIGKILLed on its first attempt (KILN_RAY_KILL_ONCE), check that the kill
happened and Ray retried the task, that the two files are byte-identical, and
that `kiln verify` accepts the file for the program, inputs and outputs (the
outputs from `kiln run --json`) and rejects it for a wrong output. Exits
non-zero on the first failure.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DRIVER = os.path.join(HERE, "kiln_ray.py")

# (name, program, inputs, segment cycles, the task to kill once)
CASES = [
    # 4n + 8 = 4096 cycles: 4 segments of 2^10.
    ("chain", "vm/examples/chain.kasm", "1022,3", "2^10", "prove:1"),
    # n = 6: 3666 cycles, 4 segments of 2^10; the matrices are stored in the
    # first segment and loaded in the later ones (memory across segments).
    ("matmul", "vm/examples/matmul.kasm", "6", "2^10", "commit:2"),
]


def kiln_bin():
    path = os.environ.get("KILN_BIN") or os.path.join(ROOT, "target", "release", "kiln")
    path = os.path.abspath(path)
    assert os.access(path, os.X_OK), "no kiln binary at %s (set KILN_BIN)" % path
    return path


def run(cmd, env=None, expect_ok=True):
    t = time.time()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    dt = time.time() - t
    if expect_ok and p.returncode != 0:
        sys.stderr.write("FAILED (exit %d): %s\n--- stdout\n%s--- stderr\n%s\n"
                         % (p.returncode, " ".join(cmd), p.stdout, p.stderr[-4000:]))
        raise AssertionError("command failed: %s" % " ".join(cmd))
    return p, dt


def check_case(kiln, work, name, program, inputs, seg, kill):
    print("== %s: %s --input %s --segment-cycles %s, killing %s once" % (name, program, inputs, seg, kill))
    d = os.path.join(work, name)
    os.makedirs(d)

    p, _ = run([kiln, "run", program, "--input", inputs, "--json"])
    outputs = json.loads(p.stdout)["outputs"]
    out_arg = ",".join(str(v) for v in outputs)

    p, _ = run([kiln, "segment", "plan", program, "--input", inputs, "--segment-cycles", seg, "--json"])
    plan = json.loads(p.stdout)
    assert plan["segments"] >= 2, "%s: want several segments, plan says %s" % (name, plan)

    local = os.path.join(d, "local.proof")
    _, t_local = run([kiln, "prove", program, "--input", inputs, "--segment-cycles", seg,
                      "--backend", "cpu", "--out", local])
    print("   local prove: %.2fs, %d bytes" % (t_local, os.path.getsize(local)))

    kill_dir = os.path.join(d, "kill")
    os.makedirs(kill_dir)
    env = dict(os.environ, KILN_RAY_KILL_ONCE=kill, KILN_RAY_KILL_DIR=kill_dir)
    env.pop("RAY_ADDRESS", None)  # a fresh local cluster, whatever the caller's
    distributed = os.path.join(d, "ray.proof")
    summary_file = os.path.join(d, "summary.json")
    p, t_ray = run([sys.executable, DRIVER, program, "--input", inputs, "--segment-cycles", seg,
                    "--out", distributed, "--kiln", kiln, "--address", "local",
                    "--summary", summary_file], env=env)
    sys.stdout.write("".join("   | " + l + "\n" for l in p.stdout.strip().splitlines()))
    print("   ray driver: %.2fs (with cluster start-up)" % t_ray)

    phase, index = kill.split(":")
    marker = os.path.join(kill_dir, "killed-%s-%s" % (phase, index))
    assert os.path.isfile(marker), "%s: the kill hook did not run (no %s)" % (name, marker)
    summary = json.load(open(summary_file))
    assert summary["segments"] == plan["segments"], summary
    assert summary["attempts"].get(kill) == 2, \
        "%s: %s should have run twice (killed, then retried): %s" % (name, kill, summary["attempts"])
    assert summary["retries"] == 1, "%s: expected exactly one retry: %s" % (name, summary["attempts"])
    assert len(summary["attempts"]) == 2 * plan["segments"], summary["attempts"]

    a, b = open(local, "rb").read(), open(distributed, "rb").read()
    assert a == b, "%s: the Ray proof (%d bytes) differs from the local one (%d bytes)" % (
        name, len(b), len(a))
    leftovers = [f for f in os.listdir(d) if f.startswith(".kiln-ray-")]
    assert not leftovers, "%s: temporary files left beside --out: %s" % (name, leftovers)

    run([kiln, "verify", distributed, "--program", program, "--input", inputs, "--output", out_arg])
    wrong = ",".join(str(v) for v in outputs[:-1] + [(outputs[-1] + 1) % (1 << 64)])
    p, _ = run([kiln, "verify", distributed, "--program", program, "--input", inputs,
                "--output", wrong], expect_ok=False)
    assert p.returncode != 0, "%s: verify accepted a wrong output" % name
    print("   ok: killed and retried once, byte-identical to the local proof, verified "
          "(outputs %s%s), a wrong output rejected"
          % (outputs[:3], "..." if len(outputs) > 3 else ""))


def main():
    t0 = time.time()
    kiln = kiln_bin()
    import ray  # fail early, and say which Ray ran
    print("kiln %s, ray %s, python %s" % (kiln, ray.__version__, sys.version.split()[0]))
    with tempfile.TemporaryDirectory(prefix="kiln-ray-test-") as work:
        for case in CASES:
            check_case(kiln, work, *case)
    print("PASS: %d cases in %.1fs" % (len(CASES), time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
