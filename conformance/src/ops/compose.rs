//! Constraint composition, on whole LDEs, strided rows and pieces, against the reference.

use super::{rows_of, same_host, trace_logs, Checker, CTX};
use crate::inputs::{rand_ext, rand_exts, rand_felts, rand_matrix, rows_label};
use backend_api::{
    Backend, BackendBase, ColMatrix, ComposeInputs, ComposeOps, ConstraintBuilder, ConstraintSystem, Coset, Expr,
    Layout, Leaf, NextRows, Node, GENERATOR,
};
use backend_cpu::CpuMatrix;
use rand::Rng;
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::Machine;

/// `m` with its rows rotated up by `by`: row i is row (i + by) mod height.
fn rotated(m: &ColMatrix, by: usize) -> ColMatrix {
    let (w, h) = (m.width(), m.height());
    ColMatrix::new(w, h, (0..w).flat_map(|c| (0..h).map(move |i| m.get((i + by) % h, c))).collect())
}

/// The largest row offset the constraints read.
fn max_offset(cs: &ConstraintSystem) -> u32 {
    let offset = |n: &Node| match n {
        Node::Leaf(Leaf::Main { offset, .. } | Leaf::Fixed { offset, .. } | Leaf::Aux { offset, .. }) => *offset,
        _ => 0,
    };
    cs.nodes.iter().map(offset).max().unwrap_or(0)
}

/// The constraint systems compose is checked on: the stark examples' and
/// one using every kind of leaf and every vanishing domain.
pub(crate) fn systems() -> Vec<(String, ConstraintSystem)> {
    let mut out = vec![
        ("fibonacci".to_string(), stark::Air::constraints(&Fibonacci::default()).clone()),
        ("permutation".to_string(), stark::Air::constraints(&Permutation::default()).clone()),
    ];
    for w in [3, 7, 64] {
        out.push((format!("cubic{w}"), stark::Air::constraints(&Cubic::new(w)).clone()));
    }
    let two = TwoTables::default();
    for t in two.tables() {
        out.push((t.name().to_string(), t.constraints().clone()));
    }
    out.push(("mixed".to_string(), mixed_system()));
    out
}

/// Fixed, main and auxiliary columns, offsets 0..2, challenges, public
/// inputs, auxiliary values and all four constraint domains.
pub(crate) fn mixed_system() -> ConstraintSystem {
    let layout =
        Layout { fixed_width: 2, main_width: 3, aux_width: 2, num_challenges: 2, num_public: 2, num_aux_values: 1 };
    let mut b = ConstraintBuilder::new(layout);
    let m = |c, o| Expr::main(c, o);
    b.when_transition(m(0, 1) - m(0, 0) * m(1, 0) * Expr::fixed(0, 0) - Expr::public(0));
    b.when_first_row(Expr::aux(0, 0) * Expr::challenge(0) - m(2, 0));
    b.when_last_row(Expr::aux(1, 0) - Expr::aux_value(0) * Expr::fixed(1, 1));
    b.always(m(1, 0) * m(1, 0) - Expr::challenge(1) * m(2, 2));
    b.when_transition(
        Expr::aux(1, 1) - Expr::aux(1, 0) - Expr::aux(0, 1) * (Expr::challenge(0) - m(0, 1)) + Expr::public(1),
    );
    b.build().expect("valid constraints")
}

