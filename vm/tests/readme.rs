//! Every command in the README runs as written.
//!
//! `cargo run --release -- ARGS` lines (the `kiln` CLI) run, in order, with
//! the binary this test was built with, in a scratch directory laid out
//! like the repository (`vm/examples`), and must succeed. Every other cargo
//! command (tests, benches, GPU builds: out of a test's time or hardware)
//! must name packages, features and targets that exist, with the features
//! each target requires, as `cargo metadata` reports them.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The command lines of the README's `sh` blocks, comments removed.
fn commands() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut out = vec![];
    let mut in_sh = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        let cmd = line.split(" #").next().unwrap().trim();
        if in_sh && !cmd.is_empty() {
            out.push(cmd.to_string());
        }
    }
    out
}

/// A parsed `cargo` command line.
#[derive(Debug, Default)]
struct Cargo {
    sub: String,
    package: Option<String>,
    features: Vec<String>,
    tests: Vec<String>,
    examples: Vec<String>,
    /// After `--`.
    args: Vec<String>,
}

fn parse(cmd: &str) -> Cargo {
    let mut words = cmd.split_whitespace().skip_while(|w| w.contains('=')).map(str::to_string);
    assert_eq!(words.next().as_deref(), Some("cargo"), "not a cargo command: {cmd}");
    let mut c = Cargo { sub: words.next().unwrap(), ..Cargo::default() };
    while let Some(w) = words.next() {
        match w.as_str() {
            "-p" | "--package" => c.package = words.next(),
            "--features" => c.features.extend(words.next().unwrap().split(',').map(str::to_string)),
            "--test" => c.tests.push(words.next().unwrap()),
            "--example" => c.examples.push(words.next().unwrap()),
            "--" => c.args = words.by_ref().collect(),
            "--release" | "--workspace" => {}
            other => panic!("{cmd}: flag {other} not understood by this test"),
        }
    }
    c
}

fn metadata() -> Value {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The package a command builds: `-p`, else the one with the `kiln` binary.
fn package<'a>(meta: &'a Value, c: &Cargo) -> &'a Value {
    let packages = meta["packages"].as_array().unwrap();
    let found = match &c.package {
        Some(name) => packages.iter().find(|p| p["name"] == name.as_str()),
        None => packages.iter().find(|p| target(p, "bin", "kiln").is_some()),
    };
    found.unwrap_or_else(|| panic!("no package for {c:?}"))
}

fn target<'a>(p: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    p["targets"].as_array().unwrap().iter().find(|t| t["name"] == name && t["kind"][0] == kind)
}

/// Names only what exists, with every feature a target requires.
fn check_names(meta: &Value, c: &Cargo, cmd: &str) {
    let p = package(meta, c);
    for f in &c.features {
        assert!(p["features"].get(f).is_some(), "{cmd}: package {} has no feature {f}", p["name"]);
    }
    let named = c.tests.iter().map(|t| ("test", t)).chain(c.examples.iter().map(|e| ("example", e)));
    for (kind, name) in named {
        let t = target(p, kind, name).unwrap_or_else(|| panic!("{cmd}: no {kind} {name} in {}", p["name"]));
        for f in t["required-features"].as_array().into_iter().flatten() {
            assert!(c.features.iter().any(|g| f == g.as_str()), "{cmd}: {kind} {name} needs --features {f}");
        }
    }
}

#[test]
fn every_readme_command_runs_as_written() {
    let commands = commands();
    assert!(commands.len() >= 10, "{commands:?}");
    // The README starts with the two set-up commands.
    assert_eq!(commands[0], "cargo run --release -- prove");
    assert_eq!(commands[1], "cargo test --workspace");
    let meta = metadata();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("vm")).unwrap();
    std::os::unix::fs::symlink(root().join("vm/examples"), dir.path().join("vm/examples")).unwrap();
    let mut ran = 0;
    for cmd in &commands {
        let c = parse(cmd);
        check_names(&meta, &c, cmd);
        let cli = c.sub == "run" && c.package.is_none() && c.examples.is_empty();
        if !cli || !c.features.is_empty() {
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_kiln")).args(&c.args).current_dir(dir.path()).output().unwrap();
        assert!(out.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
        ran += 1;
    }
    assert!(ran >= 5, "only {ran} CLI commands ran");
}
