//! Out-of-domain evaluation (barycentric) and DEEP quotients.

use crate::simd::{dot, mul_add_const};
use crate::CpuMatrix;
use backend_api::{Coset, DeepPoint, Ext, Field, F};
use rayon::prelude::*;

const ROWS: usize = 1024;

/// In-place Montgomery batch inversion without allocation; every value
/// must be non-zero (callers exclude domain points first).
pub(crate) fn batch_invert<T: Field>(vals: &mut [T], scratch: &mut Vec<T>) {
    scratch.clear();
    let mut acc = T::ONE;
    for &v in vals.iter() {
        scratch.push(acc);
        acc *= v;
    }
    let mut inv = acc.inverse().unwrap_or(T::ZERO);
    for (v, &prefix) in vals.iter_mut().zip(scratch.iter()).rev() {
        let orig = *v;
        *v = prefix * inv;
        inv *= orig;
    }
}

/// out[i] = 1 / (xs[i] - z), where no xs[i] equals z. Through the norm:
/// for a = x - z, a * adj(a) = N(a) lies in the base field, and a1, a2 do
/// not depend on x, so adj(a) and N(a) cost six base multiplications and
/// only the norms go through the batch inversion (base-field products, not
/// extension ones).
pub(crate) fn inverse_differences(xs: &[F], z: Ext, out: &mut [Ext], norms: &mut Vec<F>, scratch: &mut Vec<F>) {
    use backend_api::ext::W;
    let [z0, z1, z2] = z.0;
    let (a1, a2) = (-z1, -z2);
    let (w_a1_a2, w_a2_a2, a1_a1) = (W * a1 * a2, W * a2.square(), a1.square());
    norms.clear();
    for (o, &x) in out.iter_mut().zip(xs) {
        let a0 = x - z0;
        let t0 = a0.square() - w_a1_a2;
        let t1 = w_a2_a2 - a0 * a1;
        let t2 = a1_a1 - a0 * a2;
        norms.push(a0 * t0 + W * (a2 * t1 + a1 * t2));
        *o = Ext([t0, t1, t2]);
    }
    batch_invert(norms, scratch);
    for (o, &inv) in out.iter_mut().zip(norms.iter()) {
        *o = o.mul_base(inv);
    }
}

/// The domain point x_i = shift * g^i for i = start.., as a running product.
fn fill_points(xs: &mut [F], domain: &Coset, start: usize) {
    let g = domain.generator();
    let mut x = domain.shift * g.pow(start as u64);
    for v in xs {
        *v = x;
        x *= g;
    }
}

