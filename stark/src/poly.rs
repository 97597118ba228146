//! Small host-side polynomial helpers for the verifier and the final FRI
//! layer (sizes of at most a few thousand points).

use backend_api::{Ext, F};

/// In-place radix-2 transform over a two-adic subgroup, natural order:
/// values[i] <- sum_k values[k] * w^(i k), w = root of the given order.
fn transform(values: &mut [Ext], w: F) {
    let n = values.len();
    let log_n = n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - log_n);
        if i < j {
            values.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let step = w.pow((n / len) as u64);
        for chunk in values.chunks_mut(len) {
            let mut t = F::ONE;
            for k in 0..len / 2 {
                let u = chunk[k];
                let v = chunk[k + len / 2] * t;
                chunk[k] = u + v;
                chunk[k + len / 2] = u - v;
                t *= step;
            }
        }
        len <<= 1;
    }
}

/// Coefficients of the polynomial of degree < n taking `values` on the
/// coset shift * H_n (n a power of two).
pub fn interpolate_coset(values: &[Ext], shift: F) -> Vec<Ext> {
    let n = values.len();
    if n <= 1 {
        return values.to_vec();
    }
    let mut v = values.to_vec();
    let w_inv = F::two_adic_root(n.trailing_zeros()).inverse().expect("root of unity is non-zero");
    transform(&mut v, w_inv);
    let n_inv = F::new(n as u64).inverse().expect("n is non-zero");
    let s_inv = shift.inverse().expect("shift is non-zero");
    let mut s = n_inv;
    for c in v.iter_mut() {
        *c = c.mul_base(s);
        s *= s_inv;
    }
    v
}

/// Evaluations on the coset shift * H_n of the polynomial with these n
/// coefficients (n a power of two): the inverse of [`interpolate_coset`].
pub fn evaluate_coset(coeffs: &[Ext], shift: F) -> Vec<Ext> {
    let n = coeffs.len();
    let mut s = F::ONE;
    let mut v: Vec<Ext> = coeffs
        .iter()
        .map(|c| {
            let scaled = c.mul_base(s);
            s *= shift;
            scaled
        })
        .collect();
    if n > 1 {
        transform(&mut v, F::two_adic_root(n.trailing_zeros()));
    }
    v
}

/// Horner evaluation of coefficients at x.
pub fn eval_poly(coeffs: &[Ext], x: Ext) -> Ext {
    coeffs.iter().rev().fold(Ext::ZERO, |acc, &c| acc * x + c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_inverts_evaluation() {
        let coeffs: Vec<Ext> =
            (0..16u64).map(|i| Ext::new(F::new(i * 7 + 1), F::new(i * i + 3), F::new(99 - i))).collect();
        let shift = F::new(7).pow(4);
        let w = F::two_adic_root(4);
        let values: Vec<Ext> = (0..16).map(|i| eval_poly(&coeffs, Ext::from_base(shift * w.pow(i as u64)))).collect();
        assert_eq!(interpolate_coset(&values, shift), coeffs);
        assert_eq!(evaluate_coset(&coeffs, shift), values);
    }
}
