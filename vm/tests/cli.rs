//! The `kiln` binary: exit codes, one-line errors, no partial files.

use std::path::Path;
use std::process::{Command, Output};

fn kiln(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln")).args(args).current_dir(dir).output().unwrap()
}

fn example(name: &str) -> String {
    format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Fails with exit code != 0, one line on stderr, and leaves `dir` as it was.
fn fails_cleanly(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.kasm"), "li r1, 5\n  add r1, r9\nhalt\n").unwrap();
    let out = kiln(dir.path(), args);
    // Mesa's lavapipe (a wgpu build's `auto` probes it) prints this about
    // the container's environment when its Vulkan instance starts; it is
    // not kiln's output.
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.starts_with("error: XDG_RUNTIME_DIR is invalid"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("bad.kasm")], "{args:?} left files");
    stderr
}

#[test]
fn bad_invocations_fail_with_one_line() {
    let e = fails_cleanly(&["prove", "bad.kasm"]);
    assert!(e.contains("line 2, column 11"), "{e}");
    fails_cleanly(&["prove", "missing.kasm"]);
    fails_cleanly(&["run", "missing.kasm"]);
    fails_cleanly(&["prove", "--backend", "foo"]);
    #[cfg(not(feature = "wgpu"))]
    fails_cleanly(&["prove", "--backend", "wgpu"]);
    fails_cleanly(&["prove", "--blowup", "3"]);
    fails_cleanly(&["prove", "--queries", "0"]);
    fails_cleanly(&["prove", "--hash", "md5"]);
    fails_cleanly(&["prove", "--input", "x1"]);
    fails_cleanly(&["prove", "--max-cycles", "10", "--trace-out", "t.json"]);
    fails_cleanly(&["prove", "--out", "no/such/dir/p.proof"]);
    fails_cleanly(&["verify", "bad.kasm"]);
    fails_cleanly(&["frobnicate"]);
}

