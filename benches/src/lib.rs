//! Benchmark inputs shared by the criterion benches and the timed example
//! proves: random (never zero) matrices of a given shape.

use backend_api::ColMatrix;
use stark::examples::Lcg;

/// A random width x 2^log_n matrix from `seed`.
pub fn random_matrix(log_n: u32, width: usize, seed: u64) -> ColMatrix {
    let mut rng = Lcg(seed);
    let n = 1usize << log_n;
    ColMatrix::new(width, n, (0..width * n).map(|_| rng.next_felt()).collect())
}

/// Rounds a duration to milliseconds with two decimals.
pub fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::F;

    #[test]
    fn random_matrices_have_the_shape_and_no_zero_columns() {
        let m = random_matrix(4, 3, 1);
        assert_eq!((m.height(), m.width()), (16, 3));
        assert!(m.columns().all(|c| c.iter().any(|v| *v != F::ZERO)));
        assert_ne!(random_matrix(4, 3, 2), m);
    }
}
