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
