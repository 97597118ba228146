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
    /// Per interaction: its denominator, then its multiplicity.
    eval: ConstraintSystem,
    count: usize,
}

impl Witness {
    pub fn new(layout: Layout, interactions: Vec<Interaction>) -> Witness {
        let count = interactions.len();
        let mut b = ConstraintBuilder::new(layout);
        for it in interactions {
            b.always(it.denominator());
            b.always(it.mult);
        }
        Witness { eval: b.build().expect("interactions fit the table's layout"), count }
    }

    /// Aux columns (inverses, running sum) and the final sum.
    pub fn build(&self, main: &ColMatrix, fixed: Option<&ColMatrix>, challenges: &[Ext]) -> (Vec<Vec<Ext>>, Ext) {
        let n = main.height();
        let k = self.count;
        // Row-major denominators and multiplicities.
        let rows: Vec<Vec<Ext>> = (0..n)
            .into_par_iter()
            .map(|r| {
                self.eval.eval(|leaf| match *leaf {
                    Leaf::Const(c) => Ext::from_base(c),
                    Leaf::Main { col, .. } => Ext::from_base(main.get(r, col as usize)),
                    Leaf::Fixed { col, .. } => Ext::from_base(fixed.map_or(F::ZERO, |f| f.get(r, col as usize))),
                    Leaf::Challenge(i) => challenges[i as usize],
                    _ => Ext::ZERO,
                })
            })
            .collect();
        let mut cols = Vec::with_capacity(k + 1);
        for i in 0..k {
            let dens: Vec<Ext> = rows.iter().map(|v| v[2 * i]).collect();
            cols.push(batch_inverse(&dens));
        }
        let mut sum = Vec::with_capacity(n);
        let mut acc = Ext::ZERO;
        for (r, v) in rows.iter().enumerate() {
            for (i, col) in cols.iter().enumerate() {
                acc += v[2 * i + 1] * col[r];
            }
            sum.push(acc);
        }
        cols.push(sum);
        (cols, acc)
    }
}
