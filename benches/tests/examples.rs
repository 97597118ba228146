//! The GPU examples on a machine with or without a device: with one they
//! run (small sizes); without one they fail at once, before any CPU work,
//! with one `error:` line (not a Debug-printed `Err`).
//!
//! Cargo builds a package's examples when it runs all of its tests:
//! `cargo test -p benches --features cuda` (not `--test examples` alone).
#![cfg(feature = "cuda")]

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `cargo test` builds the package's examples beside the test binaries.
fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    deps.parent().unwrap().join("examples").join(name)
}

fn check(name: &str, small: &[&str]) {
    let path = example(name);
    assert!(path.exists(), "{} is not built: run all of the package's tests, not --test alone", path.display());
    let gpu = backend_cuda::CudaBackend::new(0).is_ok();
    let mut cmd = Command::new(path);
    // Full default sizes without a GPU: they must not start the CPU half.
    if gpu {
        cmd.args(small);
    }
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut child = cmd.current_dir(root).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if !gpu && t0.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("{name} still runs after 10 s without a GPU: it did not check the device first");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    if gpu {
        assert!(status.success(), "{name}: {stderr}");
        return;
    }
    assert!(!status.success(), "{name} succeeded without a GPU");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{name}: {stderr}");
    assert!(stderr.starts_with("error: no usable CUDA device"), "{name}: {stderr}");
}

#[test]
fn prove_vm_checks_the_device_first() {
    check("prove_vm", &["vm/examples/fibonacci.kasm", "10", "1"]);
}

#[test]
fn compose_kernels_prints_errors_as_one_line() {
    check("compose_kernels", &["10", "1"]);
}

#[test]
fn model_check_checks_the_device_first() {
    check("model_check", &["10", "--small"]);
}

#[test]
fn prove_share_checks_the_device_first() {
    check("prove_share", &["busy", "2", "2", "vm/examples/fibonacci.kasm", "10"]);
}

#[test]
fn ntt_io_checks_the_device_first() {
    let dir = std::env::temp_dir().join(format!("ntt_io_test_{}", std::process::id()));
    let dir = dir.to_str().unwrap();
    check("ntt_io", &["prep", dir, "10", "4"]);
    let _ = std::fs::remove_dir_all(dir);
}
