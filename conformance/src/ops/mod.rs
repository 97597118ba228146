//! Operation-by-operation comparison against the CPU reference.
//!
//! One submodule per operation group, each adding its group's checks to
//! [`Checker`] the way a backend implements one trait per file.

mod compose;
mod deep;
mod fri;
mod lde;
mod logup;
mod merkle;
mod quotient;
mod transforms;

pub(crate) use logup::logups;

use crate::inputs::{case_seed, rng, CaseRng};
use crate::{SuiteConfig, SuiteReport};
use backend_api::{Backend, ColMatrix, Ctx, DeviceMatrix, F};
use backend_cpu::cross_check::first_difference;
use backend_cpu::{CpuBackend, CpuMatrix};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The context every direct operation call of the suite runs under.
pub const CTX: Ctx<'static> = Ctx::table("conformance");

/// The backend under test, the reference, and the report being filled.
pub(crate) struct Checker<'a, B: Backend> {
    pub b: &'a B,
    pub cpu: &'a CpuBackend,
    pub cfg: &'a SuiteConfig,
    pub report: &'a mut SuiteReport,
}

/// Why a panic happened, as text.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".into())
}

/// Compares a backend's host copy with the reference's, naming the first
/// differing element.
pub(crate) fn same_host(got: &ColMatrix, want: &ColMatrix) -> Result<(), String> {
    if (got.height(), got.width()) != (want.height(), want.width()) {
        return Err(format!("shape {}x{}, reference {}x{}", got.height(), got.width(), want.height(), want.width()));
    }
    match first_difference(got, want) {
        None => Ok(()),
        Some((c, r)) => Err(format!("column {c}, row {r}: {} vs reference {}", got.get(r, c), want.get(r, c))),
    }
}

/// `same_host` for gathered rows: row i is the i-th row asked.
fn same_rows(got: &[Vec<F>], want: &[Vec<F>]) -> Result<(), String> {
    let width = want.first().map_or(0, Vec::len);
    if got.len() != want.len() || got.iter().any(|r| r.len() != width) {
        return Err(format!("{} rows (not all of {width} columns?), reference {}x{width}", got.len(), want.len()));
    }
    let columns =
        |rows: &[Vec<F>]| ColMatrix::from_columns((0..width).map(|c| rows.iter().map(|r| r[c]).collect()).collect());
    same_host(&columns(got), &columns(want))
}

/// Rows first, first + 2^log_step, ... of `m`.
fn rows_of(m: &ColMatrix, first: usize, log_step: u32) -> ColMatrix {
    let (w, h) = (m.width(), m.height() >> log_step);
    let data = (0..w).flat_map(|c| (0..h).map(move |k| m.get(first + (k << log_step), c))).collect();
    ColMatrix::new(w, h, data)
}

/// Heights tried for operations whose input is a trace (compose, split):
/// every small height, then every other one up to max_log - 2.
fn trace_logs(cfg: &SuiteConfig) -> Vec<u32> {
    (0..=cfg.max_log.saturating_sub(2)).filter(|&l| l <= 4 || l % 2 == 0 || l == cfg.max_log - 2).collect()
}

impl<B: Backend> Checker<'_, B> {
    /// Runs one case with its own seeded RNG and records it; a panic in
    /// the backend is a failure, not an abort of the suite.
    pub fn case(
        &mut self,
        op: impl Into<String>,
        rows: impl Into<String>,
        cols: impl Into<String>,
        f: impl FnOnce(&Self, &mut CaseRng) -> Result<(), String>,
    ) {
        let (op, rows, cols) = (op.into(), rows.into(), cols.into());
        let seed = case_seed(self.cfg.seed, &format!("{op}/{rows}/{cols}"));
        let mut r = rng(seed);
        let outcome = match catch_unwind(AssertUnwindSafe(|| f(self, &mut r))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("{e} (case seed {seed:#x})")),
            Err(p) => Err(format!("panicked: {} (case seed {seed:#x})", panic_text(&*p))),
        };
        self.report.push(op, rows, cols, outcome);
    }

    pub fn up(&self, m: &ColMatrix) -> Result<(B::Matrix, CpuMatrix), String> {
        let g = self.b.upload(&CTX, m).map_err(|e| format!("upload: {e}"))?;
        if (g.height(), g.width()) != (m.height(), m.width()) {
            return Err(format!("uploaded matrix reports {}x{}", g.height(), g.width()));
        }
        Ok((g, CpuMatrix::from_host(m)))
    }

    /// Both results must succeed with equal bytes, or fail with equal
    /// errors. Returns both matrices for further stages.
    pub fn same_matrix(
        &self,
        got: backend_api::Result<B::Matrix>,
        want: backend_api::Result<CpuMatrix>,
    ) -> Result<Option<(B::Matrix, CpuMatrix)>, String> {
        match (got, want) {
            (Ok(g), Ok(w)) => {
                if (g.height(), g.width()) != (w.height(), w.width()) {
                    return Err(format!(
                        "result reports {}x{}, reference {}x{}",
                        g.height(),
                        g.width(),
                        w.height(),
                        w.width()
                    ));
                }
                let host = self.b.download(&CTX, &g).map_err(|e| format!("download: {e}"))?;
                same_host(&host, &w.to_host())?;
                Ok(Some((g, w)))
            }
            (Err(a), Err(b)) if a == b => Ok(None),
            (Err(a), Err(b)) => Err(format!("error {a:?}, reference {b:?}")),
            (Err(a), Ok(_)) => Err(format!("error {a:?}, the reference succeeded")),
            (Ok(_), Err(b)) => Err(format!("succeeded, the reference failed with {b:?}")),
        }
    }

    fn lde_cap(&self) -> usize {
        self.cfg.max_elems * 4
    }
}
