//! The backend-generic conformance suite of Kiln.
//!
//! This crate owns the answer to "does this backend produce exactly the
//! reference bytes?": every operation of the `backend_api::Backend` trait
//! family is run on the backend under test and on `backend_cpu::CpuBackend`
//! with the same random (never all-zero) inputs, over shapes from 1 row to
//! 2^max_log rows and 1 to 256 columns, every blowup and both hashes, and
//! the results are compared byte for byte; whole proofs of the stark
//! example AIRs and of the VM example programs must be byte-identical;
//! invalid shapes and options must give the same typed error on both.
//!
//! Entry points:
//! - [`suite!`]: `conformance::suite!(my_backend, MyBackend::new());` in a
//!   test file expands to one `#[test]` per operation group, each printing
//!   its summary table (operation x shape x pass/fail);
//! - [`run_suite`] / [`run_group`]: the same as plain functions returning a
//!   [`SuiteReport`].
//!
//! Beside the suite it owns `flaky::Flaky` (a wrapper that declines at
//! armed fault sites, under the `fault-injection` feature) used by the
//! fault-recovery tests. Sizes are set by [`SuiteConfig`]; the environment
//! variables `KILN_CONFORMANCE_MAX_LOG`, `KILN_CONFORMANCE_SEED` and
//! `KILN_CONFORMANCE_CASES` override the defaults.

#[cfg(feature = "fault-injection")]
pub mod flaky;
mod inputs;
mod ops;
mod parity;
mod proofs;
mod props;
pub mod report;

pub use backend_api::Backend;
pub use report::{Case, SuiteReport};

use std::io::Write;

/// The sizes and seed of a suite run.
#[derive(Clone, Debug)]
pub struct SuiteConfig {
    /// Largest log2 height of operation inputs (traces; LDEs are taller).
    pub max_log: u32,
    /// Widths tried at each height (capped by `max_elems`).
    pub widths: Vec<usize>,
    /// Largest rows x columns of one input; width 1 is always run, so the
    /// tallest height is always covered.
    pub max_elems: usize,
    /// Base seed; each case derives its own seed from it and its name.
    pub seed: u64,
    /// Random cases per property test.
    pub prop_cases: u32,
}

/// Default largest height in CI (`KILN_CONFORMANCE_MAX_LOG` raises it).
pub const DEFAULT_MAX_LOG: u32 = 14;
/// Default base seed (`KILN_CONFORMANCE_SEED` changes it).
pub const DEFAULT_SEED: u64 = 0x6b69_6c6e_c0de;

impl Default for SuiteConfig {
    fn default() -> SuiteConfig {
        SuiteConfig::with_max_log(DEFAULT_MAX_LOG)
    }
}

impl SuiteConfig {
    pub fn with_max_log(max_log: u32) -> SuiteConfig {
        SuiteConfig {
            max_log,
            widths: vec![1, 3, 7, 64, 256],
            max_elems: 1usize << (max_log + 2).max(16),
            seed: DEFAULT_SEED,
            prop_cases: 24,
        }
    }

    /// The defaults, overridden by `KILN_CONFORMANCE_MAX_LOG`,
    /// `KILN_CONFORMANCE_SEED` (decimal or 0x-hex) and
    /// `KILN_CONFORMANCE_CASES`.
    pub fn from_env() -> SuiteConfig {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let max_log = var("KILN_CONFORMANCE_MAX_LOG")
            .map(|v| v.trim().parse::<u32>().expect("KILN_CONFORMANCE_MAX_LOG: a number of bits, e.g. 20"))
            .unwrap_or(DEFAULT_MAX_LOG)
            .min(26);
        let mut c = SuiteConfig::with_max_log(max_log);
        if let Some(s) = var("KILN_CONFORMANCE_SEED") {
            let s = s.trim();
            c.seed = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            }
            .expect("KILN_CONFORMANCE_SEED: a u64, decimal or 0x-hex");
        }
        if let Some(n) = var("KILN_CONFORMANCE_CASES") {
            c.prop_cases = n.trim().parse().expect("KILN_CONFORMANCE_CASES: a number");
        }
        c
    }

    /// The (log2 rows, columns) input shapes: every height 2^0..=2^max_log,
    /// each with the widths that fit `max_elems`.
    pub fn shapes(&self) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        for log in 0..=self.max_log {
            for &w in &self.widths {
                if w == 1 || (w << log) <= self.max_elems {
                    out.push((log, w));
                }
            }
        }
        out
    }
}

