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

use backend_api::{batch_inverse, ColMatrix, ConstraintBuilder, ConstraintSystem, Expr, Ext, Layout, Leaf, F};
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
    /// Rows are split into chunks processed in parallel: each chunk
    /// evaluates its denominators and multiplicities in one batched pass,
    /// inverts them with one field inversion, and sums locally; a prefix
    /// over the chunk totals then fixes up the running sum.
    pub fn build(&self, main: &ColMatrix, fixed: Option<&ColMatrix>, challenges: &[Ext]) -> (Vec<Vec<Ext>>, Ext) {
        const CHUNK: usize = 2048;
        let n = main.height();
        let k = self.tags.len();
        let (z, alpha) = (challenges[CH_Z], challenges[CH_ALPHA]);
        let max_arity = self.arities.iter().copied().max().unwrap_or(0);
        let alpha_powers: Vec<Ext> = (1..=max_arity as u64).map(|e| alpha.pow(e)).collect();
        let read = |col: &[F], start: usize, offset: u32, out: &mut [F]| {
            for (j, o) in out.iter_mut().enumerate() {
                *o = col[(start + j + offset as usize) % n];
            }
        };
        // Per chunk: the k inverse columns, the local running sum, its total.
        let chunks: Vec<(Vec<Vec<Ext>>, Vec<Ext>, Ext)> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let start = c * CHUNK;
                let len = CHUNK.min(n - start);
                let vals = self.eval.eval_batch::<F, _>(len, |leaf, out| match *leaf {
                    Leaf::Const(v) => out.fill(v),
                    Leaf::Main { col, offset } => read(main.column(col as usize), start, offset, out),
                    Leaf::Fixed { col, offset } => match fixed {
                        Some(f) => read(f.column(col as usize), start, offset, out),
                        None => out.fill(F::ZERO),
                    },
                    _ => out.fill(F::ZERO),
                });
                // z - (tag + sum_j alpha^(j+1) v_j): base values times
                // extension powers, three base multiplications a term.
                let mut next = 0;
                let mut mults = Vec::with_capacity(k);
                let invs: Vec<Vec<Ext>> = (0..k)
                    .map(|i| {
                        let mut den = vec![z - F::new(self.tags[i]); len];
                        for pow in &alpha_powers[..self.arities[i]] {
                            for (d, &v) in den.iter_mut().zip(&vals[next]) {
                                *d -= pow.mul_base(v);
                            }
                            next += 1;
                        }
                        mults.push(&vals[next]);
                        next += 1;
                        batch_inverse(&den)
                    })
                    .collect();
                let mut acc = Ext::ZERO;
                let sums: Vec<Ext> = (0..len)
                    .map(|r| {
                        for i in 0..k {
                            acc += invs[i][r].mul_base(mults[i][r]);
                        }
                        acc
                    })
                    .collect();
                (invs, sums, acc)
            })
            .collect();
        let mut offsets = Vec::with_capacity(chunks.len());
        let mut total = Ext::ZERO;
        for (_, _, t) in &chunks {
            offsets.push(total);
            total += *t;
        }
        let mut cols: Vec<Vec<Ext>> = (0..k)
            .into_par_iter()
            .map(|i| chunks.iter().flat_map(|(invs, _, _)| invs[i].iter().copied()).collect())
            .collect();
        let sum: Vec<Ext> = chunks
            .par_iter()
            .zip(&offsets)
            .flat_map_iter(|((_, sums, _), &off)| sums.iter().map(move |&s| s + off))
            .collect();
        cols.push(sum);
        (cols, total)
    }
}
