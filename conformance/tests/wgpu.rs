//! The suite on the wgpu backend's default adapter (a GPU, else lavapipe):
//! `cargo test --release -p conformance --features wgpu --test wgpu`.
//! Without any adapter every test passes with a "skipped" note; with
//! `KILN_REQUIRE_WGPU=1` (CI) a missing adapter fails instead.
#![cfg(feature = "wgpu")]

use backend_wgpu::WgpuBackend;

fn device() -> Option<WgpuBackend> {
    match WgpuBackend::new() {
        Ok(b) => {
            let a = b.adapter();
            eprintln!("wgpu adapter: {} ({}, {}, {})", a.name, a.api, a.kind, a.driver);
            Some(b)
        }
        Err(e) if std::env::var("KILN_REQUIRE_WGPU").is_ok_and(|v| v == "1") => panic!("no wgpu adapter: {e}"),
        Err(e) => {
            eprintln!("no wgpu adapter: skipped ({e})");
            None
        }
    }
}

conformance::suite!(wgpu, maybe: device());
