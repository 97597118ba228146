//! A direct constraint checker: builds every table's aux trace with given
//! challenges and evaluates every constraint on every row, then the
//! machine's cross-table check. For tests and debugging; the prover does
//! not need it.

use backend_api::{ColMatrix, ConstraintDomain, Ext, Leaf, F};
use backend_cpu::CpuBackend;
use rayon::prelude::*;
use stark::Machine;

/// Challenges derived from a seed (no randomness source needed).
pub fn challenges(seed: u64, count: usize) -> Vec<Ext> {
    let mut h = blake3::Hasher::new();
    h.update(b"kiln-vm-check");
    h.update(&seed.to_le_bytes());
    let mut xof = h.finalize_xof();
    (0..count)
        .map(|_| {
            let mut b = [0u8; 24];
            xof.fill(&mut b);
            let c = |i: usize| F::new(u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes")));
            Ext::new(c(0), c(1), c(2))
        })
        .collect()
}

/// Checks `traces` (one per table, machine order) against every
/// constraint and the bus balance. The error names the table, constraint
/// index and row of the first violation found.
pub fn check<M: Machine + ?Sized>(machine: &M, traces: &[ColMatrix], publics: &[F], seed: u64) -> Result<(), String> {
    let tables = machine.tables();
    if tables.len() != traces.len() {
        return Err(format!("{} tables, {} traces", tables.len(), traces.len()));
    }
    let ch = challenges(seed, machine.num_challenges());
    let mut all_values = Vec::new();
    for (air, main) in tables.iter().zip(traces) {
        let cs = air.constraints();
        let name = air.name();
        let n = main.height();
        if !n.is_power_of_two() || main.width() != cs.layout.main_width {
            return Err(format!("table {name}: trace is {}x{}", n, main.width()));
        }
        let fixed = air.fixed_trace();
        if let Some(f) = fixed {
            if f.height() != n {
                return Err(format!("table {name}: fixed height {} != main height {n}", f.height()));
            }
        }
        stark::check_aux_layout(*air, ch.len()).map_err(|e| format!("table {name}: {e}"))?;
        let (aux_m, aux_values) =
            stark::host_aux(&CpuBackend::new(), *air, main, &ch).map_err(|e| format!("table {name}: {e}"))?;
        let bad = (0..n).into_par_iter().find_map_first(|r| {
            let vals = cs.eval(|leaf| match *leaf {
                Leaf::Const(c) => Ext::from_base(c),
                Leaf::Main { col, offset } => Ext::from_base(main.get((r + offset as usize) % n, col as usize)),
                Leaf::Fixed { col, offset } => {
                    Ext::from_base(fixed.map_or(F::ZERO, |f| f.get((r + offset as usize) % n, col as usize)))
                }
                Leaf::Aux { col, offset } => aux_m.get_ext((r + offset as usize) % n, col as usize),
                Leaf::Challenge(i) => ch[i as usize],
                Leaf::Public(i) => Ext::from_base(publics[i as usize]),
                Leaf::AuxValue(i) => aux_values[i as usize],
            });
            cs.constraints.iter().zip(vals).enumerate().find_map(|(i, (c, v))| {
                let applies = match c.domain {
                    ConstraintDomain::Transition => r + 1 < n,
                    ConstraintDomain::FirstRow => r == 0,
                    ConstraintDomain::LastRow => r + 1 == n,
                    ConstraintDomain::AllRows => true,
                };
                (applies && !v.is_zero())
                    .then(|| format!("table {name}: constraint {i} ({:?}) fails at row {r}", c.domain))
            })
        });
        if let Some(e) = bad {
            return Err(e);
        }
        all_values.push(aux_values);
    }
    machine.check_aux_values(publics, &ch, &all_values)
}
