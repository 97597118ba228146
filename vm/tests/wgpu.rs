//! `kiln prove --backend wgpu` against `--backend cpu`: every example
//! program's proof file is byte-identical and verifies. Needs a wgpu
//! adapter (lavapipe in CI); without one the test passes with a note,
//! unless `KILN_REQUIRE_WGPU=1`.
#![cfg(feature = "wgpu")]

use std::path::Path;
use std::process::Command;

fn kiln(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kiln")).args(args).current_dir(dir).output().unwrap()
}

#[test]
fn every_example_proof_is_the_cpu_proof() {
    if backend_wgpu::probe().is_empty() {
        assert!(!std::env::var("KILN_REQUIRE_WGPU").is_ok_and(|v| v == "1"), "no wgpu adapter");
        eprintln!("no wgpu adapter: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    // Small inputs and light options: lavapipe runs shaders on the CPU.
    let cases = [("fibonacci.kasm", "300"), ("factorial.kasm", "12"), ("matmul.kasm", "3"), ("chain.kasm", "30,3")];
    for (file, input) in cases {
        let prog = examples.join(file);
        let mut outs = Vec::new();
        for backend in ["cpu", "wgpu"] {
            let out = format!("{file}.{backend}.proof");
            let args = [
                "prove",
                prog.to_str().unwrap(),
                "--input",
                input,
                "--backend",
                backend,
                "--grinding",
                "4",
                "--queries",
                "16",
                "--on-decline",
                "strict",
                "--out",
                &out,
            ];
            let r = kiln(dir.path(), &args);
            assert!(r.status.success(), "{file} on {backend}: {}", String::from_utf8_lossy(&r.stderr));
            outs.push(std::fs::read(dir.path().join(&out)).unwrap());
        }
        assert!(outs[0] == outs[1], "{file}: the wgpu proof differs from the cpu proof");
        let r = kiln(dir.path(), &["verify", &format!("{file}.wgpu.proof"), "--min-security", "0"]);
        assert!(r.status.success(), "{file}: {}", String::from_utf8_lossy(&r.stderr));
    }
}

/// With no Vulkan driver to load (the loader pointed at a missing ICD
/// file) there is no adapter: `--backend wgpu` fails in one line,
/// `kiln devices` says so, and `auto` proves on the CPU.
#[test]
fn no_adapter_is_a_clean_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kiln"))
            .args(args)
            .current_dir(dir.path())
            .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
            .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
            .output()
            .unwrap()
    };
    let out = run(&["prove", "--backend", "wgpu", "--input", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("wgpu backend cannot run here") && err.contains("unavailable"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = run(&["devices"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("wgpu  unavailable"), "{text}");
    // auto considers a GPU only for runs past the crossover, here every
    // run: with no adapter it falls back to the CPU and says why.
    let fast = ["--blowup", "2", "--grinding", "0", "--queries", "8", "--json"];
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args([&["prove", "--input", "5"][..], &fast].concat())
        .current_dir(dir.path())
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env("KILN_AUTO_GPU_MIN_CYCLES", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let backend = v["backend"].as_str().unwrap();
    assert!(backend.starts_with("cpu (auto: no usable GPU: "), "{backend}");
}
