//! LogUp over the cubic extension, shared by every table.
//!
//! All buses share two challenges: `z` and `alpha`. A tuple `(v_0..v_k)` on
//! the bus with tag `t` has fingerprint `t + sum_i alpha^(i+1) v_i`; each
//! interaction adds `m / (z - fingerprint)` to its table's running sum
//! (m < 0 sends, m > 0 receives). The bus tag keeps buses apart, so one
//! total per machine checks them all: the sum over every table, plus the
//! part the verifier computes from public data, must be zero.
//!
//! Per interaction the table holds an inverse column `h = 1/(z - fp)`,
//! constrained by `h * (z - fp) = 1` on every row, so the running sum's
//! transition stays degree 2. Aux layout: the inverses, then the sum; the
//! table's final sum is its aux value 0.

use backend_api::{ColMatrix, ConstraintBuilder, ConstraintSystem, Expr, Ext, Layout, Leaf, Node, F};
use rayon::prelude::*;

pub const CH_Z: usize = 0;
pub const CH_ALPHA: usize = 1;
pub const NUM_CHALLENGES: usize = 2;

/// One table's part in one bus, as expressions over one row.
pub struct Interaction {
    pub tag: u64,
    pub values: Vec<Expr>,
    /// Signed multiplicity: negative sends, positive receives.
    pub mult: Expr,
}

impl Interaction {
    /// `z - fingerprint`.
    pub fn denominator(&self) -> Expr {
        let alpha = Expr::challenge(CH_ALPHA);
        let mut fp = Expr::from_u64(self.tag);
        let mut pow = alpha.clone();
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                pow = &pow * &alpha;
            }
            fp = fp + &pow * v;
        }
        Expr::challenge(CH_Z) - fp
    }
}

/// The fingerprint denominator of a tuple on the host (for the verifier's
/// public contributions).
pub fn denominator(challenges: &[Ext], tag: u64, values: &[F]) -> Ext {
    let (z, alpha) = (challenges[CH_Z], challenges[CH_ALPHA]);
    let mut fp = Ext::from_base(F::new(tag));
    let mut pow = alpha;
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            pow *= alpha;
        }
        fp += pow.mul_base(v);
    }
    z - fp
}

/// Adds the LogUp constraints. `at(offset)` builds the table's
/// interactions reading rows at that offset; `aux_base` is the first aux
/// column used (inverses, then the running sum).
pub fn constrain(b: &mut ConstraintBuilder, at: &dyn Fn(usize) -> Vec<Interaction>, aux_base: usize) {
    let now = at(0);
    let next = at(1);
    let k = now.len();
    let sum = aux_base + k;
    for (i, it) in now.iter().enumerate() {
        b.always(Expr::aux(aux_base + i, 0) * it.denominator() - Expr::one());
    }
    let step = |its: &[Interaction], off: usize| {
        its.iter().enumerate().fold(Expr::zero(), |acc, (i, it)| acc + &it.mult * Expr::aux(aux_base + i, off))
    };
    b.when_first_row(Expr::aux(sum, 0) - step(&now, 0));
    b.when_transition(Expr::aux(sum, 1) - Expr::aux(sum, 0) - step(&next, 1));
    b.when_last_row(Expr::aux(sum, 0) - Expr::aux_value(0));
}

/// Evaluates a table's interactions on the host and builds its aux trace.
pub struct Witness {
    /// Per interaction: its values, then its multiplicity, all base-field
    /// expressions, so they evaluate without extension arithmetic.
    eval: ConstraintSystem,
    tags: Vec<u64>,
    arities: Vec<usize>,
}

impl Witness {
    pub fn new(layout: Layout, interactions: Vec<Interaction>) -> Witness {
        let mut b = ConstraintBuilder::new(layout);
        let mut tags = Vec::with_capacity(interactions.len());
        let mut arities = Vec::with_capacity(interactions.len());
        for it in interactions {
            tags.push(it.tag);
            arities.push(it.values.len());
            for v in it.values {
                b.always(v);
            }
            b.always(it.mult);
        }
        Witness { eval: b.build().expect("interactions fit the table's layout"), tags, arities }
    }

