//! A row-by-row constraint checker for AIR authors: finds the first
//! constraint a trace violates, by table, constraint and row, without
//! proving. The prover runs it on the failing table when the quotient
//! shows the trace does not satisfy its constraints, so that error names
//! the constraint and row too.

use crate::air::{check_aux_layout, host_aux, Air, Machine};
use crate::prover::ProveError;
use backend_api::{Backend, BackendError, ColMatrix, ConstraintDomain, Ctx, Ext, Leaf, F};
use std::fmt;

/// The first constraint of a table that fails, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub table: String,
    /// Index into the table's `constraints().constraints`.
    pub constraint: usize,
    pub domain: ConstraintDomain,
    pub row: usize,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "table {}: constraint {} ({:?}) fails at row {}", self.table, self.constraint, self.domain, self.row)
    }
}

/// Challenges for checking: generic, derived from `seed`.
fn challenges(count: usize, seed: u64) -> Vec<Ext> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::new(state >> 1)
    };
    (0..count).map(|_| Ext::new(next(), next(), next())).collect()
}

/// Checks every constraint of every table on every row it applies to, with
/// challenges derived from `seed`, and the machine's cross-table checks.
/// Auxiliary traces are built on `backend` (the CPU one will do).
pub fn check_constraints<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: &[ColMatrix],
    publics: &[F],
    seed: u64,
) -> Result<(), String> {
    let tables = machine.tables();
    if tables.len() != traces.len() {
        return Err(format!("{} traces for {} tables", traces.len(), tables.len()));
    }
    let challenges = challenges(machine.num_challenges(), seed);
    let mut all_values = vec![];
    for (air, trace) in tables.iter().zip(traces) {
        match check_table(backend, *air, trace, &challenges, publics)? {
            Ok(values) => all_values.push(values),
            Err(v) => return Err(v.to_string()),
        }
    }
    machine.check_aux_values(publics, &challenges, &all_values)
}

/// The first violated constraint of one table, if any, with challenges
/// derived from `seed` (`num_challenges` of them, the machine's count).
pub fn first_violation<B: Backend>(
    backend: &B,
    air: &dyn Air,
    trace: &ColMatrix,
    publics: &[F],
    num_challenges: usize,
    seed: u64,
) -> Result<Option<Violation>, String> {
    Ok(check_table(backend, air, trace, &challenges(num_challenges, seed), publics)?.err())
}

/// For the prover: when the quotient shows that `air`'s trace does not
/// satisfy its constraints, the first failing constraint and row (the
/// trace comes back from the backend, only on this failure path). Any
/// other error, or a failure the checker cannot place, is returned as is.
pub(crate) fn locate<B: Backend>(
    e: BackendError,
    backend: &B,
    air: &dyn Air,
    main: &B::Matrix,
    publics: &[F],
    num_challenges: usize,
) -> ProveError {
    if !matches!(e, BackendError::ConstraintsNotSatisfied { .. }) {
        return e.into();
    }
    let trace = backend.download(&Ctx::table(air.name()), main);
    match trace.map(|t| first_violation(backend, air, &t, publics, num_challenges, 0)) {
        Ok(Ok(Some(v))) => ProveError::Unsatisfied(v),
        _ => e.into(),
    }
}

/// One table: its auxiliary values when every constraint holds, else the
/// first violation. The outer error is a trace or layout the checker
/// cannot evaluate.
fn check_table<B: Backend>(
    backend: &B,
    air: &dyn Air,
    trace: &ColMatrix,
    challenges: &[Ext],
    publics: &[F],
) -> Result<Result<Vec<Ext>, Violation>, String> {
    let cs = air.constraints();
    let n = trace.height();
    check_aux_layout(air, challenges.len()).map_err(|e| format!("table {}: {e}", air.name()))?;
    let (aux, aux_values) =
        host_aux(backend, air, trace, challenges).map_err(|e| format!("table {}: {e}", air.name()))?;
    let fixed = air.fixed_trace();
    for row in 0..n {
        let leaf = |l: &Leaf| -> Ext {
            match *l {
                Leaf::Const(c) => Ext::from_base(c),
                Leaf::Main { col, offset } => Ext::from_base(trace.get((row + offset as usize) % n, col as usize)),
                Leaf::Fixed { col, offset } => {
                    Ext::from_base(fixed.map_or(F::ZERO, |f| f.get((row + offset as usize) % n, col as usize)))
                }
                Leaf::Aux { col, offset } => aux.get_ext((row + offset as usize) % n, col as usize),
                Leaf::Challenge(i) => challenges[i as usize],
                Leaf::Public(i) => Ext::from_base(publics.get(i as usize).copied().unwrap_or(F::ZERO)),
                Leaf::AuxValue(i) => aux_values[i as usize],
            }
        };
        let values = cs.eval(leaf);
        for (k, (c, v)) in cs.constraints.iter().zip(values).enumerate() {
            let applies = match c.domain {
                ConstraintDomain::Transition => row + 1 < n,
                ConstraintDomain::FirstRow => row == 0,
                ConstraintDomain::LastRow => row + 1 == n,
                ConstraintDomain::AllRows => true,
            };
            if applies && !v.is_zero() {
                let table = air.name().to_string();
                return Ok(Err(Violation { table, constraint: k, domain: c.domain, row }));
            }
        }
    }
    Ok(Ok(aux_values))
}
