//! FRI folding and proof-of-work grinding.

use crate::CpuMatrix;
use backend_api::hash::pow_ok;
use backend_api::{BackendError, Coset, Digest, Ext, HashKind, Result, Stage, F};
use rayon::prelude::*;

const FOLD_ROWS: usize = 1024;

/// Folds by a = 2^log_arity (inputs validated).
///
/// With v_j = f(x w^j) for the a-th roots of unity w^j,
/// u_r = (1/a) sum_j v_j w^(-jr) = x^r f_r(x^a), so the folded value
/// sum_r beta^r f_r(x^a) is sum_r (beta/x)^r u_r: a small inverse DFT and
/// a Horner evaluation per output row, with no inversion (1/x_i comes from
/// powers of the inverse generator).
pub(crate) fn fold(
    layer: &CpuMatrix,
    domain: &Coset,
    log_arity: u32,
    beta: Ext,
    roll_in: Option<(&CpuMatrix, Ext)>,
) -> std::result::Result<CpuMatrix, crate::AllocFailed> {
    let a = 1usize << log_arity;
    let big = domain.size();
    let m = big >> log_arity;
    let inv_a = crate::ntt::inv_pow2(log_arity);
    let omega_inv = F::two_adic_root(log_arity).pow(a as u64 - 1);
    // table[r * a + j] = w^(-jr) / a
    let mut table = vec![F::ZERO; a * a];
    for r in 0..a {
        let step = omega_inv.pow(r as u64);
        let mut acc = inv_a;
        for j in 0..a {
            table[r * a + j] = acc;
            acc *= step;
        }
    }
    let g = domain.generator();
    let g_inv = g.pow(big as u64 - 1);
    let s_inv = domain.shift.inverse().unwrap_or(F::ONE);
    let cols = [layer.column(0), layer.column(1), layer.column(2)];
    let roll = roll_in.map(|(r, s)| ([r.column(0), r.column(1), r.column(2)], s));

    let mut out: Vec<F> = crate::try_zeroed(3 * m)?;
    let (o0, rest) = out.split_at_mut(m);
    let (o1, o2) = rest.split_at_mut(m);
    let chunk = FOLD_ROWS.min(m);
    o0.par_chunks_mut(chunk).zip(o1.par_chunks_mut(chunk)).zip(o2.par_chunks_mut(chunk)).enumerate().for_each(
        |(ci, ((c0, c1), c2))| {
            let i0 = ci * chunk;
            let mut x_inv = s_inv * g_inv.pow(i0 as u64);
            let mut v = vec![Ext::ZERO; a];
            let mut u = vec![Ext::ZERO; a];
            for t in 0..c0.len() {
                let i = i0 + t;
                for (j, vj) in v.iter_mut().enumerate() {
                    let row = i + j * m;
                    *vj = Ext([cols[0][row], cols[1][row], cols[2][row]]);
                }
                for (r, ur) in u.iter_mut().enumerate() {
                    let tr = &table[r * a..(r + 1) * a];
                    let mut acc = Ext::ZERO;
                    for (vj, &w) in v.iter().zip(tr) {
                        acc += vj.mul_base(w);
                    }
                    *ur = acc;
                }
                let step = beta.mul_base(x_inv);
                let mut acc = u[a - 1];
                for r in (0..a - 1).rev() {
                    acc = acc * step + u[r];
                }
                if let Some((rc, s)) = &roll {
                    acc += *s * Ext([rc[0][i], rc[1][i], rc[2][i]]);
                }
                c0[t] = acc.0[0];
                c1[t] = acc.0[1];
                c2[t] = acc.0[2];
                x_inv *= g_inv;
            }
        },
    );
    Ok(CpuMatrix::from_data(3, m, out))
}

/// Nonces tried per parallel round; the round's first valid nonce (in
/// nonce order) wins, so the answer does not depend on the thread count.
const GRIND_BLOCK: u64 = 1 << 15;

pub(crate) fn grind(hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
    if bits == 0 {
        return Ok(0);
    }
    let mut start = 0u64;
    loop {
        let end = start.saturating_add(GRIND_BLOCK);
        if let Some(n) = (start..end).into_par_iter().find_first(|&n| pow_ok(hash, seed, n, bits)) {
            return Ok(n);
        }
        if end == u64::MAX {
            return Err(BackendError::invalid(Stage::Grind, format!("no nonce satisfies {bits} bits")));
        }
        start = end;
    }
}
