//! BLAKE3 on sixteen inputs at once with AVX-512F, for Merkle leaves and
//! nodes: one lane per input, so a 512-byte row costs eight 16-lane
//! compressions instead of eight scalar ones.
//!
//! Only inputs of at most one chunk (1024 bytes) are hashed here: then the
//! digest is the root-flagged chaining value of the chunk, compressed block
//! by block from the key IV with counter 0. Leaves read their message words
//! straight from column-major storage (16 consecutive rows of a column are
//! two vectors; their low and high halves are the row's two words), so no
//! row transpose is needed. Digests equal `backend_api::hash` byte for byte
//! (tests compare every width up to a chunk).

use backend_api::{Digest, F};
use std::arch::x86_64::*;

/// Inputs hashed together.
pub(crate) const LANES: usize = 16;
/// Widest row (in field elements) that fits one chunk.
pub(crate) const MAX_WIDTH: usize = 128;

const IV: [u32; 8] = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19];
const CHUNK_START: u32 = 1;
const CHUNK_END: u32 = 2;
const ROOT: u32 = 8;
const MSG_PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];

#[inline(always)]
unsafe fn splat(v: u32) -> __m512i {
    _mm512_set1_epi32(v as i32)
}

#[inline(always)]
unsafe fn g(v: &mut [__m512i; 16], a: usize, b: usize, c: usize, d: usize, x: __m512i, y: __m512i) {
    v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), x);
    v[d] = _mm512_ror_epi32::<16>(_mm512_xor_si512(v[d], v[a]));
    v[c] = _mm512_add_epi32(v[c], v[d]);
    v[b] = _mm512_ror_epi32::<12>(_mm512_xor_si512(v[b], v[c]));
    v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), y);
    v[d] = _mm512_ror_epi32::<8>(_mm512_xor_si512(v[d], v[a]));
    v[c] = _mm512_add_epi32(v[c], v[d]);
    v[b] = _mm512_ror_epi32::<7>(_mm512_xor_si512(v[b], v[c]));
}

/// The chaining value after compressing one block (counter 0) per lane.
#[inline(always)]
unsafe fn compress(cv: &mut [__m512i; 8], m: &[__m512i; 16], block_len: u32, flags: u32) {
    let mut v = [
        cv[0],
        cv[1],
        cv[2],
        cv[3],
        cv[4],
        cv[5],
        cv[6],
        cv[7],
        splat(IV[0]),
        splat(IV[1]),
        splat(IV[2]),
        splat(IV[3]),
        _mm512_setzero_si512(),
        _mm512_setzero_si512(),
        splat(block_len),
        splat(flags),
    ];
    let mut m = *m;
    for round in 0..7 {
        g(&mut v, 0, 4, 8, 12, m[0], m[1]);
        g(&mut v, 1, 5, 9, 13, m[2], m[3]);
        g(&mut v, 2, 6, 10, 14, m[4], m[5]);
        g(&mut v, 3, 7, 11, 15, m[6], m[7]);
        g(&mut v, 0, 5, 10, 15, m[8], m[9]);
        g(&mut v, 1, 6, 11, 12, m[10], m[11]);
        g(&mut v, 2, 7, 8, 13, m[12], m[13]);
        g(&mut v, 3, 4, 9, 14, m[14], m[15]);
        if round < 6 {
            m = std::array::from_fn(|i| m[MSG_PERMUTATION[i]]);
        }
    }
    for i in 0..8 {
        cv[i] = _mm512_xor_si512(v[i], v[i + 8]);
    }
}

#[inline(always)]
unsafe fn iv() -> [__m512i; 8] {
    std::array::from_fn(|i| splat(IV[i]))
}

/// Writes lane l's chaining value as digest l.
#[inline(always)]
unsafe fn store_digests(cv: &[__m512i; 8], out: &mut [Digest]) {
    let mut words = [[0u32; LANES]; 8];
    for (w, v) in words.iter_mut().zip(cv) {
        _mm512_storeu_si512(w.as_mut_ptr() as *mut _, *v);
    }
    for (l, d) in out.iter_mut().enumerate().take(LANES) {
        for (i, w) in words.iter().enumerate() {
            d[4 * i..4 * i + 4].copy_from_slice(&w[l].to_le_bytes());
        }
    }
}

