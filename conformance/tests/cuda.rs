//! The suite on the first CUDA device, when there is one:
//! `cargo test --release -p conformance --features cuda --test cuda -- --test-threads 1`.
//! Without a device (or driver) every test passes with a "skipped" note.
#![cfg(feature = "cuda")]

use backend_cuda::CudaBackend;

fn device() -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("no CUDA device: skipped ({e})");
            None
        }
    }
}

conformance::suite!(cuda, maybe: device());
