//! The suite on the first CUDA device, when there is one:
//! `cargo test --release -p conformance --features cuda --test cuda -- --test-threads 1`.
//! Without a device (or driver) every test fails, saying so, unless
//! KILN_ALLOW_NO_GPU=1, which reports each as "skipped: no CUDA device".
#![cfg(feature = "cuda")]

use backend_cuda::CudaBackend;

fn device() -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("no CUDA device: {e}");
            None
        }
    }
}

conformance::suite!(cuda, maybe: device());