/// Digests of rows r0..r0+16 of a column-major `width` x `height` matrix
/// (1 <= width <= MAX_WIDTH, r0 + 16 <= height).
#[target_feature(enable = "avx512f")]
unsafe fn leaves(data: &[F], height: usize, width: usize, r0: usize, out: &mut [Digest]) {
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let blocks = width.div_ceil(8);
    let mut cv = iv();
    for k in 0..blocks {
        let mut m = [_mm512_setzero_si512(); 16];
        let cols = (width - 8 * k).min(8);
        for e in 0..cols {
            let p = data.as_ptr().add((8 * k + e) * height + r0);
            // This column's rows two groups ahead: a row spans more
            // columns than the hardware prefetchers follow streams, and one
            // group's hashing is shorter than a miss. A hint past the
            // column's end is harmless.
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(2 * LANES) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(2 * LANES + 8) as *const i8);
            let (a, b) = (_mm512_loadu_si512(p as *const _), _mm512_loadu_si512(p.add(8) as *const _));
            m[2 * e] = _mm512_permutex2var_epi32(a, even, b);
            m[2 * e + 1] = _mm512_permutex2var_epi32(a, odd, b);
        }
        let mut flags = if k == 0 { CHUNK_START } else { 0 };
        if k == blocks - 1 {
            flags |= CHUNK_END | ROOT;
        }
        compress(&mut cv, &m, 8 * cols as u32, flags);
    }
    store_digests(&cv, out);
}

/// Digests of nodes i0..i0+16 over the child layer `prev` (node i hashes
/// prev[2i] || prev[2i + 1]: one 64-byte block).
#[target_feature(enable = "avx512f")]
unsafe fn nodes(prev: &[Digest], i0: usize, out: &mut [Digest]) {
    // Node i's 16 words start 64 bytes (16 words) after node i - 1's.
    let idx = _mm512_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240);
    let base = prev.as_ptr().add(2 * i0) as *const u8;
    let m: [__m512i; 16] = std::array::from_fn(|j| _mm512_i32gather_epi32::<4>(idx, base.add(4 * j) as *const _));
    let mut cv = iv();
    compress(&mut cv, &m, 64, CHUNK_START | CHUNK_END | ROOT);
    store_digests(&cv, out);
}

/// Whether `leaves_into` may run: AVX-512F present and a row fits a chunk.
pub(crate) fn leaves_ok(width: usize, height: usize) -> bool {
    crate::simd::available() && (1..=MAX_WIDTH).contains(&width) && height.is_multiple_of(LANES)
}

/// Leaf digests of rows r0..r0 + out.len() (a multiple of 16); only after
/// `leaves_ok` said yes.
pub(crate) fn leaves_into(data: &[F], height: usize, width: usize, r0: usize, out: &mut [Digest]) {
    assert!(leaves_ok(width, height) && out.len().is_multiple_of(LANES) && r0 + out.len() <= height);
    assert!(data.len() >= width * height);
    for (g, o) in out.chunks_mut(LANES).enumerate() {
        // SAFETY: AVX-512F is present (leaves_ok), and every column read
        // covers rows r0 + 16g.. r0 + 16g + 16 <= height of a column inside
        // `data` (asserted above).
        unsafe { leaves(data, height, width, r0 + LANES * g, o) };
    }
}

/// Node digests i0..i0 + out.len() (a multiple of 16) over `prev`; only
/// when `crate::simd::available()`.
pub(crate) fn nodes_into(prev: &[Digest], i0: usize, out: &mut [Digest]) {
    assert!(crate::simd::available() && out.len().is_multiple_of(LANES) && 2 * (i0 + out.len()) <= prev.len());
    for (g, o) in out.chunks_mut(LANES).enumerate() {
        // SAFETY: AVX-512F is present and the gathers read the 32 child
        // digests 2(i0 + 16g).. of `prev`, in bounds (asserted above).
        unsafe { nodes(prev, i0 + LANES * g, o) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::hash::{hash_leaf, hash_node};
    use backend_api::HashKind;

    #[test]
    fn lanes_match_the_blake3_crate_for_every_width_up_to_a_chunk() {
        if !crate::simd::available() {
            return;
        }
        let height = 32;
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for width in 1..=MAX_WIDTH {
            let data: Vec<F> = (0..width * height)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    F::new(s)
                })
                .collect();
            let mut got = vec![[0u8; 32]; 16];
            leaves_into(&data, height, width, 16, &mut got);
            for (l, d) in got.iter().enumerate() {
                let row: Vec<F> = (0..width).map(|c| data[c * height + 16 + l]).collect();
                assert_eq!(*d, hash_leaf(HashKind::Blake3, &row), "width {width}, lane {l}");
            }
        }
        let prev: Vec<Digest> = (0..64u8).map(|i| std::array::from_fn(|j| i.wrapping_mul(31) ^ j as u8)).collect();
        let mut got = vec![[0u8; 32]; 16];
        nodes_into(&prev, 16, &mut got);
        for (l, d) in got.iter().enumerate() {
            let i = 16 + l;
            assert_eq!(*d, hash_node(HashKind::Blake3, &prev[2 * i], &prev[2 * i + 1]));
        }
    }
}