/// The operation groups; each is one `#[test]` of [`suite!`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// upload, download, reshape; uploads of a pinned host matrix.
    Transfers,
    /// ntt, intt, intt_in_place and their round trip.
    Ntt,
    /// coset_lde and coset_ntt at blowups 1 to 16, fold_coeffs,
    /// stride_rows and interleave, and
    /// each tied to another (coset_ntt of intt(x) is coset_lde of x; of a
    /// fold, every 2^f-th row of coset_ntt of x).
    Lde,
    /// commit and open with both hashes (plain and reshaped leaves).
    Merkle,
    /// logup_aux over the example and VM tables' interactions, one mixed
    /// set, and vanishing denominators.
    LogUp,
    /// compose over the example AIRs' constraints and one with fixed and
    /// auxiliary columns.
    Compose,
    /// split_quotient: valid quotients and too-high-degree ones.
    Quotient,
    /// evaluate_at, deep_quotient and combine_columns.
    Deep,
    /// fri_fold at arities 2..16, with and without roll-in.
    Fri,
    /// grind at several difficulties with both hashes.
    Grind,
    /// Invalid shapes and options give equal typed errors.
    Errors,
    /// Whole proofs of the stark example AIRs.
    Proofs,
    /// Whole proofs of the VM example programs.
    VmProofs,
    /// Property tests with shrinking (transforms, commitments, folding).
    Properties,
}

impl Group {
    pub const ALL: [Group; 14] = [
        Group::Transfers,
        Group::Ntt,
        Group::Lde,
        Group::Merkle,
        Group::LogUp,
        Group::Compose,
        Group::Quotient,
        Group::Deep,
        Group::Fri,
        Group::Grind,
        Group::Errors,
        Group::Proofs,
        Group::VmProofs,
        Group::Properties,
    ];
}

/// Runs one group of the suite on `backend` against the CPU reference.
pub fn run_group<B: Backend>(backend: &B, config: &SuiteConfig, group: Group) -> SuiteReport {
    let cpu = backend_cpu::CpuBackend::new();
    let mut report = SuiteReport::new(backend.name(), config.seed);
    let mut c = ops::Checker { b: backend, cpu: &cpu, cfg: config, report: &mut report };
    match group {
        Group::Transfers => c.transfers(),
        Group::Ntt => c.ntt(),
        Group::Lde => c.lde(),
        Group::Merkle => {
            c.merkle();
            c.upload_commit_blocks();
        }
        Group::LogUp => c.logup(),
        Group::Compose => c.compose(),
        Group::Quotient => c.quotient(),
        Group::Deep => c.deep(),
        Group::Fri => c.fri(),
        Group::Grind => c.grind(),
        Group::Errors => parity::run(&mut c),
        Group::Proofs => proofs::stark_examples(&mut c),
        Group::VmProofs => proofs::vm_examples(&mut c),
        Group::Properties => props::run(&mut c),
    }
    report
}

/// Runs the whole suite on `backend` against the CPU reference.
pub fn run_suite<B: Backend>(backend: &B, config: &SuiteConfig) -> SuiteReport {
    let mut report = SuiteReport::new(backend.name(), config.seed);
    for g in Group::ALL {
        report.merge(run_group(backend, config, g));
    }
    report
}

/// Set to 1 to let suite tests whose backend is absent (no GPU) pass as
/// skipped instead of failing.
pub const ALLOW_ABSENT_ENV: &str = "KILN_ALLOW_NO_GPU";

