//! Naive reference definitions the backend is checked against.
#![allow(dead_code)]

use backend_api::field::P;
use backend_api::{ColMatrix, Coset, Ctx, Ext, F};
use backend_cpu::CpuMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub const CTX: Ctx<'static> = Ctx::table("test");

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A uniformly random non-zero field element.
pub fn rand_f(r: &mut impl Rng) -> F {
    F::new(r.gen_range(1..P))
}

pub fn rand_ext(r: &mut impl Rng) -> Ext {
    Ext::new(rand_f(r), rand_f(r), rand_f(r))
}

pub fn rand_col(r: &mut impl Rng, n: usize) -> Vec<F> {
    (0..n).map(|_| rand_f(r)).collect()
}

pub fn rand_matrix(r: &mut impl Rng, width: usize, height: usize) -> CpuMatrix {
    CpuMatrix::new(width, height, rand_col(r, width * height)).unwrap()
}

pub fn matrix(columns: Vec<Vec<F>>) -> CpuMatrix {
    CpuMatrix::from_host(&ColMatrix::from_columns(columns))
}

/// Horner evaluation of base coefficients at a base point.
pub fn horner(coeffs: &[F], x: F) -> F {
    coeffs.iter().rev().fold(F::ZERO, |acc, &c| acc * x + c)
}

/// Horner evaluation of base coefficients at an extension point.
pub fn horner_ext(coeffs: &[F], z: Ext) -> Ext {
    coeffs.iter().rev().fold(Ext::ZERO, |acc, &c| acc * z + Ext::from_base(c))
}

/// Horner evaluation of extension coefficients at an extension point.
pub fn horner_ee(coeffs: &[Ext], z: Ext) -> Ext {
    coeffs.iter().rev().fold(Ext::ZERO, |acc, &c| acc * z + c)
}

/// The O(n^2) DFT: e_i = sum_k c_k w^(ik).
pub fn naive_dft(coeffs: &[F]) -> Vec<F> {
    let n = coeffs.len();
    let w = F::two_adic_root(n.trailing_zeros());
    (0..n).map(|i| horner(coeffs, w.pow(i as u64))).collect()
}

/// Evaluations of base coefficients on every point of `domain`.
pub fn eval_on(coeffs: &[F], domain: &Coset) -> Vec<F> {
    domain.points().into_iter().map(|x| horner(coeffs, x)).collect()
}

/// Random extension coefficients as three base coordinate polynomials.
pub fn rand_ext_poly(r: &mut impl Rng, len: usize) -> [Vec<F>; 3] {
    [rand_col(r, len), rand_col(r, len), rand_col(r, len)]
}

/// The three coordinate columns of an extension polynomial on `domain`.
pub fn ext_poly_on(coeffs: &[Vec<F>; 3], domain: &Coset) -> CpuMatrix {
    matrix(coeffs.iter().map(|c| eval_on(c, domain)).collect())
}

pub fn ext_coeffs(coeffs: &[Vec<F>; 3]) -> Vec<Ext> {
    (0..coeffs[0].len()).map(|k| Ext::new(coeffs[0][k], coeffs[1][k], coeffs[2][k])).collect()
}

pub fn ext_row(m: &CpuMatrix, row: usize, k: usize) -> Ext {
    m.get_ext(row, k)
}
