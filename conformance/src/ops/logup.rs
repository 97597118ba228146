//! LogUp auxiliary columns and final sums, against the reference.

use super::{trace_logs, Checker, CTX};
use crate::inputs::{rand_ext, rand_f, rand_matrix, rows_label};
use backend_api::{Backend, ColMatrix, Expr, Interaction, Layout, LogUp, LogUpInputs, LogUpOps, F};
use stark::examples::{Permutation, TwoTables};
use stark::Machine;

/// The LogUp interactions the LogUp build is checked on: the stark
/// examples', the VM tables' and one reading fixed and main columns at
/// offsets 0..3 with 0 to 4 values and products in values and
/// multiplicities.
pub(crate) fn logups() -> Vec<(String, LogUp)> {
    let mut out = Vec::new();
    let perm = Permutation::default();
    let two = TwoTables::default();
    let program = vm::assemble(vm::examples::ALL[0].1).expect("example assembles");
    let machine = vm::VmMachine::new(&program, &[], &[]);
    let tables: Vec<&dyn stark::Air> = perm.tables().into_iter().chain(two.tables()).chain(machine.tables()).collect();
    for t in tables {
        out.push((t.name().to_string(), t.logup().expect("a bus table").clone()));
    }
    let layout = Layout { fixed_width: 2, main_width: 4, num_challenges: 2, ..Layout::default() };
    let m = |c, o| Expr::main(c, o);
    let interactions = vec![
        Interaction { tag: 5, values: vec![], mult: m(0, 0) },
        Interaction { tag: 6, values: vec![m(1, 0) * Expr::fixed(0, 1), m(2, 3)], mult: -(m(3, 0) * m(3, 1)) },
        Interaction {
            tag: 7,
            values: vec![Expr::fixed(1, 0), m(0, 2), m(1, 1) - m(2, 0), Expr::from_u64(9)],
            mult: Expr::fixed(0, 0) + Expr::one(),
        },
    ];
    out.push(("mixed".to_string(), LogUp::new(layout, interactions, 1, 0).expect("valid interactions")));
    out
}

impl<B: Backend> Checker<'_, B> {
    pub fn logup(&mut self) {
        for (name, logup) in logups() {
            let l = logup.eval.layout;
            let width = l.fixed_width + l.main_width + 3 * logup.aux_width();
            for log_n in trace_logs(self.cfg).into_iter().chain([self.cfg.max_log]) {
                let n = 1usize << log_n;
                if n * width > self.lde_cap() {
                    continue;
                }
                self.case(format!("logup {name}"), rows_label(n), format!("{}", logup.aux_width()), |c, r| {
                    let main = rand_matrix(r, l.main_width, n);
                    let fixed = (l.fixed_width > 0).then(|| rand_matrix(r, l.fixed_width, n));
                    c.same_logup(&logup, &main, fixed.as_ref(), rand_ext(r), rand_ext(r))
                });
            }
        }
        // A denominator that vanishes on some rows: its inverse is 0 there.
        let layout = Layout { main_width: 2, num_challenges: 2, ..Layout::default() };
        let its = vec![
            Interaction { tag: 3, values: vec![Expr::main(0, 0)], mult: Expr::main(1, 0) },
            Interaction { tag: 4, values: vec![Expr::main(1, 1)], mult: Expr::one() },
        ];
        let logup = LogUp::new(layout, its, 0, 1).expect("valid interactions");
        for log_n in [0, 3, 11] {
            let n = 1usize << log_n;
            self.case("logup zero denominator", rows_label(n), "3", |c, r| {
                let mut main = rand_matrix(r, 2, n);
                let alpha = rand_ext(r);
                let v = rand_f(r);
                for row in (0..n).step_by(3) {
                    main.set(row, 0, v);
                }
                let z = alpha.mul_base(v) + F::new(3);
                c.same_logup(&logup, &main, None, z, alpha)
            });
        }
    }

    fn same_logup(
        &self,
        logup: &LogUp,
        main: &ColMatrix,
        fixed: Option<&ColMatrix>,
        z: backend_api::Ext,
        alpha: backend_api::Ext,
    ) -> Result<(), String> {
        let (gm, cm) = self.up(main)?;
        let gf = fixed.map(|m| self.up(m)).transpose()?;
        let got = self.b.logup_aux(&CTX, &LogUpInputs { logup, main: &gm, fixed: gf.as_ref().map(|p| &p.0), z, alpha });
        let want =
            self.cpu.logup_aux(&CTX, &LogUpInputs { logup, main: &cm, fixed: gf.as_ref().map(|p| &p.1), z, alpha });
        let (got, want) = match (got, want) {
            (Ok((g, gs)), Ok((w, ws))) => {
                if gs != ws {
                    return Err(format!("final sum {gs:?}, reference {ws:?}"));
                }
                (Ok(g), Ok(w))
            }
            (g, w) => (g.map(|p| p.0), w.map(|p| p.0)),
        };
        self.same_matrix(got, want).map(drop)
    }
}