/// result[p][c]: column c's polynomial at points[p], point i of `domain`
/// being row i << log_stride of `m` (inputs validated).
pub(crate) fn evaluate_at(m: &CpuMatrix, domain: &Coset, log_stride: u32, points: &[Ext]) -> Vec<Vec<Ext>> {
    let big = domain.size();
    let w = m.width;
    let s_n = domain.shift.pow(big as u64);
    // (N s^N)^-1; N and s are non-zero.
    let denom_inv = (F::new(big as u64) * s_n).inverse().unwrap_or(F::ZERO);
    let mut result: Vec<Option<Vec<Ext>>> = vec![None; points.len()];
    let mut off: Vec<(usize, Ext)> = Vec::new();
    for (p, &z) in points.iter().enumerate() {
        match domain.index_of(z) {
            Some(i) => result[p] = Some((0..w).map(|c| Ext::from_base(m.get(i << log_stride, c))).collect()),
            None => off.push((p, z)),
        }
    }
    if !off.is_empty() {
        let np = off.len();
        let chunk = ROWS.min(big);
        // Partial sums sum_i f_c(x_i) x_i / (z - x_i), point-major.
        let sums = (0..big / chunk)
            .into_par_iter()
            .map(|ci| {
                let r0 = ci * chunk;
                let mut xs = vec![F::ZERO; chunk];
                fill_points(&mut xs, domain, r0);
                // 1 / (x - z) for each point.
                let mut weights = vec![Ext::ZERO; np * chunk];
                let (mut norms, mut scratch) = (Vec::with_capacity(chunk), Vec::with_capacity(chunk));
                for (k, &(_, z)) in off.iter().enumerate() {
                    inverse_differences(&xs, z, &mut weights[k * chunk..(k + 1) * chunk], &mut norms, &mut scratch);
                }
                // The weights x/(z - x) = -x/(x - z) by coordinate, so each
                // column's sum is three base-field dot products.
                let mut coords = vec![F::ZERO; 3 * np * chunk];
                for (k, wk) in weights.chunks(chunk).enumerate() {
                    for (i, (wt, &x)) in wk.iter().zip(&xs).enumerate() {
                        let e = wt.mul_base(-x);
                        for j in 0..3 {
                            coords[(3 * k + j) * chunk + i] = e.0[j];
                        }
                    }
                }
                let mut partial = vec![Ext::ZERO; np * w];
                let mut strided = vec![F::ZERO; if log_stride > 0 { chunk } else { 0 }];
                for c in 0..w {
                    let col = match log_stride {
                        0 => &m.column(c)[r0..r0 + chunk],
                        s => {
                            let rows = m.column(c)[r0 << s..].iter().step_by(1 << s);
                            strided.iter_mut().zip(rows).for_each(|(d, &v)| *d = v);
                            &strided[..]
                        }
                    };
                    for k in 0..np {
                        let wk = |j: usize| &coords[(3 * k + j) * chunk..(3 * k + j + 1) * chunk];
                        partial[k * w + c] = Ext([dot(wk(0), col), dot(wk(1), col), dot(wk(2), col)]);
                    }
                }
                partial
            })
            .reduce(
                || vec![Ext::ZERO; np * w],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += *y);
                    a
                },
            );
        for (k, &(p, z)) in off.iter().enumerate() {
            let factor = (z.pow(big as u64) - s_n).mul_base(denom_inv);
            result[p] = Some(sums[k * w..(k + 1) * w].iter().map(|&s| s * factor).collect());
        }
    }
    result.into_iter().map(Option::unwrap_or_default).collect()
}

/// Each column's coefficients (natural order) at each point,
/// `result[p][c]`. Rows are taken in chunks: a chunk from row r0 adds
/// z^r0 * sum_i c_(r0+i) z^i, and z^i (i below the chunk, shared by every
/// chunk) by coordinate makes each column's sum three base-field dot
/// products, as in `evaluate_at`.
pub(crate) fn evaluate_coeffs(m: &CpuMatrix, points: &[Ext]) -> Vec<Vec<Ext>> {
    let (n, w, np) = (m.height, m.width, points.len());
    let chunk = ROWS.min(n);
    let mut coords = vec![F::ZERO; 3 * np * chunk];
    for (k, &z) in points.iter().enumerate() {
        let mut power = Ext::ONE;
        for i in 0..chunk {
            for j in 0..3 {
                coords[(3 * k + j) * chunk + i] = power.0[j];
            }
            power *= z;
        }
    }
    let sums = (0..n / chunk)
        .into_par_iter()
        .map(|ci| {
            let r0 = ci * chunk;
            let starts: Vec<Ext> = points.iter().map(|z| z.pow(r0 as u64)).collect();
            let mut partial = vec![Ext::ZERO; np * w];
            for c in 0..w {
                let col = &m.column(c)[r0..r0 + chunk];
                for (k, &start) in starts.iter().enumerate() {
                    let zk = |j: usize| &coords[(3 * k + j) * chunk..(3 * k + j + 1) * chunk];
                    partial[k * w + c] = Ext([dot(zk(0), col), dot(zk(1), col), dot(zk(2), col)]) * start;
                }
            }
            partial
        })
        .reduce(
            || vec![Ext::ZERO; np * w],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += *y);
                a
            },
        );
    (0..np).map(|k| sums[k * w..(k + 1) * w].to_vec()).collect()
}

