//! Keccak-256 (original 0x01 padding, as `sha3::Keccak256`) on eight inputs
//! at once with AVX-512F, for Merkle leaves and nodes: one 64-bit lane per
//! input, so the 25 state words of eight sponges are 25 vectors and one
//! Keccak-f[1600] permutation advances all eight.
//!
//! A row of `width` field elements is `width` little-endian 64-bit words,
//! which are exactly the sponge's words, so eight consecutive rows of a
//! column are one vector load from column-major storage: no transpose.
//! Digests equal `backend_api::hash` byte for byte (tests compare every
//! width up to 128 and the node hash).

use backend_api::{Digest, F};
use std::arch::x86_64::*;

/// Inputs hashed together.
pub(crate) const LANES: usize = 8;
/// Sponge rate in 64-bit words (136 bytes).
const RATE: usize = 17;

const RC: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808A,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808B,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008A,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000A,
    0x0000_0000_8000_808B,
    0x8000_0000_0000_008B,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800A,
    0x8000_0000_8000_000A,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

/// Rotation of the word at x + 5y (rho).
const RHO: [u32; 25] = [
    0, 1, 62, 28, 27, //
    36, 44, 6, 55, 20, //
    3, 10, 43, 25, 39, //
    41, 45, 15, 21, 8, //
    18, 2, 61, 56, 14,
];

#[inline(always)]
unsafe fn splat(v: u64) -> __m512i {
    _mm512_set1_epi64(v as i64)
}

#[inline(always)]
unsafe fn xor3(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<0x96>(a, b, c)
}

/// Keccak-f[1600] on eight states; word x + 5y of the state is `a[x + 5y]`.
#[inline(always)]
unsafe fn keccak_f(a: &mut [__m512i; 25]) {
    for rc in RC {
        // theta
        let c: [__m512i; 5] = std::array::from_fn(|x| {
            _mm512_xor_si512(xor3(a[x], a[x + 5], a[x + 10]), _mm512_xor_si512(a[x + 15], a[x + 20]))
        });
        let d: [__m512i; 5] =
            std::array::from_fn(|x| _mm512_xor_si512(c[(x + 4) % 5], _mm512_rol_epi64::<1>(c[(x + 1) % 5])));
        // rho and pi: word (x, y) moves to (y, 2x + 3y).
        let mut b = [_mm512_setzero_si512(); 25];
        for y in 0..5 {
            for x in 0..5 {
                let v = _mm512_xor_si512(a[x + 5 * y], d[x]);
                b[y + 5 * ((2 * x + 3 * y) % 5)] = _mm512_rolv_epi64(v, splat(RHO[x + 5 * y] as u64));
            }
        }
        // chi: a ^ (!b & c)
        for y in 0..5 {
            for x in 0..5 {
                a[x + 5 * y] =
                    _mm512_ternarylogic_epi64::<0xD2>(b[x + 5 * y], b[(x + 1) % 5 + 5 * y], b[(x + 2) % 5 + 5 * y]);
            }
        }
        // iota
        a[0] = _mm512_xor_si512(a[0], splat(rc));
    }
}

/// Absorbs `words` words (word i of every lane from `word(i)`), pads with
/// 0x01 .. 0x80 and squeezes the 32-byte digests into `out`.
#[inline(always)]
unsafe fn sponge(words: usize, word: impl Fn(usize) -> __m512i, out: &mut [Digest]) {
    let mut a = [_mm512_setzero_si512(); 25];
    // The 0x01 lands in the block after the last whole one (a message
    // that fills whole blocks gets a block of padding alone).
    let blocks = words / RATE + 1;
    for k in 0..blocks {
        for (j, s) in a.iter_mut().enumerate().take(RATE) {
            let i = k * RATE + j;
            if i < words {
                *s = _mm512_xor_si512(*s, word(i));
            } else if i == words {
                *s = _mm512_xor_si512(*s, splat(0x01));
            }
        }
        if k == blocks - 1 {
            a[RATE - 1] = _mm512_xor_si512(a[RATE - 1], splat(0x80 << 56));
        }
        keccak_f(&mut a);
    }
    let mut t = [[0u64; LANES]; 4];
    for (w, v) in t.iter_mut().zip(&a) {
        _mm512_storeu_si512(w.as_mut_ptr() as *mut _, *v);
    }
    for (l, d) in out.iter_mut().enumerate() {
        for (w, words) in t.iter().enumerate() {
            d[8 * w..8 * w + 8].copy_from_slice(&words[l].to_le_bytes());
        }
    }
}

