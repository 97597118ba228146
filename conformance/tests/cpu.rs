//! The reference against itself: the suite's own sanity check, and what CI
//! runs on every change.

use backend_cpu::CpuBackend;

conformance::suite!(cpu, CpuBackend::new());
