//! The reference LogUp auxiliary trace (see `backend_api::logup::LogUp`).
//!
//! Rows are split into chunks processed in parallel with per-thread
//! scratch: a chunk evaluates its values and multiplicities in one batched
//! pass per expression node, inverts each interaction's denominators with
//! one field inversion (Montgomery's trick), and writes its local running
//! sum; a second pass adds the prefix of the chunk totals. Field addition
//! is exact, so the chunking does not change a value.

use crate::{try_zeroed, AllocFailed, CpuMatrix};
use backend_api::{ConstraintSystem, DeviceMatrix, Ext, Leaf, LogUpInputs, Node, F};
use rayon::prelude::*;

/// Small enough that a thread's node buffers stay in L2.
const CHUNK: usize = 512;

pub(crate) fn logup_aux(i: &LogUpInputs<CpuMatrix>) -> Result<(CpuMatrix, Ext), AllocFailed> {
    let spec = i.logup;
    let n = i.main.height();
    let k = spec.interactions();
    let width = 3 * spec.aux_width();
    let alpha_powers: Vec<Ext> = (1..=spec.max_arity() as u64).map(|e| i.alpha.pow(e)).collect();
    let bases: Vec<Ext> = spec.tags.iter().map(|&t| i.z - F::new(t)).collect();
    let mut data = try_zeroed(width * n)?;
    // Per chunk: its slice of every output base column.
    let mut tasks: Vec<Vec<&mut [F]>> = (0..n.div_ceil(CHUNK)).map(|_| Vec::with_capacity(width)).collect();
    for col in data.chunks_mut(n) {
        for (t, c) in tasks.iter_mut().zip(col.chunks_mut(CHUNK)) {
            t.push(c);
        }
    }
    let totals: Vec<Ext> = tasks
        .par_iter_mut()
        .enumerate()
        .map_init(
            || Scratch::new(&spec.eval, k),
            |s, (c, out)| {
                let start = c * CHUNK;
                let len = out[0].len();
                s.eval(&spec.eval, i, start, len);
                // z - (tag + sum_j alpha^(j+1) v_j): base values times
                // extension powers, three base multiplications a term.
                for (it, base) in bases.iter().enumerate() {
                    let first = spec.first_expr(it);
                    let mut den = std::mem::take(&mut s.dens[it]);
                    den.clear();
                    den.resize(len, *base);
                    for (j, pow) in alpha_powers[..spec.arities[it]].iter().enumerate() {
                        for (d, &v) in den.iter_mut().zip(s.value(first + j, len)) {
                            *d -= pow.mul_base(v);
                        }
                    }
                    invert_in_place(&mut den, &mut s.prefix);
                    for (coord, o) in out[3 * it..3 * it + 3].iter_mut().enumerate() {
                        for (o, h) in o.iter_mut().zip(&den) {
                            *o = h.0[coord];
                        }
                    }
                    s.dens[it] = den;
                }
                let mults: Vec<&[F]> = (0..k).map(|it| s.value(spec.first_expr(it) + spec.arities[it], len)).collect();
                let mut acc = Ext::ZERO;
                let (sa, rest) = out[3 * k..].split_at_mut(1);
                let (sb, sc) = rest.split_at_mut(1);
                for r in 0..len {
                    for (h, m) in s.dens.iter().zip(&mults) {
                        acc += h[r].mul_base(m[r]);
                    }
                    (sa[0][r], sb[0][r], sc[0][r]) = (acc.0[0], acc.0[1], acc.0[2]);
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
    for (coord, col) in data[3 * k * n..].chunks_mut(n).enumerate() {
        col.par_chunks_mut(CHUNK).zip(&offsets).skip(1).for_each(|(c, off)| {
            let o = off.0[coord];
            c.iter_mut().for_each(|v| *v += o);
        });
    }
    Ok((CpuMatrix::from_data(width, n, data), total))
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

/// Per-thread buffers for one chunk of rows: one buffer per expression
/// node and per interaction's inverses, reused across chunks.
struct Scratch {
    nodes: Vec<Vec<F>>,
    /// The node of each expression (interaction value or multiplicity).
    roots: Vec<usize>,
    dens: Vec<Vec<Ext>>,
    prefix: Vec<Ext>,
}

impl Scratch {
    fn new(cs: &ConstraintSystem, interactions: usize) -> Scratch {
        Scratch {
            nodes: vec![vec![F::ZERO; CHUNK]; cs.nodes.len()],
            roots: cs.constraints.iter().map(|c| c.node as usize).collect(),
            dens: vec![Vec::with_capacity(CHUNK); interactions],
            prefix: Vec::with_capacity(CHUNK),
        }
    }

    /// Evaluates every node over rows `start..start + len`.
    fn eval(&mut self, cs: &ConstraintSystem, i: &LogUpInputs<CpuMatrix>, start: usize, len: usize) {
        let n = i.main.height();
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
                    Leaf::Main { col, offset } => read(i.main.column(col as usize), offset, out),
                    Leaf::Fixed { col, offset } => match i.fixed {
                        Some(f) => read(f.column(col as usize), offset, out),
                        None => out.fill(F::ZERO),
                    },
                    // Excluded by `LogUp::check`.
                    _ => out.fill(F::ZERO),
                },
                Node::Add(a, b) => out.iter_mut().zip(v(a)).zip(v(b)).for_each(|((o, &x), &y)| *o = x + y),
                Node::Sub(a, b) => out.iter_mut().zip(v(a)).zip(v(b)).for_each(|((o, &x), &y)| *o = x - y),
                Node::Mul(a, b) => out.iter_mut().zip(v(a)).zip(v(b)).for_each(|((o, &x), &y)| *o = x * y),
                Node::Neg(a) => out.iter_mut().zip(v(a)).for_each(|(o, &x)| *o = -x),
            }
        }
    }

    /// Expression `e`'s values over the chunk last evaluated.
    fn value(&self, e: usize, len: usize) -> &[F] {
        &self.nodes[self.roots[e]][..len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::logup::{denominator, Interaction, LogUp};
    use backend_api::{ColMatrix, Expr, Layout};

    /// (tag, (column, offset) of each value, multiplicity column).
    type Spec = (u64, Vec<(usize, usize)>, usize);

    /// Row by row from the definition: h = 1/(z - fp), running sum of m h.
    fn naive(main: &ColMatrix, (z, alpha): (Ext, Ext), its: &[Spec]) -> (ColMatrix, Ext) {
        let n = main.height();
        let mut cols = vec![vec![Ext::ZERO; n]; its.len() + 1];
        let mut acc = Ext::ZERO;
        #[allow(clippy::needless_range_loop)]
        for r in 0..n {
            for (i, (tag, vals, mcol)) in its.iter().enumerate() {
                let v: Vec<F> = vals.iter().map(|&(c, o)| main.column(c)[(r + o) % n]).collect();
                let h = denominator(z, alpha, *tag, &v).inverse().unwrap();
                cols[i][r] = h;
                acc += h.mul_base(main.column(*mcol)[r] - F::new(3));
            }
            cols[its.len()][r] = acc;
        }
        (ColMatrix::from_ext_columns(&cols), acc)
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
                num_challenges: 2,
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
            let logup = LogUp::new(layout, interactions, 0, 1).unwrap();
            let (z, alpha) = (Ext::new(next(), next(), next()), Ext::new(next(), next(), next()));
            let main_c = CpuMatrix::from_host(&main);
            let (got, sum) = logup_aux(&LogUpInputs { logup: &logup, main: &main_c, fixed: None, z, alpha }).unwrap();
            assert_eq!((got.to_host(), sum), naive(&main, (z, alpha), &its), "n = {n}");
        }
    }
}
