//! The suite on the first CUDA device, when there is one:
//! `cargo test --release -p conformance --features cuda --test cuda -- --test-threads 1`.
//! Without a device (or driver) every test fails, saying so, unless
//! KILN_ALLOW_NO_GPU=1, which reports each as "skipped: no CUDA device".
#![cfg(feature = "cuda")]

use backend_cuda::{CudaBackend, CudaConfig};

/// The first device, tuned by the `KILN_CUDA_*` variables (e.g.
/// `KILN_CUDA_COMPOSE=interpret` runs the suite on the interpreter).
fn device() -> Option<CudaBackend> {
    let config = match CudaConfig::from_env() {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    match CudaBackend::with_config(0, config) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("no CUDA device: {e}");
            None
        }
    }
}

conformance::suite!(cuda, maybe: device());
