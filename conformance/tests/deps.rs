//! A backend author depends on `conformance` and gets the suite without
//! the `kiln` CLI's dependencies: `vm` comes in as a library
//! (`default-features = false`, so without its `cli` feature).

use std::process::Command;

#[test]
fn the_suite_does_not_pull_in_the_cli() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "conformance", "-e", "normal", "--prefix", "none", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.lines().any(|l| l.starts_with("vm ")), "vm is not a dependency any more?\n{tree}");
    for cli_only in ["clap ", "indicatif ", "env_logger "] {
        assert!(!tree.lines().any(|l| l.starts_with(cli_only)), "conformance pulls in {cli_only}\n{tree}");
    }
}
