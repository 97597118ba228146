#!/usr/bin/env python3
"""Distribute the segments of one `kiln` proof over a Ray cluster.

    python3 ray/kiln_ray.py PROGRAM --input 262142,3 --segment-cycles 2^16 --out run.proof \
        [--kiln PATH] [--address local|auto|ray://HOST:10001] [--gpus-per-task 0|1] \
        [--cpus-per-task 1] [--backend cpu|cuda|auto] [--hash blake3|keccak] [--max-retries 3]
        [--blowup B] [--queries Q] [--grinding G] [--max-cycles C] [--summary FILE]

A segmented proof is made in two phases so that every segment's LogUp
challenges are the same:

1. `kiln segment plan` runs here and gives the number of segments;
2. phase 1: one Ray task per segment runs `kiln segment commit` and returns
   the segment's commitment file as bytes;
3. phase 2: one Ray task per segment receives every commitment (as bytes),
   writes them as `commit-<k>.bin`, runs `kiln segment prove` and returns the
   segment's proof as bytes;
4. `kiln segment join` runs here on the segment proofs and writes `--out`
   (through a temporary file renamed over it: never a partial file).

Every byte a task needs (the program text, the commitments) and every byte it
makes (a commitment, a proof) travels through Ray's object store; tasks use
only a private temporary directory, so they may run on any host. Each task
is a pure function of its arguments (`kiln` re-executes the program
deterministically), so a retry, a placement or a completion order never
changes a byte: the file equals `kiln prove ... --segment-cycles N`.

Assumption: the `kiln` binary is at the same absolute path on every node of
the cluster (`--kiln`, else $KILN_BIN, else `kiln` on this host's PATH,
resolved here to an absolute path and handed to the tasks by path).

GPUs: with `--gpus-per-task 1` each task asks Ray for one GPU; Ray sets
CUDA_VISIBLE_DEVICES for the task's worker process, so the `kiln` child sees
its GPU as ordinal 0 and runs `--backend cuda` (the default then). The
default is `--gpus-per-task 0` and `--backend cpu`. A task's `kiln` gets
RAYON_NUM_THREADS = its CPU share (`--cpus-per-task`) unless the variable is
already set, so concurrent tasks on one host do not oversubscribe it.

Retries: a task whose worker process dies (killed, out of memory, node lost)
is retried by Ray up to `--max-retries` times (Ray's `max_retries` counts
system failures; a `kiln` that exits with an error is not retried, since it
would fail the same way again). The summary counts the attempts.

Test hook: KILN_RAY_KILL_ONCE=<commit|prove>:<index> together with
KILN_RAY_KILL_DIR=<existing directory> (read by the driver, passed to the
tasks) makes that task, on its first attempt only (it creates the marker
file KILN_RAY_KILL_DIR/killed-<phase>-<index>), start `kiln` and then SIGKILL
its own worker process, so Ray sees a worker death and retries the task.
"""

import argparse
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import ray

PHASES = ("commit", "prove")


# --------------------------------------------------------------------------
# Running kiln
# --------------------------------------------------------------------------

