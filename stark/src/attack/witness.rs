//! The malicious-witness harness: bad witnesses against the constraint
//! checker and, forged into proofs, against the verifier.
//!
//! An [`Attack`] is a witness for a statement that must not be accepted.
//! [`single_cell_attacks`] derives one per column of every table at its
//! first, a middle, its last real and a padding row; an AIR's author adds
//! semantic ones (a read of a stale value, a skipped input, ...).
//! [`Harness::run`] tries each: the debug checker must find a failing
//! constraint or bus, and the proof [`super::forge`] makes of it must be
//! rejected by the verifier. An attack either lets through is a soundness
//! bug in the AIR, never a case to drop.

use super::forge;
use crate::air::Machine;
use crate::debug::check_constraints;
use crate::options::ProofOptions;
use crate::verifier::{verify, Acceptance, VerifyError};
use backend_api::{Backend, ColMatrix, F};
use rayon::prelude::*;
use std::fmt::Write as _;
use std::sync::Arc;

/// A witness (main traces) for a statement (a machine and its public
/// values) that must be refused.
pub struct Attack<'a> {
    pub name: String,
    pub machine: Arc<dyn Machine + Send + 'a>,
    pub publics: Vec<F>,
    pub traces: Vec<ColMatrix>,
}

/// What the verifier made of the forged proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Rejected(VerifyError),
    /// Not even a forger could make a proof (the witness has the wrong
    /// shape for the statement).
    NotProven(String),
    /// A soundness bug.
    Accepted,
}

/// One attack's result.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub attack: String,
    /// `Err` names the first failing constraint or bus.
    pub checker: Result<(), String>,
    pub verdict: Verdict,
}

impl Outcome {
    /// Whether the constraints or the verifier let the attack through.
    pub fn accepted(&self) -> bool {
        self.checker.is_ok() || self.verdict == Verdict::Accepted
    }
}

/// Every attack's outcome, in order.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub outcomes: Vec<Outcome>,
}

impl Report {
    pub fn accepted(&self) -> Vec<&Outcome> {
        self.outcomes.iter().filter(|o| o.accepted()).collect()
    }

    /// The table attack x constraints/buses x verifier, then the totals.
    pub fn table(&self) -> String {
        let width = self.outcomes.iter().map(|o| o.attack.len()).max().unwrap_or(6).max(6);
        let mut out = format!("{:width$} | {:58} | verifier\n", "attack", "constraints and buses");
        for o in &self.outcomes {
            let checker = match &o.checker {
                Ok(()) => "ACCEPTED".to_string(),
                Err(e) => e.clone(),
            };
            let verdict = match &o.verdict {
                Verdict::Rejected(e) => format!("rejected: {e}"),
                Verdict::NotProven(e) => format!("no proof: {e}"),
                Verdict::Accepted => "ACCEPTED".to_string(),
            };
            let _ = writeln!(out, "{:width$} | {checker:58} | {verdict}", o.attack);
        }
        let accepted = self.accepted().len();
        let _ = writeln!(
            out,
            "{} attacks, {} rejected, {accepted} accepted",
            self.outcomes.len(),
            self.outcomes.len() - accepted
        );
        out
    }

    /// Panics with the accepted attacks listed, if there are any.
    pub fn assert_none_accepted(&self) {
        let accepted = self.accepted();
        assert!(
            accepted.is_empty(),
            "{} attack(s) accepted (soundness bugs):\n{}",
            accepted.len(),
            accepted.iter().map(|o| format!("  {o:?}")).collect::<Vec<_>>().join("\n")
        );
    }
}

/// Runs attacks on a backend with proof options.
pub struct Harness<'b, B: Backend> {
    pub backend: &'b B,
    pub options: ProofOptions,
    /// Seeds the checker's challenges.
    pub seed: u64,
}

impl<B: Backend> Harness<'_, B> {
    pub fn run(&self, attacks: Vec<Attack<'_>>) -> Report {
        let outcomes = attacks.into_par_iter().map(|a| self.try_one(a)).collect();
        Report { outcomes }
    }

    fn try_one(&self, a: Attack<'_>) -> Outcome {
        let machine = &*a.machine;
        let checker = check_constraints(self.backend, machine, &a.traces, &a.publics, self.seed);
        let verdict = match forge(self.backend, machine, a.traces, &a.publics, &self.options) {
            Err(e) => Verdict::NotProven(e.to_string()),
            Ok(proof) => match verify(machine, &a.publics, &proof, &Acceptance::Options(self.options)) {
                Ok(()) => Verdict::Accepted,
                Err(e) => Verdict::Rejected(e),
            },
        };
        Outcome { attack: a.name, checker, verdict }
    }
}

/// The rows a sweep changes in a table of `height` rows whose first `real`
/// rows are real: first, middle, last real, and a padding row if any.
pub fn sweep_rows(real: usize, height: usize) -> Vec<(&'static str, usize)> {
    let real = real.clamp(1, height);
    let mut rows = vec![("first", 0), ("middle", real / 2), ("last real", real - 1)];
    if real < height {
        rows.push(("padding", real + (height - real) / 2));
    }
    rows.dedup_by_key(|(_, r)| *r);
    rows
}

/// The changed value: a boolean flips (the change most likely to stay
/// within a selector's or flag's range), anything else moves by one (most
/// likely to stay within a range check).
pub fn mutate_cell(v: F) -> F {
    match v.value() {
        0 => F::ONE,
        1 => F::ZERO,
        _ => v + F::ONE,
    }
}

/// One attack per (table, main column, row of [`sweep_rows`]): the valid
/// `traces` with that single cell changed by [`mutate_cell`]. `real_rows`
/// gives each table's count of real rows (its height when it has no
/// padding).
pub fn single_cell_attacks<'a>(
    machine: Arc<dyn Machine + Send + 'a>,
    publics: &[F],
    traces: &[ColMatrix],
    real_rows: &[usize],
) -> Vec<Attack<'a>> {
    let tables = machine.tables();
    let mut attacks = vec![];
    for (t, (air, trace)) in tables.iter().zip(traces).enumerate() {
        for col in 0..trace.width() {
            for (label, row) in sweep_rows(real_rows[t], trace.height()) {
                let old = trace.get(row, col);
                let new = mutate_cell(old);
                let mut traces = traces.to_vec();
                traces[t].set(row, col, new);
                attacks.push(Attack {
                    name: format!("{}.{} @{label} (row {row}): {old} -> {new}", air.name(), air.column_name(col)),
                    machine: machine.clone(),
                    publics: publics.to_vec(),
                    traces,
                });
            }
        }
    }
    attacks
}
