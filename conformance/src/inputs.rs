//! Seeded random inputs: uniformly random non-zero field elements, so a
//! backend that drops or zeroes data cannot pass by accident.

use backend_api::field::P;
use backend_api::{ColMatrix, Ext, F};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub type CaseRng = ChaCha8Rng;

/// The seed of one case: the base seed mixed with the case's name, so
/// cases are independent and each can be replayed alone.
pub fn case_seed(base: u64, name: &str) -> u64 {
    // FNV-1a over the name, then a splitmix finaliser.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    let mut z = base ^ h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub fn rng(seed: u64) -> CaseRng {
    ChaCha8Rng::seed_from_u64(seed)
}

pub fn rand_f(r: &mut impl Rng) -> F {
    F::new(r.gen_range(1..P))
}

pub fn rand_ext(r: &mut impl Rng) -> Ext {
    Ext::new(rand_f(r), rand_f(r), rand_f(r))
}

pub fn rand_exts(r: &mut impl Rng, n: usize) -> Vec<Ext> {
    (0..n).map(|_| rand_ext(r)).collect()
}

pub fn rand_felts(r: &mut impl Rng, n: usize) -> Vec<F> {
    (0..n).map(|_| rand_f(r)).collect()
}

pub fn rand_matrix(r: &mut impl Rng, width: usize, height: usize) -> ColMatrix {
    ColMatrix::new(width, height, rand_felts(r, width * height))
}

/// "2^k" for a power-of-two row count, else the number.
pub fn rows_label(rows: usize) -> String {
    if rows.is_power_of_two() {
        format!("2^{}", rows.trailing_zeros())
    } else {
        rows.to_string()
    }
}