    /// Aux columns (inverses, running sum) and the final sum.
    ///
    /// The output columns are allocated once and split into row chunks
    /// processed in parallel, each with reused per-thread scratch: a chunk
    /// evaluates its denominators and multiplicities in one batched pass,
    /// inverts them in place with one field inversion per interaction, and
    /// writes its local running sum; a second pass adds the prefix of the
    /// chunk totals. Field addition is exact, so the chunking does not
    /// change a value.
    pub fn build(&self, main: &ColMatrix, fixed: Option<&ColMatrix>, challenges: &[Ext]) -> (Vec<Vec<Ext>>, Ext) {
        // Small enough that a thread's node buffers stay in L2.
        const CHUNK: usize = 512;
        let n = main.height();
        let k = self.tags.len();
        let (z, alpha) = (challenges[CH_Z], challenges[CH_ALPHA]);
        let max_arity = self.arities.iter().copied().max().unwrap_or(0);
        let alpha_powers: Vec<Ext> = (1..=max_arity as u64).map(|e| alpha.pow(e)).collect();
        let bases: Vec<Ext> = self.tags.iter().map(|&t| z - F::new(t)).collect();
        let mut cols: Vec<Vec<Ext>> = (0..=k).map(|_| vec![Ext::ZERO; n]).collect();
        // Per chunk: its slice of every output column.
        let mut tasks: Vec<Vec<&mut [Ext]>> = (0..n.div_ceil(CHUNK)).map(|_| Vec::with_capacity(k + 1)).collect();
        for col in cols.iter_mut() {
            for (t, c) in tasks.iter_mut().zip(col.chunks_mut(CHUNK)) {
                t.push(c);
            }
        }
        let totals: Vec<Ext> = tasks
            .par_iter_mut()
            .enumerate()
            .map_init(
                || Scratch::new(&self.eval, CHUNK),
                |s, (c, out)| {
                    let start = c * CHUNK;
                    let len = out[0].len();
                    s.eval(&self.eval, main, fixed, start, len);
                    let (invs, sum) = out.split_at_mut(k);
                    // z - (tag + sum_j alpha^(j+1) v_j): base values times
                    // extension powers, three base multiplications a term.
                    let mut next = 0;
                    for (i, den) in invs.iter_mut().enumerate() {
                        den.fill(bases[i]);
                        for pow in &alpha_powers[..self.arities[i]] {
                            for (d, &v) in den.iter_mut().zip(s.value(next, len)) {
                                *d -= pow.mul_base(v);
                            }
                            next += 1;
                        }
                        next += 1;
                        invert_in_place(den, &mut s.prefix);
                    }
                    let mut acc = Ext::ZERO;
                    let mut next = 0;
                    let mults: Vec<&[F]> = (0..k)
                        .map(|i| {
                            next += self.arities[i] + 1;
                            s.value(next - 1, len)
                        })
                        .collect();
                    for (r, o) in sum[0].iter_mut().enumerate() {
                        for (inv, m) in invs.iter().zip(&mults) {
                            acc += inv[r].mul_base(m[r]);
                        }
                        *o = acc;
                    }
                    acc
                },
            )
            .collect();
        let mut offsets = Vec::with_capacity(totals.len());
        let mut total = Ext::ZERO;
        for &t in &totals {
            offsets.push(total);
            total += t;
        }
        cols[k].par_chunks_mut(CHUNK).zip(&offsets).skip(1).for_each(|(c, &off)| c.iter_mut().for_each(|v| *v += off));
        (cols, total)
    }
}

/// Montgomery batch inversion in place; zeros stay zero (as in
/// `batch_inverse`).
fn invert_in_place(vals: &mut [Ext], prefix: &mut Vec<Ext>) {
    prefix.clear();
    let mut acc = Ext::ONE;
    for &v in vals.iter() {
        prefix.push(acc);
        if !v.is_zero() {
            acc *= v;
        }
    }
    let mut inv = acc.inverse().expect("product of non-zero elements is non-zero");
    for (v, &p) in vals.iter_mut().zip(prefix.iter()).rev() {
        if !v.is_zero() {
            let orig = *v;
            *v = p * inv;
            inv *= orig;
        }
    }
}

/// Per-thread buffers for evaluating the interaction expressions over one
/// chunk of rows: one buffer per node, reused across chunks.
struct Scratch {
    nodes: Vec<Vec<F>>,
    /// The node of each constraint (interaction value or multiplicity).
    roots: Vec<usize>,
    prefix: Vec<Ext>,
}

