//! The suite on the wgpu backend's default adapter (a GPU, else lavapipe):
//! `cargo test --release -p conformance --features wgpu --test wgpu`.
//! Without an adapter every test fails, saying so, unless
//! KILN_ALLOW_NO_GPU=1, which reports each as skipped.
#![cfg(feature = "wgpu")]

use backend_wgpu::WgpuBackend;

fn device() -> Option<WgpuBackend> {
    match WgpuBackend::new() {
        Ok(b) => {
            let a = b.adapter();
            eprintln!("wgpu adapter: {} ({}, {}, {})", a.name, a.api, a.kind, a.driver);
            Some(b)
        }
        Err(e) => {
            eprintln!("no wgpu adapter: {e}");
            None
        }
    }
}

conformance::suite!(wgpu, maybe: device());