impl<B: Backend> Checker<'_, B> {
    pub fn compose(&mut self) {
        for (name, cs) in systems() {
            let l = cs.layout;
            let width = l.fixed_width + l.main_width + 3 * l.aux_width + 3;
            for log_n in trace_logs(self.cfg) {
                for lb in 1..=4u32 {
                    let big = 1usize << (log_n + lb);
                    if big * width > self.lde_cap() {
                        continue;
                    }
                    // On the whole LDE, and on its quotient domains: every
                    // 2^s-th row, read in place.
                    for s in [0, 1, lb].into_iter().filter(|&s| s <= lb).collect::<std::collections::BTreeSet<_>>() {
                        let shape = match s {
                            0 => format!("x{}", 1 << lb),
                            _ => format!("x{}, rows {} apart", 1 << lb, 1 << s),
                        };
                        self.case(format!("compose {name}"), rows_label(1 << log_n), shape, |c, r| {
                            let fixed = (l.fixed_width > 0).then(|| rand_matrix(r, l.fixed_width, big));
                            let main = rand_matrix(r, l.main_width, big);
                            let aux = (l.aux_width > 0).then(|| rand_matrix(r, 3 * l.aux_width, big));
                            let challenges = rand_exts(r, l.num_challenges);
                            let publics = rand_felts(r, l.num_public);
                            let aux_values = rand_exts(r, l.num_aux_values);
                            let alpha = rand_ext(r);
                            let domain = Coset::new(log_n + lb - s, GENERATOR);
                            let (gm, cmm) = c.up(&main)?;
                            let gf = fixed.as_ref().map(|m| c.up(m)).transpose()?;
                            let ga = aux.as_ref().map(|m| c.up(m)).transpose()?;
                            let got = c.b.compose(
                                &CTX,
                                &ComposeInputs {
                                    constraints: &cs,
                                    fixed: gf.as_ref().map(|p| &p.0),
                                    main: &gm,
                                    aux: ga.as_ref().map(|p| &p.0),
                                    log_trace_height: log_n,
                                    domain,
                                    challenges: &challenges,
                                    publics: &publics,
                                    aux_values: &aux_values,
                                    alpha,
                                    next: None,
                                    log_stride: s,
                                },
                            );
                            let want = c.cpu.compose(
                                &CTX,
                                &ComposeInputs {
                                    constraints: &cs,
                                    fixed: gf.as_ref().map(|p| &p.1),
                                    main: &cmm,
                                    aux: ga.as_ref().map(|p| &p.1),
                                    log_trace_height: log_n,
                                    domain,
                                    challenges: &challenges,
                                    publics: &publics,
                                    aux_values: &aux_values,
                                    alpha,
                                    next: None,
                                    log_stride: s,
                                },
                            );
                            c.same_matrix(got, want).map(drop)
                        });
                    }
                    if max_offset(&cs) <= 1 {
                        self.compose_piece(&name, &cs, log_n, lb);
                    }
                }
            }
        }
    }

    /// Composition on a piece of the LDE given its next rows (rows j, j +
    /// 2^L, ... with L past the blowup, as a prover short of memory runs
    /// it) against the reference's composition of the whole LDE.
    fn compose_piece(&mut self, name: &str, cs: &ConstraintSystem, log_n: u32, lb: u32) {
        let Some(extra) = [2u32, 1].into_iter().find(|&e| e <= log_n) else { return };
        let l = cs.layout;
        let (big, log_pieces) = (1usize << (log_n + lb), lb + extra);
        self.case(
            format!("compose {name} on a piece /{}", 1 << log_pieces),
            rows_label(1 << log_n),
            format!("x{}", 1 << lb),
            |c, r| {
                let fixed = (l.fixed_width > 0).then(|| rand_matrix(r, l.fixed_width, big));
                let main = rand_matrix(r, l.main_width, big);
                let aux = (l.aux_width > 0).then(|| rand_matrix(r, 3 * l.aux_width, big));
                let (challenges, publics) = (rand_exts(r, l.num_challenges), rand_felts(r, l.num_public));
                let (aux_values, alpha) = (rand_exts(r, l.num_aux_values), rand_ext(r));
                let domain = Coset::new(log_n + lb, GENERATOR);
                let j = r.gen_range(0..1usize << log_pieces);
                // Row j + k * 2^L's successor is B rows on: rows j + B, ... of
                // the LDE, the last wrapping to the first.
                let piece_of = |m: &ColMatrix, first: usize| c.up(&rows_of(&rotated(m, first), 0, log_pieces));
                let up3 = |first: usize| -> Result<_, String> {
                    Ok((
                        fixed.as_ref().map(|m| piece_of(m, first)).transpose()?,
                        piece_of(&main, first)?,
                        aux.as_ref().map(|m| piece_of(m, first)).transpose()?,
                    ))
                };
                let (f, m, a) = up3(j)?;
                let (nf, nm, na) = up3(j + (1 << lb))?;
                let piece = Coset::new(log_n + lb - log_pieces, domain.shift * domain.generator().pow(j as u64));
                let got = c.b.compose(
                    &CTX,
                    &ComposeInputs {
                        constraints: cs,
                        fixed: f.as_ref().map(|p| &p.0),
                        main: &m.0,
                        aux: a.as_ref().map(|p| &p.0),
                        log_trace_height: log_n,
                        domain: piece,
                        challenges: &challenges,
                        publics: &publics,
                        aux_values: &aux_values,
                        alpha,
                        next: Some(NextRows {
                            fixed: nf.as_ref().map(|p| &p.0),
                            main: &nm.0,
                            aux: na.as_ref().map(|p| &p.0),
                        }),
                        log_stride: 0,
                    },
                );
                let up = |m: &ColMatrix| Ok::<_, String>(CpuMatrix::from_host(m));
                let (wf, wm, wa) = (fixed.as_ref().map(up).transpose()?, up(&main)?, aux.as_ref().map(up).transpose()?);
                let whole = c.cpu.compose(
                    &CTX,
                    &ComposeInputs {
                        constraints: cs,
                        fixed: wf.as_ref(),
                        main: &wm,
                        aux: wa.as_ref(),
                        log_trace_height: log_n,
                        domain,
                        challenges: &challenges,
                        publics: &publics,
                        aux_values: &aux_values,
                        alpha,
                        next: None,
                        log_stride: 0,
                    },
                );
                let whole =
                    c.cpu.download(&CTX, &whole.map_err(|e| format!("reference: {e}"))?).map_err(|e| e.to_string())?;
                let got = c.b.download(&CTX, &got.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
                same_host(&got, &rows_of(&whole, j, log_pieces))
            },
        );
    }
}