impl Scratch {
    fn new(cs: &ConstraintSystem, rows: usize) -> Scratch {
        Scratch {
            nodes: vec![vec![F::ZERO; rows]; cs.nodes.len()],
            roots: cs.constraints.iter().map(|c| c.node as usize).collect(),
            prefix: Vec::with_capacity(rows),
        }
    }

    /// Evaluates every node over rows `start..start + len`.
    fn eval(&mut self, cs: &ConstraintSystem, main: &ColMatrix, fixed: Option<&ColMatrix>, start: usize, len: usize) {
        let n = main.height();
        let read = |col: &[F], offset: u32, out: &mut [F]| {
            let s = (start + offset as usize) % n;
            let first = len.min(n - s);
            out[..first].copy_from_slice(&col[s..s + first]);
            // Wraps past the last row (len <= n, so at most once).
            out[first..].copy_from_slice(&col[..len - first]);
        };
        for (k, node) in cs.nodes.iter().enumerate() {
            let (done, rest) = self.nodes.split_at_mut(k);
            let out = &mut rest[0][..len];
            let v = |x: u32| &done[x as usize][..len];
            match *node {
                Node::Leaf(leaf) => match leaf {
                    Leaf::Const(c) => out.fill(c),
                    Leaf::Main { col, offset } => read(main.column(col as usize), offset, out),
                    Leaf::Fixed { col, offset } => match fixed {
                        Some(f) => read(f.column(col as usize), offset, out),
                        None => out.fill(F::ZERO),
                    },
                    _ => out.fill(F::ZERO),
                },
                Node::Add(a, b) => out.iter_mut().zip(v(a)).zip(v(b)).for_each(|((o, &x), &y)| *o = x + y),
                Node::Sub(a, b) => out.iter_mut().zip(v(a)).zip(v(b)).for_each(|((o, &x), &y)| *o = x - y),
                Node::Mul(a, b) => out.iter_mut().zip(v(a)).zip(v(b)).for_each(|((o, &x), &y)| *o = x * y),
                Node::Neg(a) => out.iter_mut().zip(v(a)).for_each(|(o, &x)| *o = -x),
            }
        }
    }

    /// Constraint `i`'s values over the chunk last evaluated.
    fn value(&self, i: usize, len: usize) -> &[F] {
        &self.nodes[self.roots[i]][..len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (tag, (column, offset) of each value, multiplicity column).
    type Spec = (u64, Vec<(usize, usize)>, usize);

    /// Row by row from the definition: h = 1/(z - fp), running sum of m h.
    fn naive(main: &ColMatrix, challenges: &[Ext], its: &[Spec]) -> (Vec<Vec<Ext>>, Ext) {
        let n = main.height();
        let mut cols = vec![vec![Ext::ZERO; n]; its.len() + 1];
        let mut acc = Ext::ZERO;
        #[allow(clippy::needless_range_loop)]
        for r in 0..n {
            for (i, (tag, vals, mcol)) in its.iter().enumerate() {
                let v: Vec<F> = vals.iter().map(|&(c, o)| main.column(c)[(r + o) % n]).collect();
                let h = denominator(challenges, *tag, &v).inverse().unwrap();
                cols[i][r] = h;
                acc += h.mul_base(main.column(*mcol)[r] - F::new(3));
            }
            cols[its.len()][r] = acc;
        }
        (cols, acc)
    }

    #[test]
    fn build_matches_the_definition_across_chunk_boundaries() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            F::new(seed >> 1)
        };
        for n in [1usize, 8, 512, 1536, 4096] {
            let main = ColMatrix::new(4, n, (0..4 * n).map(|_| next()).collect());
            let layout = Layout {
                fixed_width: 0,
                main_width: 4,
                aux_width: 3,
                num_challenges: NUM_CHALLENGES,
                num_public: 0,
                num_aux_values: 1,
            };
            let its = [(7u64, vec![(0, 0), (1, 1)], 2), (9, vec![(3, 5), (2, 0), (0, 1)], 1)];
            let interactions = its
                .iter()
                .map(|(tag, vals, mcol)| Interaction {
                    tag: *tag,
                    values: vals.iter().map(|&(c, o)| Expr::main(c, o)).collect(),
                    mult: Expr::main(*mcol, 0) - Expr::from_u64(3),
                })
                .collect();
            let w = Witness::new(layout, interactions);
            let ch = [Ext::new(next(), next(), next()), Ext::new(next(), next(), next())];
            assert_eq!(w.build(&main, None, &ch), naive(&main, &ch, &its), "n = {n}");
        }
    }
}