#[test]
fn run_prove_verify() {
    let dir = tempfile::tempdir().unwrap();
    let out = kiln(dir.path(), &["run", &example("factorial.kasm"), "--input", "6", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outputs"][0], 720);

    let fast = ["--blowup", "2", "--queries", "8", "--grinding", "0"];
    for hash in ["blake3", "keccak"] {
        let mut args = vec!["prove", "--input", "20", "--hash", hash, "--out", "p.proof", "--json"];
        args.extend(fast);
        args.extend(["--trace-out", "t.json"]);
        let out = kiln(dir.path(), &args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["verified"], true);
        assert_eq!(v["outputs"][0], 6765);
        let t: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("t.json")).unwrap()).unwrap();
        assert!(!t["traceEvents"].as_array().unwrap().is_empty());

        let out = kiln(dir.path(), &["verify", "p.proof", "--min-security", "0"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // Weak options are refused at the default security bar.
        let out = kiln(dir.path(), &["verify", "p.proof"]);
        assert!(!out.status.success());
    }
    // A corrupted proof file is rejected in one line.
    let path = dir.path().join("p.proof");
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let out = kiln(dir.path(), &["verify", "p.proof", "--min-security", "0"]);
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

/// Quick options for tests: small proofs, no grinding.
const FAST: [&str; 6] = ["--blowup", "2", "--queries", "8", "--grinding", "0"];

fn prove_fib(dir: &Path, extra: &[&str]) -> Output {
    let fib = example("fibonacci.kasm");
    let mut args = vec!["prove", fib.as_str(), "--input", "20"];
    args.extend(FAST);
    args.extend(extra);
    kiln(dir, &args)
}

/// [`prove_fib`] on the CPU backend with `--json`: its report, the run
/// asserted to succeed.
fn prove_fib_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["--backend", "cpu", "--json"];
    args.extend(extra);
    let o = prove_fib(dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Fails with one `error:` line naming `path`, no temporary file's name.
fn refused(o: &Output, path: &str) -> String {
    let e = stderr(o);
    assert!(!o.status.success(), "succeeded: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.starts_with("error: ") && e.contains(path), "{e}");
    assert!(!e.contains(".kiln-") && !e.contains(".tmp"), "names a temporary file: {e}");
    e
}

#[test]
fn prove_never_replaces_the_source_another_output_or_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = std::fs::read(example("fibonacci.kasm")).unwrap();
    std::fs::write(d.join("fib.kasm"), &src).unwrap();
    let fast: Vec<&str> = FAST.to_vec();
    let mut args = vec!["prove", "fib.kasm", "--input", "5", "--out", "fib.kasm"];
    args.extend(&fast);
    refused(&kiln(d, &args), "fib.kasm");
    // Through another spelling of the same path.
    let mut args = vec!["prove", "fib.kasm", "--input", "5", "--out", "./fib.kasm"];
    args.extend(&fast);
    refused(&kiln(d, &args), "fib.kasm");
    assert_eq!(std::fs::read(d.join("fib.kasm")).unwrap(), src, "the source was replaced");

    std::fs::write(d.join("x"), "trace").unwrap();
    let e = refused(&prove_fib(d, &["--out", "x", "--trace-out", "x"]), "x");
    assert!(e.contains("same file"), "{e}");
    assert_eq!(std::fs::read(d.join("x")).unwrap(), b"trace");

    let e = refused(&prove_fib(d, &["--out", "/dev/null"]), "/dev/null");
    assert!(e.contains("not a regular file"), "{e}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    let e = refused(&prove_fib(d, &["--out", "."]), "`.`");
    assert!(e.contains("directory"), "{e}");
    // A path through a regular file: the error names it, not a temporary file.
    refused(&prove_fib(d, &["--out", "x/p.proof"]), "x/p.proof");
    let left: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn prove_writes_through_symlinks_and_keeps_file_modes() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mode = |p: &str| std::fs::metadata(d.join(p)).unwrap().permissions().mode() & 0o7777;
    // What any tool gives a new file under this process's umask.
    std::fs::File::create(d.join("plain")).unwrap();
    let o = prove_fib(d, &["--out", "new.proof"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mode("new.proof"), mode("plain"));

    for keep in [0o644, 0o640] {
        std::fs::write(d.join("old.proof"), "old").unwrap();
        std::fs::set_permissions(d.join("old.proof"), std::fs::Permissions::from_mode(keep)).unwrap();
        let o = prove_fib(d, &["--out", "old.proof"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(mode("old.proof"), keep);
    }

    std::fs::create_dir(d.join("store")).unwrap();
    std::fs::write(d.join("store/p.proof"), "stale").unwrap();
    symlink("store/p.proof", d.join("link.proof")).unwrap();
    let o = prove_fib(d, &["--out", "link.proof"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("link.proof")).unwrap().file_type().is_symlink());
    assert!(std::fs::read(d.join("store/p.proof")).unwrap().starts_with(b"KILNVMP1"), "target left stale");
    let o = kiln(d, &["verify", "link.proof", "--min-security", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));

    symlink("store/missing", d.join("dangling")).unwrap();
    let e = refused(&prove_fib(d, &["--out", "dangling"]), "dangling");
    assert!(e.contains("symbolic link"), "{e}");
    assert!(!d.join("store/missing").exists());
}

#[test]
fn verify_checks_the_expected_statement() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = prove_fib(d, &["--out", "p.proof"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (fib, fact) = (example("fibonacci.kasm"), example("factorial.kasm"));
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify", "p.proof", "--min-security", "0"];
        args.extend(extra);
        kiln(d, &args)
    };
    let o = verify(&["--program", &fib, "--input", "20", "--output", "6765"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let run = kiln(d, &["run", &fib, "--input", "20", "--json"]);
    let hash = serde_json::from_slice::<serde_json::Value>(&run.stdout).unwrap()["hash"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 64);
    assert!(text.contains(&format!("program {hash}")), "full hash not shown: {text}");
    assert!(text.contains("statement program, inputs, outputs as expected"), "{text}");

    for (args, what) in [
        (vec!["--program", fact.as_str(), "--input", "20"], "is for program"),
        (vec!["--program", fib.as_str()], "inputs"),
        (vec!["--program", fib.as_str(), "--input", "21"], "inputs"),
        (vec!["--input", "21"], "inputs"),
        (vec!["--output", "6766"], "outputs"),
        (vec!["--program", fib.as_str(), "--input", "20", "--output", "6765,0"], "outputs"),
    ] {
        let e = refused(&verify(&args), "statement rejected");
        assert!(e.contains(what), "{args:?}: {e}");
    }
    let o = verify(&["--program", &fib, "--input", "20", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hash"], hash.as_str());
    assert_eq!((v["inputs"][0].as_u64(), v["outputs"][0].as_u64()), (Some(20), Some(6765)));
    assert_eq!((v["checked"]["program"].as_bool(), v["checked"]["outputs"].as_bool()), (Some(true), Some(false)));
    assert_eq!(v["options"]["blowup"], 2);
    assert_eq!(v["log_heights"].as_array().unwrap().len(), 4);

    let help = String::from_utf8_lossy(&kiln(d, &["verify", "--help"]).stdout).to_string();
    for want in
        ["proof file written by `kiln prove`", "--program <FILE.kasm>", "--json", "JSON object", "--min-security"]
    {
        assert!(help.contains(want), "help lacks {want}: {help}");
    }
}

#[test]
fn prove_says_why_auto_is_the_cpu_and_when_default_verify_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let o = prove_fib(dir.path(), &["--out", "p.proof"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let options = text.lines().find(|l| l.starts_with("options")).unwrap();
    assert!(options.contains("cpu (auto: "), "{options}");
    let warning = text.lines().find(|l| l.starts_with("warning")).unwrap_or_else(|| panic!("{text}"));
    assert!(warning.contains("--min-security"), "{warning}");
    // And the default verify does refuse it.
    assert!(!kiln(dir.path(), &["verify", "p.proof"]).status.success());
    // An explicit --backend cpu has nothing to explain; default options no warning.
    let o = kiln(dir.path(), &["prove", "--input", "5", "--backend", "cpu", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["backend"].as_str(), v["default_verify_accepts"].as_bool()), (Some("cpu"), Some(true)));
}

/// Host memory exhaustion is a typed error, not a panic: under a 768 MiB
/// address-space limit the traces of a 2^18-cycle run fit, its 1.7 GB
/// main-trace LDE does not.
#[test]
fn out_of_host_memory_is_one_line_and_exit_1() {
    let (out, dir) = prove_under_memory_limit(&["--input", "65534,3", "--blowup", "16"]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.starts_with("error: proving failed: host memory exhausted in coset-lde for table cpu: "), "{e}");
    // The bytes asked for: the whole LDE (its width is the VM AIR's business).
    let bytes: u64 = e.split(": ").nth(3).and_then(|t| t.split(' ').next()).and_then(|b| b.parse().ok()).unwrap();
    assert!(bytes > 768 << 20 && e.contains(" bytes could not be allocated"), "{e}");
    assert!(!e.contains("panicked") && !e.contains("internal error"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "left files behind");
}

#[test]
fn out_of_host_memory_building_the_trace_is_one_line_and_exit_1() {
    // 2^21 cycles: the execution record fits the limit, the CPU table
    // (its columns of 2^21 rows) does not.
    let (out, dir) = prove_under_memory_limit(&["--input", "524286,3"]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    let bytes = vm::air::cpu::WIDTH << 21 << 3;
    assert_eq!(
        e.trim_end(),
        format!("error: trace generation failed: out of host memory building the cpu table ({bytes} bytes)")
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "left files behind");
}

/// `kiln prove` of chain.kasm with `args`, under a 768 MiB address-space
/// limit.
fn prove_under_memory_limit(args: &[&str]) -> (Output, tempfile::TempDir) {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let chain = example("chain.kasm");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args(["prove", &chain, "--queries", "8", "--out", "p.proof"]).args(args);
    // Few threads and malloc arenas, so the address space the run needs
    // before the LDE does not grow with the machine's core count.
    cmd.current_dir(dir.path()).env("RAYON_NUM_THREADS", "2").env("MALLOC_ARENA_MAX", "2");
    let limit = libc::rlimit { rlim_cur: 768 << 20, rlim_max: 768 << 20 };
    // SAFETY: setrlimit is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || match libc::setrlimit(libc::RLIMIT_AS, &limit) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
    (cmd.output().unwrap(), dir)
}

#[test]
fn prove_accounts_for_its_whole_wall_time() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["prove", "--input", "30", "--blowup", "2", "--queries", "8", "--grinding", "0", "--json"];
    let out = kiln(dir.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let spans = v["timings_ms"].as_object().unwrap();
    for stage in ["start-up", "execute", "trace", "prove", "verify", "write"] {
        assert!(spans[stage].as_f64().unwrap() >= 0.0, "{stage} missing: {spans:?}");
    }
    // The spans and what they leave out add up to the total, measured
    // from the top of main; the rounds fit inside the prove span.
    let sum: f64 = spans.values().map(|d| d.as_f64().unwrap()).sum();
    let (unaccounted, total) = (v["unaccounted_ms"].as_f64().unwrap(), v["total_ms"].as_f64().unwrap());
    assert!((sum + unaccounted - total).abs() < 0.05 * total + 1.0, "{sum} + {unaccounted} vs {total}");
    let rounds: f64 = v["prover_rounds_ms"].as_object().unwrap().values().map(|d| d.as_f64().unwrap()).sum();
    let names: Vec<&str> = v["prover_rounds_ms"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(names.len(), 7, "{names:?}");
    assert!(rounds <= spans["prove"].as_f64().unwrap() + 0.5, "{rounds} > prove");
    assert_eq!(v["device_start_ms"], serde_json::Value::Null, "no device on the cpu path");
}

#[test]
fn a_batch_proves_several_programs_repeatedly_with_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("proofs")).unwrap();
    let (fib, fact) = (example("fibonacci.kasm"), example("factorial.kasm"));
    let args = [
        "prove",
        &fib,
        &fact,
        "--input",
        "12",
        "--repeat",
        "3",
        "--jobs",
        "2",
        "--backend",
        "cpu",
        "--blowup",
        "2",
        "--queries",
        "8",
        "--grinding",
        "0",
        "--out-dir",
        "proofs",
        "--json",
    ];
    let out = kiln(dir.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["count"], 6);
    assert_eq!(v["per_device"], serde_json::json!([6]));
    assert!(v["proofs_per_second"].as_f64().unwrap() > 0.0);
    let proofs = v["proofs"].as_array().unwrap();
    for p in proofs {
        let same: Vec<_> = proofs.iter().filter(|q| q["program"] == p["program"]).map(|q| &q["hash"]).collect();
        assert_eq!(same.len(), 3);
        assert!(same.iter().all(|h| *h == &p["hash"]), "repeats differ: {v}");
    }
    assert_ne!(proofs[0]["hash"], proofs[1]["hash"], "two programs, one proof");
    let written = dir.path().join("proofs/001-factorial.proof");
    let path = written.to_str().unwrap();
    let out = kiln(dir.path(), &["verify", path, "--program", &fact, "--input", "12", "--min-security", "0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_dir(dir.path().join("proofs")).unwrap().count(), 6);
}

#[test]
fn bad_batch_and_device_flags_fail_with_one_line() {
    fails_cleanly(&["prove", "--repeat", "0"]);
    fails_cleanly(&["prove", "--jobs", "0", "--repeat", "2"]);
    fails_cleanly(&["prove", "--vram-budget", "12Q"]);
    let e = fails_cleanly(&["prove", "--devices", "1", "--backend", "cpu"]);
    assert!(e.contains("--devices"), "{e}");
    fails_cleanly(&["prove", "--repeat", "2", "--out-dir", "missing"]);
    fails_cleanly(&["prove", "bad.kasm", "--repeat", "2"]);
}

/// `--devices` with `auto`: a statement long enough for the GPU proves on
/// the named device, or, where it cannot open, fails naming why; it never
/// proves on the CPU instead (without `--devices`, auto falls back).
#[cfg(feature = "cuda")]
#[test]
fn auto_with_named_devices_uses_them_or_fails() {
    let dir = tempfile::tempdir().unwrap();
    let chain = example("chain.kasm");
    let args = ["prove", &chain, "--input", "131070,3", "--devices", "0", "--out", "p.proof"];
    let o = kiln(dir.path(), &args);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    if o.status.success() {
        let options = text.lines().find(|l| l.starts_with("options")).unwrap();
        assert!(options.starts_with("options   cuda ("), "{options}");
    } else {
        let e = stderr(&o);
        assert!(e.starts_with("error: the cuda backend cannot run here: "), "{e}");
        assert!(!dir.path().join("p.proof").exists());
        // Unnamed, the same run falls back to the CPU and says why.
        let o = kiln(dir.path(), &["prove", &chain, "--input", "131070,3", "--out", "p.proof"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("cpu (auto: no usable GPU: "));
    }
}

#[test]
fn spilled_and_recomputed_proves_write_the_kept_proof_and_say_what_they_did() {
    let dir = tempfile::tempdir().unwrap();
    let prove = |residency: &str, out: &str| prove_fib_json(dir.path(), &["--residency", residency, "--out", out]);
    let kept = prove("keep", "kept.proof");
    let spilled = prove("spill", "spilled.proof");
    assert_eq!((kept["residency"].as_str(), kept["spilled_bytes"].as_u64()), (Some("keep"), Some(0)));
    assert_eq!(spilled["residency"], "spill");
    assert!(spilled["spilled_bytes"].as_u64().unwrap() > 0, "{spilled}");
    let recomputed = prove("recompute", "recomputed.proof");
    assert_eq!(recomputed["residency"], "recompute");
    // Every table of the VM: cpu, memory, program, range.
    assert_eq!(recomputed["recomputed_tables"].as_array().map(Vec::len), Some(4), "{recomputed}");
    // A named residency decides nothing by the host's memory, so reports no budget.
    assert!(kept["memory_budget_bytes"].is_null() && recomputed["memory_budget_bytes"].is_null(), "{kept}");
    // Within the host's available memory, auto keeps.
    let auto = prove("auto", "auto.proof");
    assert_eq!(auto["residency"], "keep");
    assert!(auto["memory_budget_bytes"].as_u64().is_some_and(|b| b > 0), "{auto}");
    let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
    assert!(read("kept.proof") == read("spilled.proof"), "spilling changed the proof file");
    assert!(read("kept.proof") == read("recomputed.proof"), "recomputing changed the proof file");
}

#[test]
fn a_cpu_memory_budget_too_small_to_keep_the_ldes_recomputes_them_into_the_same_proof() {
    let dir = tempfile::tempdir().unwrap();
    let prove = |budget: &str, out: &str| prove_fib_json(dir.path(), &["--memory-budget", budget, "--out", out]);
    let tight = prove("1M", "tight.proof");
    assert_eq!(
        (tight["residency"].as_str(), tight["memory_budget_bytes"].as_u64()),
        (Some("recompute"), Some(1 << 20))
    );
    assert_eq!(prove("64G", "ample.proof")["residency"], "keep");
    let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
    assert!(read("tight.proof") == read("ample.proof"), "the budget changed the proof file");
    // A GPU's memory is --vram-budget's; a batch does not choose a residency.
    // ... and a named residency has nothing for a budget to decide.
    for extra in [&["--backend", "cuda"][..], &["--repeat", "2"], &["--residency", "keep"]] {
        let mut args = vec!["--memory-budget", "1G", "--out", "refused.proof"];
        args.extend(extra);
        let o = prove_fib(dir.path(), &args);
        assert!(!o.status.success() && stderr(&o).contains("--memory-budget"), "{}", stderr(&o));
        assert!(!dir.path().join("refused.proof").exists());
    }
}