/// Digests of rows r0..r0+8 of a column-major `width` x `height` matrix
/// (r0 + 8 <= height).
#[target_feature(enable = "avx512f")]
unsafe fn leaves(data: &[F], height: usize, width: usize, r0: usize, out: &mut [Digest]) {
    let base = data.as_ptr().add(r0);
    sponge(
        width,
        |c| {
            let p = base.add(c * height);
            // This column's rows two groups ahead (see blake3x16's leaves).
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(2 * LANES) as *const i8);
            _mm512_loadu_si512(p as *const _)
        },
        out,
    );
}

/// Digests of nodes i0..i0+8 over the child layer `prev` (node i hashes
/// prev[2i] || prev[2i + 1]: eight words).
#[target_feature(enable = "avx512f")]
unsafe fn nodes(prev: &[Digest], i0: usize, out: &mut [Digest]) {
    // Node i's 8 words start 64 bytes (8 words) after node i - 1's.
    let idx = _mm512_setr_epi64(0, 8, 16, 24, 32, 40, 48, 56);
    let base = prev.as_ptr().add(2 * i0) as *const u64;
    sponge(8, |j| _mm512_i64gather_epi64::<8>(idx, base.add(j) as *const _), out);
}

/// Whether `leaves_into` may run: AVX-512F present, little-endian words,
/// and whole eight-row groups.
pub(crate) fn leaves_ok(width: usize, height: usize) -> bool {
    crate::simd::available() && width >= 1 && height.is_multiple_of(LANES)
}

/// Leaf digests of rows r0..r0 + out.len() (a multiple of 8); only after
/// `leaves_ok` said yes.
pub(crate) fn leaves_into(data: &[F], height: usize, width: usize, r0: usize, out: &mut [Digest]) {
    assert!(leaves_ok(width, height) && out.len().is_multiple_of(LANES) && r0 + out.len() <= height);
    assert!(data.len() >= width * height);
    for (g, o) in out.chunks_mut(LANES).enumerate() {
        // SAFETY: AVX-512F is present (leaves_ok), and every column read
        // covers rows r0 + 8g.. r0 + 8g + 8 <= height of a column inside
        // `data` (asserted above).
        unsafe { leaves(data, height, width, r0 + LANES * g, o) };
    }
}

/// Node digests i0..i0 + out.len() (a multiple of 8) over `prev`; only
/// when `crate::simd::available()`.
pub(crate) fn nodes_into(prev: &[Digest], i0: usize, out: &mut [Digest]) {
    assert!(crate::simd::available() && out.len().is_multiple_of(LANES) && 2 * (i0 + out.len()) <= prev.len());
    for (g, o) in out.chunks_mut(LANES).enumerate() {
        // SAFETY: AVX-512F is present and the gathers read the 16 child
        // digests 2(i0 + 8g).. of `prev`, in bounds (asserted above).
        unsafe { nodes(prev, i0 + LANES * g, o) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::hash::{hash_leaf, hash_node};
    use backend_api::HashKind;

    #[test]
    fn lanes_match_the_sha3_crate_for_every_width_up_to_128() {
        if !crate::simd::available() {
            return;
        }
        let height = 24;
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for width in 1..=128 {
            let data: Vec<F> = (0..width * height)
                .map(|i| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    if i % 13 == 0 {
                        F::new(backend_api::field::P - 1)
                    } else {
                        F::new(s)
                    }
                })
                .collect();
            let mut got = vec![[0u8; 32]; 16];
            leaves_into(&data, height, width, 8, &mut got);
            for (l, d) in got.iter().enumerate() {
                let row: Vec<F> = (0..width).map(|c| data[c * height + 8 + l]).collect();
                assert_eq!(*d, hash_leaf(HashKind::Keccak256, &row), "width {width}, lane {l}");
            }
        }
        let prev: Vec<Digest> = (0..64u8).map(|i| std::array::from_fn(|j| i.wrapping_mul(31) ^ j as u8)).collect();
        let mut got = vec![[0u8; 32]; 16];
        nodes_into(&prev, 8, &mut got);
        for (l, d) in got.iter().enumerate() {
            let i = 8 + l;
            assert_eq!(*d, hash_node(HashKind::Keccak256, &prev[2 * i], &prev[2 * i + 1]));
        }
    }
}