/// The DEEP quotient on `domain` as an N x 3 matrix (inputs validated, no
/// point on the domain).
pub(crate) fn deep_quotient(domain: &Coset, points: &[DeepPoint<CpuMatrix>]) -> Result<CpuMatrix, crate::AllocFailed> {
    let big = domain.size();
    // sum_c coeff_c * value_c per point, subtracted once per row.
    let consts: Vec<Ext> = points
        .iter()
        .map(|p| p.columns.iter().flat_map(|dc| dc.coeffs.iter().zip(&dc.values).map(|(&a, &v)| a * v)).sum())
        .collect();
    let mut out = crate::try_zeroed(3 * big)?;
    let (o0, rest) = out.split_at_mut(big);
    let (o1, o2) = rest.split_at_mut(big);
    let chunk = ROWS.min(big);
    o0.par_chunks_mut(chunk).zip(o1.par_chunks_mut(chunk)).zip(o2.par_chunks_mut(chunk)).enumerate().for_each(
        |(ci, ((c0, c1), c2))| {
            let r0 = ci * chunk;
            let len = c0.len();
            let mut xs = vec![F::ZERO; len];
            fill_points(&mut xs, domain, r0);
            let mut total = vec![Ext::ZERO; len];
            // sum_c coeff_c f_c(x) by coordinate: base-field multiply-adds.
            let mut acc = [vec![F::ZERO; len], vec![F::ZERO; len], vec![F::ZERO; len]];
            let mut inv = vec![Ext::ZERO; len];
            let (mut norms, mut scratch) = (Vec::with_capacity(len), Vec::with_capacity(len));
            for (p, &v) in points.iter().zip(&consts) {
                acc.iter_mut().for_each(|a| a.fill(F::ZERO));
                for dc in &p.columns {
                    for (c, &coef) in dc.coeffs.iter().enumerate() {
                        let col = &dc.matrix.column(c)[r0..r0 + len];
                        for (a, &k) in acc.iter_mut().zip(&coef.0) {
                            mul_add_const(a, col, k);
                        }
                    }
                }
                inverse_differences(&xs, p.point, &mut inv, &mut norms, &mut scratch);
                for (t, (tot, &d)) in total.iter_mut().zip(&inv).enumerate() {
                    let a = Ext([acc[0][t], acc[1][t], acc[2][t]]);
                    *tot += (a - v) * d;
                }
            }
            for (t, e) in total.iter().enumerate() {
                c0[t] = e.0[0];
                c1[t] = e.0[1];
                c2[t] = e.0[2];
            }
        },
    );
    Ok(CpuMatrix::from_data(3, big, out))
}

/// sum_c weights_c * m_c at every row, as a height x 3 matrix (inputs
/// validated): base-field multiply-adds by coordinate, a row chunk a task.
pub(crate) fn combine_columns(m: &CpuMatrix, weights: &[Ext]) -> Result<CpuMatrix, crate::AllocFailed> {
    let n = m.height;
    let mut out = crate::try_zeroed(3 * n)?;
    let (o0, rest) = out.split_at_mut(n);
    let (o1, o2) = rest.split_at_mut(n);
    let chunk = ROWS.min(n.max(1));
    o0.par_chunks_mut(chunk).zip(o1.par_chunks_mut(chunk)).zip(o2.par_chunks_mut(chunk)).enumerate().for_each(
        |(ci, ((c0, c1), c2))| {
            let r0 = ci * chunk;
            for (c, w) in weights.iter().enumerate() {
                let col = &m.column(c)[r0..r0 + c0.len()];
                mul_add_const(c0, col, w.0[0]);
                mul_add_const(c1, col, w.0[1]);
                mul_add_const(c2, col, w.0[2]);
            }
        },
    );
    Ok(CpuMatrix::from_data(3, n, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_differences_match_extension_inverses() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            F::new(s)
        };
        let xs: Vec<F> = (0..257).map(|_| next()).collect();
        // An extension point, and points with zero coordinates (a base-field
        // z off the xs among them).
        let zs = [
            Ext([next(), next(), next()]),
            Ext([next(), F::ZERO, next()]),
            Ext([next(), next(), F::ZERO]),
            Ext([xs[0] + F::ONE, F::ZERO, F::ZERO]),
        ];
        let (mut norms, mut scratch) = (Vec::new(), Vec::new());
        for z in zs {
            let mut out = vec![Ext::ZERO; xs.len()];
            inverse_differences(&xs, z, &mut out, &mut norms, &mut scratch);
            for (o, &x) in out.iter().zip(&xs) {
                assert_eq!(Some(*o), (Ext::from_base(x) - z).inverse(), "x {x:?} z {z:?}");
            }
        }
    }
}