/// What each test of [`suite!`] runs: builds the backend, runs `group`
/// with [`SuiteConfig::from_env`], prints the summary table and panics if
/// any case failed.
///
/// A backend that is not available here (`None`) fails the test, so "14
/// passed" never stands for a suite that did not run; with
/// `KILN_ALLOW_NO_GPU=1` it passes and says "skipped" instead.
///
/// The table goes straight to the process's stderr, not through the test
/// harness's capture, so a plain `cargo test` shows it.
pub fn run_group_test<B: Backend>(suite: &str, group: Group, make: impl FnOnce() -> Option<B>) {
    let allow = std::env::var_os(ALLOW_ABSENT_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    run_group_test_allowing(suite, group, make, allow)
}

/// [`run_group_test`] with the absent-backend policy given.
pub fn run_group_test_allowing<B: Backend>(
    suite: &str,
    group: Group,
    make: impl FnOnce() -> Option<B>,
    allow_absent: bool,
) {
    let Some(backend) = make() else {
        let what = format!("conformance {suite}::{group:?}: the backend is not available here");
        if !allow_absent {
            panic!("{what}: nothing was checked ({ALLOW_ABSENT_ENV}=1 reports it as skipped instead)");
        }
        print_table(&format!("{what}: skipped: nothing was checked ({ALLOW_ABSENT_ENV}=1)\n"));
        return;
    };
    let report = run_group(&backend, &SuiteConfig::from_env(), group);
    print_table(&format!("\n== conformance {suite}::{group:?}\n{report}\n"));
    report.assert_passed();
}

fn print_table(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(s.as_bytes());
    let _ = e.flush();
}

/// Instantiates the whole suite for a backend: one `#[test]` per
/// operation group in a module named `$name`, so a failure names the
/// operation.
///
/// ```ignore
/// conformance::suite!(cpu, backend_cpu::CpuBackend::new());
/// // A backend that may be absent: an `Option<B>`; `None` fails the tests
/// // unless KILN_ALLOW_NO_GPU=1, which reports them as skipped.
/// conformance::suite!(cuda, maybe: backend_cuda::CudaBackend::new(0).ok());
/// ```
/// The expression is evaluated once per test, in a module that sees the
/// calling file's imports.
#[macro_export]
macro_rules! suite {
    ($name:ident, maybe: $make:expr) => {
        $crate::__suite_tests!($name, $make);
    };
    ($name:ident, $make:expr) => {
        $crate::__suite_tests!($name, ::core::option::Option::Some($make));
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __suite_tests {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn run(group: $crate::Group) {
                $crate::run_group_test(stringify!($name), group, || $make)
            }

            #[test]
            fn transfers() {
                run($crate::Group::Transfers)
            }
            #[test]
            fn ntt() {
                run($crate::Group::Ntt)
            }
            #[test]
            fn coset_lde() {
                run($crate::Group::Lde)
            }
            #[test]
            fn merkle() {
                run($crate::Group::Merkle)
            }
            #[test]
            fn logup() {
                run($crate::Group::LogUp)
            }
            #[test]
            fn compose() {
                run($crate::Group::Compose)
            }
            #[test]
            fn split_quotient() {
                run($crate::Group::Quotient)
            }
            #[test]
            fn deep() {
                run($crate::Group::Deep)
            }
            #[test]
            fn fri_fold() {
                run($crate::Group::Fri)
            }
            #[test]
            fn grind() {
                run($crate::Group::Grind)
            }
            #[test]
            fn error_parity() {
                run($crate::Group::Errors)
            }
            #[test]
            fn stark_proofs() {
                run($crate::Group::Proofs)
            }
            #[test]
            fn vm_proofs() {
                run($crate::Group::VmProofs)
            }
            #[test]
            fn properties() {
                run($crate::Group::Properties)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_backend_fails_unless_allowed() {
        let absent = || None::<backend_cpu::CpuBackend>;
        let failed = std::panic::catch_unwind(|| run_group_test_allowing("gpu", Group::Ntt, absent, false));
        let msg = failed.expect_err("an absent backend passed");
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(msg.contains("not available here") && msg.contains(ALLOW_ABSENT_ENV), "{msg}");
        // Allowed: passes (with a "skipped" note on stderr).
        run_group_test_allowing("gpu", Group::Ntt, absent, true);
    }
}