def die_with_parent():
    """A preexec_fn under which the kiln child gets SIGKILL when the task's
    process dies (Linux's PR_SET_PDEATHSIG), so a killed worker leaves no
    orphan prover behind; None where that is not available. libc is loaded
    here, before the fork: the child only makes the one call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)


def option_args(a):
    """The statement and proof options every segment subcommand must get
    identically (kiln's defaults where not given)."""
    out = []
    for flag, value in (("--hash", a.hash), ("--blowup", a.blowup), ("--queries", a.queries),
                        ("--grinding", a.grinding), ("--max-cycles", a.max_cycles)):
        if value is not None:
            out += [flag, str(value)]
    return out


def input_args(inputs):
    """kiln's --input for a comma-separated list; nothing for no inputs."""
    return ["--input", inputs] if inputs else []


def _last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(no output)"


def run_kiln(cmd, env=None, cwd=None):
    """Runs kiln to completion; returns stdout; raises with kiln's error line."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if p.returncode != 0:
        raise RuntimeError(
            "`%s` failed (exit %d): %s"
            % (" ".join(cmd), p.returncode, _last_line(p.stderr or p.stdout)))
    return p.stdout


# --------------------------------------------------------------------------
# The tasks
# --------------------------------------------------------------------------

@ray.remote(num_cpus=0)
class Attempts:
    """Counts the starts of every (phase, index): starts - 1 are retries."""

    def __init__(self):
        self.starts = {}

    def start(self, phase, index):
        key = "%s:%d" % (phase, index)
        self.starts[key] = self.starts.get(key, 0) + 1
        return self.starts[key]

    def all(self):
        return dict(self.starts)


def segment_task(job, phase, index, attempts, *commits):
    """One segment of one phase; runs on any node. `job` holds the program
    text, inputs and options; `commits` (phase 2) every segment's commitment
    bytes in order. Returns two objects (num_returns=2): the file's bytes
    and facts about the attempt."""
    attempt = ray.get(attempts.start.remote(phase, index))
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="kiln-ray-%s-%d-" % (phase, index)) as tmp:
        program = os.path.join(tmp, job["program_name"])
        with open(program, "w") as f:
            f.write(job["program_text"])
        out = os.path.join(tmp, "commit-%d.bin" % index if phase == "commit"
                           else "segment-%d.proof" % index)
        cmd = [job["kiln"], "segment", phase, program] + input_args(job["input"]) + [
               "--segment-cycles", job["segment_cycles"],
               "--index", str(index)]
        if phase == "prove":
            cdir = os.path.join(tmp, "commits")
            os.mkdir(cdir)
            for k, data in enumerate(commits):
                with open(os.path.join(cdir, "commit-%d.bin" % k), "wb") as f:
                    f.write(data)
            cmd += ["--commits", cdir]
        cmd += ["--out", out, "--backend", job["backend"]] + job["options"]

        preexec = die_with_parent()
        env = dict(os.environ)
        if "RAYON_NUM_THREADS" not in env:
            env["RAYON_NUM_THREADS"] = str(max(1, int(job["cpus_per_task"])))

        kill = job.get("kill_once")
        if kill and kill == (phase, index) and _first_attempt_marker(job, phase, index):
            # Test hook: start kiln, then die the way a lost worker dies.
            subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, preexec_fn=preexec)
            time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)

        p = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True,
                           preexec_fn=preexec)
        if p.returncode != 0:
            raise RuntimeError(
                "kiln segment %s, segment %d, on %s: exit %d: %s"
                % (phase, index, _host(), p.returncode, _last_line(p.stderr or p.stdout)))
        with open(out, "rb") as f:
            data = f.read()
    return data, {"phase": phase, "index": index, "attempt": attempt, "host": _host(),
                  "seconds": time.time() - t0,
                  "gpus": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _first_attempt_marker(job, phase, index):
    """True exactly once per (phase, index): the caller creates the marker."""
    marker = os.path.join(job["kill_dir"], "killed-%s-%d" % (phase, index))
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    os.write(fd, ("pid %d\n" % os.getpid()).encode())
    os.close(fd)
    return True


def _host():
    try:
        return os.uname().nodename
    except AttributeError:
        return "?"


# --------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------

def find_kiln(arg):
    path = arg or os.environ.get("KILN_BIN") or shutil.which("kiln")
    if not path:
        sys.exit("kiln_ray: no kiln binary: give --kiln PATH, set KILN_BIN, or put kiln on PATH")
    if os.sep not in path:
        path = shutil.which(path) or path
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        sys.exit("kiln_ray: `%s` is not an executable file" % path)
    return path


def kill_once_from_env():
    spec = os.environ.get("KILN_RAY_KILL_ONCE")
    if not spec:
        return None, None
    try:
        phase, index = spec.split(":")
        index = int(index)
        assert phase in PHASES
    except Exception:
        sys.exit("kiln_ray: KILN_RAY_KILL_ONCE must be <commit|prove>:<index>, not `%s`" % spec)
    kill_dir = os.environ.get("KILN_RAY_KILL_DIR")
    if not kill_dir or not os.path.isdir(kill_dir):
        sys.exit("kiln_ray: KILN_RAY_KILL_ONCE needs KILN_RAY_KILL_DIR, an existing directory")
    return (phase, index), os.path.abspath(kill_dir)


def write_atomically(out, produce):
    """Runs produce(tmp_path), which writes a file at tmp_path, then renames
    it over `out` (through a symbolic link, as kiln does): `out` is either
    untouched or complete."""
    target = os.path.realpath(out) if os.path.islink(out) else out
    outdir = os.path.dirname(os.path.abspath(target))
    tmpdir = tempfile.mkdtemp(prefix=".kiln-ray-", dir=outdir)
    try:
        tmp = os.path.join(tmpdir, os.path.basename(target))
        produce(tmp)
        if os.path.isfile(target):
            shutil.copymode(target, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="kiln_ray.py",
        description="Prove a kiln program in segments, one Ray task per segment and phase.")
    ap.add_argument("program", help="the .kasm program")
    ap.add_argument("--input", action="append", default=[],
                    help="public inputs, comma-separated u64 (repeatable)")
    ap.add_argument("--segment-cycles", required=True,
                    help="cycles per segment, a power of two (1048576 or 2^20)")
    ap.add_argument("--out", required=True, help="the multi-segment proof file to write")
    ap.add_argument("--kiln", help="the kiln binary (same path on every node); "
                    "default $KILN_BIN, else kiln on PATH")
    ap.add_argument("--address", default="local",
                    help="ray.init address: local (start a local cluster, default), "
                    "auto (the running cluster), or ray://HOST:PORT")
    ap.add_argument("--num-cpus", type=int,
                    help="CPUs of a local cluster started here (default: all)")
    ap.add_argument("--gpus-per-task", type=float, default=0,
                    help="GPUs each task asks Ray for (default 0)")
    ap.add_argument("--cpus-per-task", type=float, default=1,
                    help="CPUs each task asks Ray for (default 1)")
    ap.add_argument("--backend", choices=["cpu", "cuda", "auto", "wgpu"],
                    help="kiln --backend of the tasks (default cuda with GPUs per task, else cpu)")
    ap.add_argument("--hash", choices=["blake3", "keccak"],
                    help="kiln --hash, passed to every subcommand (default: kiln's, blake3)")
    ap.add_argument("--blowup", type=int, help="kiln --blowup, passed to every subcommand")
    ap.add_argument("--queries", type=int, help="kiln --queries, passed to every subcommand")
    ap.add_argument("--grinding", type=int, help="kiln --grinding, passed to every subcommand")
    ap.add_argument("--max-cycles", type=int, help="kiln --max-cycles, passed to every subcommand")
    ap.add_argument("--max-retries", type=int, default=3,
                    help="Ray retries of a task whose worker dies (default 3)")
    ap.add_argument("--summary", metavar="FILE",
                    help="also write the summary as JSON to FILE")
    a = ap.parse_args(argv)
    a.input = ",".join(v for v in a.input if v != "")
    if a.backend is None:
        a.backend = "cuda" if a.gpus_per_task > 0 else "cpu"
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    kiln = find_kiln(a.kiln)
    kill_once, kill_dir = kill_once_from_env()
    try:
        with open(a.program) as f:
            program_text = f.read()
    except OSError as e:
        sys.exit("kiln_ray: cannot read `%s`: %s" % (a.program, e.strerror))
    t_start = time.time()

    plan_cmd = [kiln, "segment", "plan", a.program] + input_args(a.input) + [
                "--segment-cycles", a.segment_cycles, "--json"] + option_args(a)
    try:
        plan = json.loads(run_kiln(plan_cmd))
        segments = int(plan["segments"])
    except (RuntimeError, ValueError, KeyError) as e:
        sys.exit("kiln_ray: plan: %s" % e)
    if segments < 1:
        sys.exit("kiln_ray: plan gave %d segments" % segments)

    init = {"address": a.address}
    if a.address == "local":
        init["include_dashboard"] = False
        if a.num_cpus is not None:
            init["num_cpus"] = a.num_cpus
    ray.init(**init)
    try:
        summary = distribute(a, kiln, program_text, plan, segments, kill_once, kill_dir)
    except ray.exceptions.RayError as e:
        sys.exit("kiln_ray: a segment task failed: %s" % _last_line(str(e)))
    except RuntimeError as e:
        sys.exit("kiln_ray: %s" % e)
    finally:
        ray.shutdown()
    summary["total_s"] = round(time.time() - t_start, 3)

    print("kiln_ray  %s, %d segments of %s cycles (%s cycles), backend %s, %s GPU(s) per task"
          % (a.program, segments, plan.get("segment_cycles", a.segment_cycles),
             plan.get("cycles", "?"), a.backend, a.gpus_per_task))
    print("phases    commit %.2fs, prove %.2fs, join %.2fs, total %.2fs"
          % (summary["commit_s"], summary["prove_s"], summary["join_s"], summary["total_s"]))
    retried = ", ".join("%s (%d attempts)" % (k, n) for k, n in sorted(summary["attempts"].items())
                        if n > 1) or "none"
    print("retries   %d: %s" % (summary["retries"], retried))
    print("hosts     %s" % ", ".join("%s x%d" % hc for hc in sorted(summary["hosts"].items())))
    print("proof     %s (%d bytes)" % (a.out, summary["bytes"]))
    if a.summary:
        with open(a.summary, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
    return 0


def distribute(a, kiln, program_text, plan, segments, kill_once, kill_dir):
    job = {
        "kiln": kiln,
        "program_name": os.path.basename(a.program),
        "program_text": program_text,
        "input": a.input,
        "segment_cycles": a.segment_cycles,
        "backend": a.backend,
        "options": option_args(a),
        "cpus_per_task": a.cpus_per_task,
        "kill_once": kill_once,
        "kill_dir": kill_dir,
    }
    job_ref = ray.put(job)
    if __name__ != "__main__":
        # Imported rather than run: ship this module's code with the tasks,
        # so workers on other hosts need not import it.
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    attempts = Attempts.remote()
    remote_task = ray.remote(segment_task)
    opts = dict(num_cpus=a.cpus_per_task, num_gpus=a.gpus_per_task,
                max_retries=a.max_retries, retry_exceptions=False, num_returns=2)

    def task(phase, k):
        return remote_task.options(name="kiln segment %s %d" % (phase, k), **opts)

    # Each task returns two objects: the file's bytes and facts about the
    # attempt. Phase 2 takes phase 1's byte objects straight from the object
    # store (every prove task gets every commitment); nothing goes through a
    # shared filesystem.
    t = time.time()
    commit_out = [task("commit", k).remote(job_ref, "commit", k, attempts) for k in range(segments)]
    commit_refs = [data for data, _ in commit_out]
    ray.get(commit_refs)  # phase 1 must be complete before any challenge exists
    commit_s = time.time() - t

    t = time.time()
    prove_out = [task("prove", k).remote(job_ref, "prove", k, attempts, *commit_refs)
                 for k in range(segments)]
    proofs = ray.get([data for data, _ in prove_out])
    prove_s = time.time() - t
    infos = ray.get([info for _, info in commit_out + prove_out])
    starts = ray.get(attempts.all.remote())

    t = time.time()
    with tempfile.TemporaryDirectory(prefix="kiln-ray-join-") as segdir:
        for k, data in enumerate(proofs):
            with open(os.path.join(segdir, "segment-%d.proof" % k), "wb") as f:
                f.write(data)

        def join(tmp_out):
            cmd = [kiln, "segment", "join", a.program] + input_args(a.input) + [
                   "--segment-cycles", a.segment_cycles, "--segments", segdir, "--out", tmp_out
                   ] + option_args(a)
            run_kiln(cmd)
        write_atomically(a.out, join)
    join_s = time.time() - t

    hosts = {}
    for info in infos:
        hosts[info["host"]] = hosts.get(info["host"], 0) + 1
    return {
        "program": a.program,
        "segments": segments,
        "plan": plan,
        "commit_s": round(commit_s, 3),
        "prove_s": round(prove_s, 3),
        "join_s": round(join_s, 3),
        "attempts": starts,
        "retries": sum(n - 1 for n in starts.values()),
        "hosts": hosts,
        "tasks": infos,
        "bytes": os.path.getsize(a.out),
        "out": a.out,
    }


if __name__ == "__main__":
    sys.exit(main())
