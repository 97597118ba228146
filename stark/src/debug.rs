//! A row-by-row constraint checker for AIR authors: finds the first
//! constraint a trace violates, by table, constraint and row, without
//! proving.

use crate::air::{check_aux_layout, host_aux, Machine};
use backend_api::{Backend, ColMatrix, ConstraintDomain, Ext, Leaf, F};

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
    // A simple deterministic generator: challenges only need to be generic.
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        F::new(state >> 1)
    };
    let challenges: Vec<Ext> = (0..machine.num_challenges()).map(|_| Ext::new(next(), next(), next())).collect();
    let mut all_values = vec![];
    for (air, trace) in tables.iter().zip(traces) {
        let cs = air.constraints();
        let n = trace.height();
        check_aux_layout(*air, challenges.len()).map_err(|e| format!("table {}: {e}", air.name()))?;
        let (aux, aux_values) =
            host_aux(backend, *air, trace, &challenges).map_err(|e| format!("table {}: {e}", air.name()))?;
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
                    return Err(format!("table {}: constraint {k} ({:?}) fails at row {row}", air.name(), c.domain));
                }
            }
        }
        all_values.push(aux_values);
    }
    machine.check_aux_values(publics, &challenges, &all_values)
}
