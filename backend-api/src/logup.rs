//! LogUp buses: a table's interactions as expressions over one row, the
//! constraints that tie them to its auxiliary columns, and the definition of
//! those columns, which every backend builds through
//! [`crate::LogUpOps::logup_aux`].
//!
//! A tuple `(v_0..v_k)` on the bus with tag `t` has fingerprint
//! `t + sum_i alpha^(i+1) v_i`; each interaction adds `m / (z - fingerprint)`
//! to its table's running sum (by convention m < 0 sends, m > 0 receives).
//! The tag keeps buses apart, so one total per machine checks them all.
//!
//! Per interaction the table holds an inverse column `h = 1/(z - fp)`,
//! constrained by `h * (z - fp) = 1` on every row, so the running sum's
//! transition stays degree 2. Aux layout: the inverses, then the running
//! sum; the table's final sum is its aux value 0.

use crate::ext::Ext;
use crate::field::F;
use crate::ir::{ConstraintBuilder, ConstraintSystem, Expr, IrError, Layout, Leaf, Node};

/// One table's part in one bus, as expressions over one row.
#[derive(Clone, Debug)]
pub struct Interaction {
    pub tag: u64,
    pub values: Vec<Expr>,
    /// Signed multiplicity: negative sends, positive receives.
    pub mult: Expr,
}

impl Interaction {
    /// `z - fingerprint`, with `z` and `alpha` the challenges at those
    /// indices.
    pub fn denominator(&self, z: usize, alpha: usize) -> Expr {
        let alpha = Expr::challenge(alpha);
        let mut fp = Expr::from_u64(self.tag);
        let mut pow = alpha.clone();
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                pow = &pow * &alpha;
            }
            fp = fp + &pow * v;
        }
        Expr::challenge(z) - fp
    }
}

/// `z - fingerprint` of a tuple on the host (the verifier's public
/// contributions, and the reference).
pub fn denominator(z: Ext, alpha: Ext, tag: u64, values: &[F]) -> Ext {
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

/// Adds a table's LogUp constraints. `at(offset)` builds its interactions
/// reading rows at that offset; the aux columns are the inverses, then the
/// running sum, and aux value 0 is the final sum.
pub fn constrain(b: &mut ConstraintBuilder, at: &dyn Fn(usize) -> Vec<Interaction>, z: usize, alpha: usize) {
    let now = at(0);
    let next = at(1);
    let sum = now.len();
    for (i, it) in now.iter().enumerate() {
        b.always(Expr::aux(i, 0) * it.denominator(z, alpha) - Expr::one());
    }
    let step = |its: &[Interaction], off: usize| {
        its.iter().enumerate().fold(Expr::zero(), |acc, (i, it)| acc + &it.mult * Expr::aux(i, off))
    };
    b.when_first_row(Expr::aux(sum, 0) - step(&now, 0));
    b.when_transition(Expr::aux(sum, 1) - Expr::aux(sum, 0) - step(&next, 1));
    b.when_last_row(Expr::aux(sum, 0) - Expr::aux_value(0));
}

/// A table's interactions compiled for the witness build.
///
/// `eval` holds, per interaction, its values and then its multiplicity as
/// base-field expressions over the fixed and main columns (one constraint
/// each, in that order). The auxiliary trace it defines has
/// [`LogUp::aux_width`] extension columns over the trace's rows `r`:
/// - column `i < k`: `h_i(r) = 1 / (z - tag_i - sum_j alpha^(j+1) v_ij(r))`,
///   or 0 where that denominator is 0;
/// - column `k`: `s(r) = sum_{r' <= r} sum_i m_i(r') h_i(r')`;
///
/// and the final sum `s(n - 1)`. Rows read at an offset wrap around.
#[derive(Clone, Debug)]
pub struct LogUp {
    pub eval: ConstraintSystem,
    pub tags: Vec<u64>,
    pub arities: Vec<usize>,
    /// Indices of the challenges `z` and `alpha`.
    pub z: usize,
    pub alpha: usize,
}

impl LogUp {
    /// Compiles `interactions` over a table of `layout` (its fixed and main
    /// widths bound the columns they may read).
    pub fn new(layout: Layout, interactions: Vec<Interaction>, z: usize, alpha: usize) -> Result<LogUp, IrError> {
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
        let logup = LogUp { eval: b.build()?, tags, arities, z, alpha };
        logup.check().map_err(IrError::Interaction)?;
        Ok(logup)
    }

    /// Number of interactions.
    pub fn interactions(&self) -> usize {
        self.tags.len()
    }

    /// Extension columns of the auxiliary trace: the inverses and the sum.
    pub fn aux_width(&self) -> usize {
        self.tags.len() + 1
    }

    /// The largest number of values an interaction carries.
    pub fn max_arity(&self) -> usize {
        self.arities.iter().copied().max().unwrap_or(0)
    }

    /// The consistency a backend relies on: a well-formed DAG, one
    /// expression per value and multiplicity, and only constants, fixed and
    /// main columns as leaves.
    pub fn check(&self) -> Result<(), String> {
        self.eval.check_structure().map_err(|e| e.to_string())?;
        if self.tags.is_empty() || self.arities.len() != self.tags.len() {
            return Err(format!("{} tags and {} arities", self.tags.len(), self.arities.len()));
        }
        let exprs: usize = self.arities.iter().map(|a| a + 1).sum();
        if exprs != self.eval.constraints.len() {
            return Err(format!("{} expressions for {} values and multiplicities", self.eval.constraints.len(), exprs));
        }
        for n in &self.eval.nodes {
            if let Node::Leaf(leaf) = n {
                if !matches!(leaf, Leaf::Const(_) | Leaf::Main { .. } | Leaf::Fixed { .. }) {
                    return Err(format!("interactions may read only constants, fixed and main columns, not {leaf:?}"));
                }
            }
        }
        Ok(())
    }

    /// Index in `eval.constraints` of interaction `i`'s first value; its
    /// multiplicity follows its values.
    pub fn first_expr(&self, i: usize) -> usize {
        self.arities[..i].iter().map(|a| a + 1).sum()
    }
}
