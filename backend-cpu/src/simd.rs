//! Goldilocks arithmetic on eight lanes with AVX-512F, picked at run time.
//!
//! Every result is canonical, as in the scalar `F` operations, so a lane
//! gives exactly the bytes the scalar code gives: the vector path changes
//! speed, never output. Builds for other targets, and hosts without
//! AVX-512F, use the scalar loops.

use backend_api::field::F;

/// Whether the eight-lane kernels may run on this host. Decided once per
/// process; `KILN_CPU_NO_SIMD=1` forces the scalar loops, so tests (and CI)
/// cover both paths on a host that has AVX-512F.
#[inline]
pub(crate) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        if std::env::var_os("KILN_CPU_NO_SIMD").is_some_and(|v| v != "0") {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use backend_api::field::{F, P};
    use std::arch::x86_64::*;

    const EPSILON: u64 = 0xFFFF_FFFF;

    #[inline(always)]
    unsafe fn splat(v: u64) -> __m512i {
        _mm512_set1_epi64(v as i64)
    }

    /// a + b, canonical (inputs canonical). With c = b + EPSILON (no
    /// wrap: b < p), a + c carries past 2^64 exactly when a + b >= p, and
    /// then its low word is a + b - p; otherwise a + b is the sum less
    /// EPSILON. Four operations where a carry fix and a compare to p take
    /// five.
    #[inline(always)]
    pub(super) unsafe fn add(a: __m512i, b: __m512i) -> __m512i {
        let eps = splat(EPSILON);
        let s = _mm512_add_epi64(a, _mm512_add_epi64(b, eps));
        let no_carry = _mm512_cmpge_epu64_mask(s, a);
        _mm512_mask_sub_epi64(s, no_carry, s, eps)
    }

    /// a - b, canonical (inputs canonical).
    #[inline(always)]
    pub(super) unsafe fn sub(a: __m512i, b: __m512i) -> __m512i {
        let d = _mm512_sub_epi64(a, b);
        let borrow = _mm512_cmplt_epu64_mask(a, b);
        _mm512_mask_sub_epi64(d, borrow, d, splat(EPSILON))
    }

    /// Each lane's high 32 bits copied into its low half (all that
    /// mul_epu32 reads): a shuffle, so it leaves the shift port to the
    /// multiplications.
    #[inline(always)]
    unsafe fn high_halves(a: __m512i) -> __m512i {
        _mm512_castps_si512(_mm512_movehdup_ps(_mm512_castsi512_ps(a)))
    }

    /// a * b, canonical: the 128-bit product from four 32 x 32 products,
    /// reduced as `F::reduce128` does.
    #[inline(always)]
    pub(super) unsafe fn mul(a: __m512i, b: __m512i) -> __m512i {
        let eps = splat(EPSILON);
        let (a_hi, b_hi) = (high_halves(a), high_halves(b));
        let ll = _mm512_mul_epu32(a, b);
        let lh = _mm512_mul_epu32(a, b_hi);
        let hl = _mm512_mul_epu32(a_hi, b);
        let hh = _mm512_mul_epu32(a_hi, b_hi);
        // None of these sums overflow 64 bits.
        let t0 = _mm512_add_epi64(hl, _mm512_srli_epi64::<32>(ll));
        let t1 = _mm512_add_epi64(lh, _mm512_and_si512(t0, eps));
        let hi = _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64::<32>(t0)), _mm512_srli_epi64::<32>(t1));
        // Low word: ll's low half below t1's low half (copied up by a
        // shuffle, not a shift).
        let t1_up = _mm512_castps_si512(_mm512_moveldup_ps(_mm512_castsi512_ps(t1)));
        let lo = _mm512_mask_blend_epi32(0x5555, t1_up, ll);
        reduce(hi, lo)
    }

    /// hi 2^64 + lo reduced, canonical: 2^96 = -1 and 2^64 = EPSILON (mod
    /// p), so it is lo - hi_hi + hi_lo EPSILON.
    #[inline(always)]
    unsafe fn reduce(hi: __m512i, lo: __m512i) -> __m512i {
        let eps = splat(EPSILON);
        let hi_hi = _mm512_srli_epi64::<32>(hi);
        let borrow = _mm512_cmplt_epu64_mask(lo, hi_hi);
        let r0 = _mm512_sub_epi64(lo, hi_hi);
        let r0 = _mm512_mask_sub_epi64(r0, borrow, r0, eps);
        // mul_epu32 reads hi's low half only.
        let t = _mm512_mul_epu32(hi, eps);
        let r = _mm512_add_epi64(r0, t);
        let carry = _mm512_cmplt_epu64_mask(r, t);
        let r = _mm512_mask_add_epi64(r, carry, r, eps);
        let big = _mm512_cmpge_epu64_mask(r, splat(P));
        _mm512_mask_sub_epi64(r, big, r, splat(P))
    }

    /// x 2^48, canonical (x any 64-bit value): 2^48 is a primitive
    /// fourth root of unity, and the product is (x >> 16) 2^64 + (x << 48),
    /// so it costs a reduction and two shifts, not a multiplication.
    #[inline(always)]
    unsafe fn times_2_48(x: __m512i) -> __m512i {
        reduce(_mm512_srli_epi64::<16>(x), _mm512_slli_epi64::<48>(x))
    }

    /// (a - b) w_4, where w_4 = ±2^48 (`neg`: minus).
    #[inline(always)]
    unsafe fn rot(a: __m512i, b: __m512i, neg: bool) -> __m512i {
        times_2_48(if neg { sub(b, a) } else { sub(a, b) })
    }

    /// Four vectors at p, p + stride, p + 2 stride, p + 3 stride. Helpers
    /// here are `#[inline(always)]` functions, never closures around an
    /// intrinsic: a closure inside a helper that is not itself
    /// `#[target_feature]` is built without AVX-512 in the default build
    /// (baseline x86-64), and one such closure in `quad` made the prover's
    /// main commit 3.8x slower there.
    #[inline(always)]
    unsafe fn load4(p: *const F, stride: usize) -> [__m512i; 4] {
        let at = |k: usize| p.add(k * stride) as *const __m512i;
        [_mm512_loadu_si512(at(0)), _mm512_loadu_si512(at(1)), _mm512_loadu_si512(at(2)), _mm512_loadu_si512(at(3))]
    }

    /// Stores `load4`'s vectors back.
    #[inline(always)]
    unsafe fn store4(p: *mut F, stride: usize, v: [__m512i; 4]) {
        let at = |k: usize| p.add(k * stride) as *mut __m512i;
        _mm512_storeu_si512(at(0), v[0]);
        _mm512_storeu_si512(at(1), v[1]);
        _mm512_storeu_si512(at(2), v[2]);
        _mm512_storeu_si512(at(3), v[3]);
    }

    /// Two butterfly layers at once (radix 4) on the values at i, i + h,
    /// i + 2h, i + 3h of a block of 4h: DIT runs half-block h then 2h, DIF
    /// 2h then h. With u = w_4h^i, the four radix-2 butterflies' twiddles
    /// are u^2 (twice), u and u w_4, where w_4 = ±2^48 (`neg`: minus), so
    /// three multiplications and one `times_2_48` do the work of four
    /// multiplications.
    #[inline(always)]
    unsafe fn quad(x: [__m512i; 4], u: __m512i, u2: __m512i, u3: __m512i, dif: bool, neg: bool) -> [__m512i; 4] {
        if dif {
            let (a, c) = (add(x[0], x[2]), sub(x[0], x[2]));
            let (b, d) = (add(x[1], x[3]), rot(x[1], x[3], neg));
            [add(a, b), mul(sub(a, b), u2), mul(add(c, d), u), mul(sub(c, d), u3)]
        } else {
            let (y1, y2, y3) = (mul(x[1], u2), mul(x[2], u), mul(x[3], u3));
            let (a, b) = (add(x[0], y1), sub(x[0], y1));
            let (c, d) = (add(y2, y3), rot(y2, y3, neg));
            [add(a, c), add(b, d), sub(a, c), sub(b, d)]
        }
    }

    /// Two whole layers, half-blocks h and 2h (h a multiple of 8), over
    /// `a` (whole blocks of 4h) as radix-4 steps (`quad`); `pows` holds
    /// u = w_4h^i, u^2 and u^3 for i < h. Two steps a loop iteration (the
    /// next i, or the next block's first when h is 8) give the core
    /// independent chains to overlap.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn layer_pair(a: &mut [F], h: usize, pows: [&[F]; 3], dif: bool, neg: bool) {
        let p = a.as_mut_ptr();
        let per_block = h / 8;
        let groups = a.len() / 32;
        // Group g: block g / per_block, offset (g % per_block) 8.
        let at = |g: usize| ((g / per_block) * 4 * h + (g % per_block) * 8, (g % per_block) * 8);
        let mut g = 0;
        while g + 2 <= groups {
            let ((q0, i0), (q1, i1)) = (at(g), at(g + 1));
            let (x0, x1) = (load4(p.add(q0), h), load4(p.add(q1), h));
            let y0 = quad(x0, load(pows[0], i0), load(pows[1], i0), load(pows[2], i0), dif, neg);
            let y1 = quad(x1, load(pows[0], i1), load(pows[1], i1), load(pows[2], i1), dif, neg);
            store4(p.add(q0), h, y0);
            store4(p.add(q1), h, y1);
            g += 2;
        }
        if g < groups {
            let (q, i) = at(g);
            let y = quad(load4(p.add(q), h), load(pows[0], i), load(pows[1], i), load(pows[2], i), dif, neg);
            store4(p.add(q), h, y);
        }
    }

    #[inline(always)]
    unsafe fn load(s: &[F], i: usize) -> __m512i {
        _mm512_loadu_si512(s.as_ptr().add(i) as *const _)
    }

    #[inline(always)]
    unsafe fn store(s: &mut [F], i: usize, v: __m512i) {
        _mm512_storeu_si512(s.as_mut_ptr().add(i) as *mut _, v)
    }

    /// The first multiple of 8 elements of the DIF butterflies; returns how
    /// many were done.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn dif(lo: &mut [F], hi: &mut [F], tw: &[F]) -> usize {
        let n = lo.len().min(hi.len()).min(tw.len()) & !7;
        runs(lo.as_mut_ptr(), hi.as_mut_ptr(), tw.as_ptr(), n, true);
        n
    }

    /// One butterfly pair of runs: lo[i], hi[i] with twiddle w[i], i < len
    /// (a multiple of 8), in place.
    #[inline(always)]
    unsafe fn runs(lo: *mut F, hi: *mut F, w: *const F, len: usize, dif: bool) {
        runs_to(lo, hi, lo, hi, w, len, dif)
    }

    /// The butterflies of the pairs (x_lo[i], x_hi[i]) written to
    /// (y_lo[i], y_hi[i]): in place when the pointers are equal, or a copy
    /// that costs no pass of its own. Every element is read before its
    /// output is written.
    #[inline(always)]
    unsafe fn runs_to(x_lo: *const F, x_hi: *const F, y_lo: *mut F, y_hi: *mut F, w: *const F, len: usize, dif: bool) {
        let mut i = 0;
        while i < len {
            let x = _mm512_loadu_si512(x_lo.add(i) as *const _);
            let y = _mm512_loadu_si512(x_hi.add(i) as *const _);
            let t = _mm512_loadu_si512(w.add(i) as *const _);
            let (a, b) = if dif {
                (add(x, y), mul(sub(x, y), t))
            } else {
                let y = mul(y, t);
                (add(x, y), sub(x, y))
            };
            _mm512_storeu_si512(y_lo.add(i) as *mut _, a);
            _mm512_storeu_si512(y_hi.add(i) as *mut _, b);
            i += 8;
        }
    }

    /// A whole layer with half-block h (a multiple of 8) over `a` (whole
    /// blocks of 2h); `t` holds the h twiddles.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn layer(a: &mut [F], h: usize, t: &[F], dif: bool) {
        let p = a.as_mut_ptr();
        let mut base = 0;
        while base < a.len() {
            runs(p.add(base), p.add(base + h), t.as_ptr(), h, dif);
            base += 2 * h;
        }
    }

    /// The `r` layers of a fused tile of 2^r rows of `row` elements (a
    /// multiple of 8), half-blocks of 1, 2, .. 2^(r-1) rows, as
    /// `ntt::steps` groups them: layers (s, s + 1) for even s in one radix-4
    /// step (`quad`), the last alone when r is odd, in DIT order (DIF runs
    /// them largest first). Step s's group m reads the next runs of `w` at
    /// run 2^s - 1 + 3m (a lone layer's pair m at 2^s - 1 + m), as
    /// `pass_table` lays them out. The first step reads the rows from `mem`
    /// and the last writes them back; the steps between keep them in `buf`
    /// (2^r rows), so the gather and the scatter cost no copy of their own.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(mem: super::Rows, buf: *mut F, row: usize, r: u32, w: &[F], dif: bool, neg: bool) {
        let rows = 1usize << r;
        let count = r.div_ceil(2);
        for step in 0..count {
            let s = 2 * if dif { count - 1 - step } else { step };
            let half = 1usize << s;
            let (from, from_stride) = if step == 0 { (mem.src, mem.stride) } else { (buf.cast_const(), row) };
            let (to, to_stride) = if step == count - 1 { (mem.dst, mem.stride) } else { (buf, row) };
            if s + 1 < r {
                for j in (0..rows).filter(|j| j & (3 * half) == 0) {
                    let at = (half - 1 + 3 * (j & (half - 1))) * row;
                    let t = w.as_ptr().add(at);
                    let (x_at, y_at) = (from.add(j * from_stride), to.add(j * to_stride));
                    let mut i = 0;
                    while i < row {
                        let u = [t.add(i), t.add(row + i), t.add(2 * row + i)];
                        let (u, u2, u3) = (
                            _mm512_loadu_si512(u[0] as *const _),
                            _mm512_loadu_si512(u[1] as *const _),
                            _mm512_loadu_si512(u[2] as *const _),
                        );
                        let y = quad(load4(x_at.add(i), half * from_stride), u, u2, u3, dif, neg);
                        store4(y_at.add(i), half * to_stride, y);
                        i += 8;
                    }
                }
                continue;
            }
            for j in (0..rows).filter(|j| j & half == 0) {
                let at = (half - 1 + (j & (half - 1))) * row;
                let (x_lo, x_hi) = (from.add(j * from_stride), from.add((j + half) * from_stride));
                let (y_lo, y_hi) = (to.add(j * to_stride), to.add((j + half) * to_stride));
                runs_to(x_lo, x_hi, y_lo, y_hi, w.as_ptr().add(at), row, dif);
            }
        }
    }

    /// Positions (within 16 elements) of the low halves of the butterflies
    /// with half-block `h`, in order.
    const fn lo_positions(h: usize) -> [i64; 8] {
        let mut out = [0i64; 8];
        let (mut i, mut k) = (0, 0);
        while i < 16 {
            if i & h == 0 {
                out[k] = i as i64;
                k += 1;
            }
            i += 1;
        }
        out
    }

    /// For vector `half` (0 or 1) of the natural order: where each element
    /// sits in (lo, hi) after `lo_positions(h)` split them (0..8 in lo,
    /// 8..16 in hi).
    const fn back_positions(h: usize, half: usize) -> [i64; 8] {
        let mut out = [0i64; 8];
        let mut j = 0;
        while j < 8 {
            let i = half * 8 + j;
            // Rank of the low position among the low positions.
            let low = if i & h == 0 { i } else { i - h };
            let rank = (low & !(2 * h - 1)) / 2 + (low & (h - 1));
            out[j] = if i & h == 0 { rank as i64 } else { 8 + rank as i64 };
            j += 1;
        }
        out
    }

    const LO: [[i64; 8]; 3] = [lo_positions(1), lo_positions(2), lo_positions(4)];
    const BACK0: [[i64; 8]; 3] = [back_positions(1, 0), back_positions(2, 0), back_positions(4, 0)];
    const BACK1: [[i64; 8]; 3] = [back_positions(1, 1), back_positions(2, 1), back_positions(4, 1)];

    /// One layer with half-block 2^s (s < 3) on the 16 elements (v0, v1);
    /// `w` holds the twiddle of each butterfly in `LO` order (unused for
    /// s = 0, whose twiddle is one).
    #[inline(always)]
    unsafe fn small_layer(v: &mut [__m512i; 2], s: usize, w: __m512i, dif: bool) {
        let lo_i = _mm512_loadu_si512(LO[s].as_ptr() as *const _);
        let hi_i = _mm512_add_epi64(lo_i, _mm512_set1_epi64(1 << s));
        let x = _mm512_permutex2var_epi64(v[0], lo_i, v[1]);
        let y = _mm512_permutex2var_epi64(v[0], hi_i, v[1]);
        let (a, b) = if dif {
            let d = sub(x, y);
            (add(x, y), if s == 0 { d } else { mul(d, w) })
        } else {
            let y = if s == 0 { y } else { mul(y, w) };
            (add(x, y), sub(x, y))
        };
        v[0] = _mm512_permutex2var_epi64(a, _mm512_loadu_si512(BACK0[s].as_ptr() as *const _), b);
        v[1] = _mm512_permutex2var_epi64(a, _mm512_loadu_si512(BACK1[s].as_ptr() as *const _), b);
    }

    /// Lanes of `a` and `b` for the block swap of step `s` of an 8 x 8
    /// transpose: `low` is row i's new lanes (its own where j & s is 0,
    /// else row i + s's lane j - s), otherwise row i + s's.
    const fn swap_lanes(s: usize, low: bool) -> [i64; 8] {
        let mut out = [0i64; 8];
        let mut j = 0;
        while j < 8 {
            out[j] = match (j & s == 0, low) {
                (true, true) => j,
                (false, true) => 8 + j - s,
                (true, false) => j + s,
                (false, false) => 8 + j,
            } as i64;
            j += 1;
        }
        out
    }

    const SWAP: [[[i64; 8]; 2]; 3] = [
        [swap_lanes(1, true), swap_lanes(1, false)],
        [swap_lanes(2, true), swap_lanes(2, false)],
        [swap_lanes(4, true), swap_lanes(4, false)],
    ];

    /// m[i][j] <- m[j][i]: the off-diagonal s x s blocks of every 2s x 2s
    /// block swapped, for s = 1, 2, 4 (24 two-source permutes).
    #[inline(always)]
    unsafe fn transpose8(m: &mut [__m512i; 8]) {
        for (k, lanes) in SWAP.iter().enumerate() {
            let s = 1 << k;
            let (lo, hi) =
                (_mm512_loadu_si512(lanes[0].as_ptr() as *const _), _mm512_loadu_si512(lanes[1].as_ptr() as *const _));
            for i in (0..8).filter(|i| i & s == 0) {
                let (a, b) = (m[i], m[i + s]);
                m[i] = _mm512_permutex2var_epi64(a, lo, b);
                m[i + s] = _mm512_permutex2var_epi64(a, hi, b);
            }
        }
    }

    /// A radix-4 step whose twiddles are all one (`quad` with u = 1): the
    /// half-blocks 1 and 2 of an 8-point transform, no multiplication.
    #[inline(always)]
    unsafe fn quad_unit(x: [__m512i; 4], dif: bool, neg: bool) -> [__m512i; 4] {
        if dif {
            let (a, c) = (add(x[0], x[2]), sub(x[0], x[2]));
            let (b, d) = (add(x[1], x[3]), rot(x[1], x[3], neg));
            [add(a, b), sub(a, b), add(c, d), sub(c, d)]
        } else {
            let (a, b) = (add(x[0], x[1]), sub(x[0], x[1]));
            let (c, d) = (add(x[2], x[3]), rot(x[2], x[3], neg));
            [add(a, c), add(b, d), sub(a, c), sub(b, d)]
        }
    }

    /// z w_4, where w_4 = ±2^48 (`neg`: minus).
    #[inline(always)]
    unsafe fn times_w4(z: __m512i, neg: bool) -> __m512i {
        times_2_48(if neg { sub(_mm512_setzero_si512(), z) } else { z })
    }

    /// The DIT half-block-2 layer of eight 8-point transforms in lanes:
    /// pairs (y_i, y_i+2) of each half, twiddles 1 and w_4.
    #[inline(always)]
    unsafe fn half_block_2(y: &mut [__m512i; 8], neg: bool) {
        let [x0, x1, x2, x3, x4, x5, x6, x7] = *y;
        let (t3, t7) = (times_w4(x3, neg), times_w4(x7, neg));
        *y = [add(x0, x2), add(x1, t3), sub(x0, x2), sub(x1, t3), add(x4, x6), add(x5, t7), sub(x4, x6), sub(x5, t7)];
    }

    /// The half-block-4 layer of eight 8-point transforms in lanes: pairs
    /// (y_i, y_i+4) with twiddles 1, w_8, w_4 and w_8^3.
    #[inline(always)]
    unsafe fn half_block_4(y: &mut [__m512i; 8], w8: __m512i, w8_3: __m512i, dif: bool, neg: bool) {
        let [x0, x1, x2, x3, z0, z1, z2, z3] = *y;
        *y = if dif {
            let (d1, d3) = (sub(x1, z1), sub(x3, z3));
            [
                add(x0, z0),
                add(x1, z1),
                add(x2, z2),
                add(x3, z3),
                sub(x0, z0),
                mul(d1, w8),
                rot(x2, z2, neg),
                mul(d3, w8_3),
            ]
        } else {
            let (t1, t2, t3) = (mul(z1, w8), times_w4(z2, neg), mul(z3, w8_3));
            [add(x0, z0), add(x1, t1), add(x2, t2), add(x3, t3), sub(x0, z0), sub(x1, t1), sub(x2, t2), sub(x3, t3)]
        };
    }

    /// The layers below half-block 8 that `small_layers` asks for, when
    /// they are all three (DIF, or DIT from half-block 1) or DIT from
    /// half-block 2, over every 64 elements of `a` (leading multiple of
    /// 64; returns the count done, 0 for other layer sets): eight
    /// 8-element blocks transposed so that lane k holds block k, the
    /// layers run lane-wise with one twiddle per vector (1, w_8, w_4 =
    /// ±2^48, w_8^3; half-blocks 1 and 2 together as one radix-4 step with
    /// no multiplication), then transposed back.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn eight_point(a: &mut [F], tw: &[F], from: u32, dif: bool, neg: bool) -> usize {
        let takes = if dif { from == 3 } else { from <= 1 };
        if !takes {
            return 0;
        }
        let n = a.len() & !63;
        let (w8, w8_3) = (splat(tw[5].value()), splat(tw[7].value()));
        let mut i = 0;
        while i < n {
            let mut y = [_mm512_setzero_si512(); 8];
            for (k, v) in y.iter_mut().enumerate() {
                *v = load(a, i + 8 * k);
            }
            transpose8(&mut y);
            if dif {
                half_block_4(&mut y, w8, w8_3, true, neg);
            }
            if from == 1 {
                half_block_2(&mut y, neg);
            } else {
                let (l, h) =
                    (quad_unit([y[0], y[1], y[2], y[3]], dif, neg), quad_unit([y[4], y[5], y[6], y[7]], dif, neg));
                y = [l[0], l[1], l[2], l[3], h[0], h[1], h[2], h[3]];
            }
            if !dif {
                half_block_4(&mut y, w8, w8_3, false, neg);
            }
            transpose8(&mut y);
            for (k, &v) in y.iter().enumerate() {
                store(a, i + 8 * k, v);
            }
            i += 64;
        }
        n
    }

    /// The layers with half-blocks below 8, in registers, over every 16
    /// elements of `a` (leading multiple of 16; returns the count done):
    /// DIF layers 2^(top-1) down to 1, or DIT layers 2^bottom up to 4
    /// (`from` is top for DIF, bottom for DIT; `tw` is the twiddle table).
    /// `eight_point` takes the leading multiple of 64 where it can.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn small_layers(a: &mut [F], tw: &[F], from: u32, dif: bool) -> usize {
        let done = eight_point(a, tw, from, dif, tw[3].value() != 1 << 48);
        let a = &mut a[done..];
        let n = a.len() & !15;
        let w: [__m512i; 3] = std::array::from_fn(|s| {
            let h = 1usize << s;
            let t: [u64; 8] = std::array::from_fn(|k| tw[h + (LO[s][k] as usize & (h - 1))].value());
            _mm512_loadu_si512(t.as_ptr() as *const _)
        });
        let mut i = 0;
        while i < n {
            let mut v = [load(a, i), load(a, i + 8)];
            if dif {
                for (s, &ws) in w.iter().enumerate().take(from as usize).rev() {
                    small_layer(&mut v, s, ws, true);
                }
            } else {
                for (s, &ws) in w.iter().enumerate().skip(from as usize) {
                    small_layer(&mut v, s, ws, false);
                }
            }
            store(a, i, v[0]);
            store(a, i + 8, v[1]);
            i += 16;
        }
        done + n
    }

    /// out[i] = vals[i / b] for b in 2, 4: each output vector is the
    /// 8 / b values it repeats, loaded (masked, so never past `vals`) and
    /// spread across the lanes by one permute.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn repeat(out: &mut [F], vals: &[F], b: usize) {
        let per = 8 / b;
        let idx = _mm512_set_epi64(
            (7 / b) as i64,
            (6 / b) as i64,
            (5 / b) as i64,
            (4 / b) as i64,
            (3 / b) as i64,
            (2 / b) as i64,
            (1 / b) as i64,
            0,
        );
        let mask = ((1u16 << per) - 1) as __mmask8;
        for (k, at) in (0..out.len()).step_by(8).enumerate() {
            let v = _mm512_maskz_loadu_epi64(mask, vals.as_ptr().add(k * per) as *const _);
            store(out, at, _mm512_permutexvar_epi64(idx, v));
        }
    }

    /// a[i] *= s over the first multiple of 8 elements.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn mul_const(a: &mut [F], s: F) -> usize {
        let n = a.len() & !7;
        let w = splat(s.value());
        let mut i = 0;
        while i < n {
            store(a, i, mul(load(a, i), w));
            i += 8;
        }
        n
    }

    /// a[i] *= t[i] over the first multiple of 8 elements.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn mul_table(a: &mut [F], t: &[F]) -> usize {
        let n = a.len().min(t.len()) & !7;
        let mut i = 0;
        while i < n {
            store(a, i, mul(load(a, i), load(t, i)));
            i += 8;
        }
        n
    }

    /// acc[i] += a[i] * s over the first multiple of 8 elements.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn mul_add_const(acc: &mut [F], a: &[F], s: F) -> usize {
        let n = acc.len().min(a.len()) & !7;
        let w = splat(s.value());
        let mut i = 0;
        while i < n {
            store(acc, i, add(load(acc, i), mul(load(a, i), w)));
            i += 8;
        }
        n
    }

    /// Eight partial sums of a[i] * b[i] over the first multiple of 8
    /// elements, and that count.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn dot(a: &[F], b: &[F]) -> ([F; 8], usize) {
        let n = a.len().min(b.len()) & !7;
        let mut acc = _mm512_setzero_si512();
        let mut i = 0;
        while i < n {
            acc = add(acc, mul(load(a, i), load(b, i)));
            i += 8;
        }
        let mut out = [F::ZERO; 8];
        store(&mut out, 0, acc);
        (out, n)
    }

    #[inline(always)]
    unsafe fn op<const OP: u8>(x: __m512i, y: __m512i) -> __m512i {
        match OP {
            super::ADD => add(x, y),
            super::SUB => sub(x, y),
            _ => mul(x, y),
        }
    }

    /// out[i] = a[i] op b[i] over the first multiple of 8 elements; a
    /// `None` operand is the scalar `s` in every lane.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn binop<const OP: u8>(out: &mut [F], a: Option<&[F]>, b: Option<&[F]>, s: F) -> usize {
        let n = out.len() & !7;
        let k = splat(s.value());
        let mut i = 0;
        while i < n {
            // `match`, not `map_or`: no intrinsic inside a closure (see
            // `load4`).
            let x = match a {
                Some(a) => load(a, i),
                None => k,
            };
            let y = match b {
                Some(b) => load(b, i),
                None => k,
            };
            store(out, i, op::<OP>(x, y));
            i += 8;
        }
        n
    }

    #[cfg(test)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn ops(a: &[F; 8], b: &[F; 8]) -> [[F; 8]; 3] {
        let (x, y) = (load(a, 0), load(b, 0));
        let mut out = [[F::ZERO; 8]; 3];
        store(&mut out[0], 0, add(x, y));
        store(&mut out[1], 0, sub(x, y));
        store(&mut out[2], 0, mul(x, y));
        out
    }
}

/// DIF butterflies (lo, hi) <- (lo + hi, (lo - hi) w) over the leading
/// multiple of 8; returns the count done (0 without AVX-512F).
#[inline]
pub(crate) fn dif(lo: &mut [F], hi: &mut [F], tw: &[F], simd: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is only true when `available()` said AVX-512F is
        // present, and the kernel stays within the three slices.
        return unsafe { avx512::dif(lo, hi, tw) };
    }
    let _ = (lo, hi, tw, simd);
    0
}

/// One whole butterfly layer (half-block h, twiddles `t`) over `a`, in one
/// vector kernel; false (nothing done) without AVX-512F or when h is not a
/// multiple of 8.
#[inline]
pub(crate) fn layer(a: &mut [F], h: usize, t: &[F], dif: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && h.is_multiple_of(8) && a.len().is_multiple_of(2 * h) && t.len() >= h {
        // SAFETY: AVX-512F is present; every block of 2h lies in `a` and
        // reads h twiddles of `t`.
        unsafe { avx512::layer(a, h, t, dif) };
        return true;
    }
    let _ = (a, h, t, dif);
    false
}

/// Two whole butterfly layers (half-blocks h and 2h) over `a` as radix-4
/// steps (see `avx512::quad`); `pows` holds w_4h^i, its square and cube
/// for i < h, and `neg` says the fourth root of unity is -2^48. False
/// (nothing done) without AVX-512F or when h is not a multiple of 8.
#[inline]
pub(crate) fn layer_pair(a: &mut [F], h: usize, pows: [&[F]; 3], dif: bool, neg: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && h.is_multiple_of(8) && a.len().is_multiple_of(4 * h) && pows.iter().all(|t| t.len() >= h) {
        // SAFETY: AVX-512F is present; every block of 4h lies in `a` and
        // reads h entries of each table.
        unsafe { avx512::layer_pair(a, h, pows, dif, neg) };
        return true;
    }
    let _ = (a, h, pows, dif, neg);
    false
}

/// A fused tile's rows in memory: row j is read at src + j stride and
/// written at dst + j stride.
#[derive(Clone, Copy)]
pub(crate) struct Rows {
    pub src: *const F,
    pub dst: *mut F,
    pub stride: usize,
}

/// A fused tile's layers (see `avx512::tile`) in one vector kernel; false
/// (nothing done) without AVX-512F or when `row` is not a multiple of 8.
///
/// # Safety
/// For j < 2^r, `mem.src` is valid for reads and `mem.dst` for writes of
/// `row` elements at j * stride, no other thread touches those elements,
/// and the two are either the same rows or do not overlap; `buf` is valid
/// for reads and writes of 2^r * row elements.
#[inline]
pub(crate) unsafe fn tile(mem: Rows, buf: *mut F, row: usize, r: u32, w: &[F], dif: bool, neg: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && row.is_multiple_of(8) && r >= 1 && w.len() >= ((1 << r) - 1) * row {
        // SAFETY: AVX-512F is present; the rows are the caller's (above)
        // and every run of twiddles read, at most (2^r - 1) row, is in `w`.
        unsafe { avx512::tile(mem, buf, row, r, w, dif, neg) };
        return true;
    }
    let _ = (mem, buf, row, r, w, dif, neg);
    false
}

/// The butterfly layers with half-blocks below 8 over `a` in registers
/// (see `avx512::small_layers`); returns the count done (a multiple of 16,
/// 0 without AVX-512F). `tw` must cover half-blocks up to 4 (8 entries).
#[inline]
pub(crate) fn small_layers(a: &mut [F], tw: &[F], from: u32, dif: bool, simd: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    if simd {
        assert!(tw.len() >= 8 && from <= 3);
        // SAFETY: `simd` is only true when AVX-512F is present; the kernel
        // stays within `a` and reads tw[1..8] (asserted above).
        return unsafe { avx512::small_layers(a, tw, from, dif) };
    }
    let _ = (a, tw, from, dif, simd);
    0
}

/// out[i] = vals[i / b] in one vector kernel when b is 2 or 4 and `out`
/// is whole vectors of them; false (nothing done) otherwise.
#[inline]
pub(crate) fn repeat(out: &mut [F], vals: &[F], b: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if available() && (b == 2 || b == 4) && out.len().is_multiple_of(8) && vals.len() >= out.len() / b {
        // SAFETY: AVX-512F is present; output vector k reads vals[k 8 / b
        // ..][..8 / b], inside `vals` (checked above), and writes out[8 k..][..8].
        unsafe { avx512::repeat(out, vals, b) };
        return true;
    }
    let _ = (out, vals, b);
    false
}

/// a[i] *= s, vectorised where possible.
pub(crate) fn scale(a: &mut [F], s: F) {
    let simd = available();
    for c in a.chunks_mut(1024) {
        let done = mul_const(c, s, simd);
        c[done..].iter_mut().for_each(|x| *x *= s);
    }
}

/// a[i] *= t[i] over the common length, vectorised where possible.
pub(crate) fn mul_by(a: &mut [F], t: &[F]) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: AVX-512F is present; the kernel stays within both slices.
        done = unsafe { avx512::mul_table(a, t) };
    }
    a[done..].iter_mut().zip(&t[done..]).for_each(|(x, &k)| *x *= k);
}

/// a[i] *= s, vector part; as `dif`.
#[inline]
fn mul_const(a: &mut [F], s: F, simd: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: as in `dif`.
        return unsafe { avx512::mul_const(a, s) };
    }
    let _ = (a, s, simd);
    0
}

pub(crate) const ADD: u8 = 0;
pub(crate) const SUB: u8 = 1;
pub(crate) const MUL: u8 = 2;

/// out[i] = a[i] OP b[i] (ADD, SUB or MUL), where a `None` operand is the
/// scalar `s` at every index (at most one operand may be `None`); the
/// slices given are at least `out.len()` long.
pub(crate) fn binop<const OP: u8>(out: &mut [F], a: Option<&[F]>, b: Option<&[F]>, s: F) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if available() {
        assert!(a.is_none_or(|a| a.len() >= out.len()) && b.is_none_or(|b| b.len() >= out.len()));
        // SAFETY: AVX-512F is present; the reads stay within `a` and `b`,
        // which are at least as long as `out` (asserted above).
        done = unsafe { avx512::binop::<OP>(out, a, b, s) };
    }
    for (i, o) in out.iter_mut().enumerate().skip(done) {
        let x = a.map_or(s, |a| a[i]);
        let y = b.map_or(s, |b| b[i]);
        *o = match OP {
            ADD => x + y,
            SUB => x - y,
            _ => x * y,
        };
    }
}

/// acc[i] += a[i] * s, vectorised where possible.
pub(crate) fn mul_add_const(acc: &mut [F], a: &[F], s: F) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: AVX-512F is present; the kernel stays within both slices.
        done = unsafe { avx512::mul_add_const(acc, a, s) };
    }
    acc[done..].iter_mut().zip(&a[done..]).for_each(|(x, &y)| *x += y * s);
}

/// sum_i a[i] * b[i] over the common length, vectorised where possible.
pub(crate) fn dot(a: &[F], b: &[F]) -> F {
    let n = a.len().min(b.len());
    let (mut sum, mut done) = (F::ZERO, 0);
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: AVX-512F is present; the kernel stays within both slices.
        let (lanes, d) = unsafe { avx512::dot(a, b) };
        sum = lanes.into_iter().sum();
        done = d;
    }
    a[done..n].iter().zip(&b[done..n]).fold(sum, |s, (&x, &y)| s + x * y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::field::P;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn lanes_match_scalar_arithmetic_at_the_edges() {
        if !available() {
            return;
        }
        let edges =
            [0, 1, 2, 0xFFFF_FFFF, 1 << 32, (1 << 32) + 1, P - 1, P - 2, P - 0xFFFF_FFFF, 1 << 63, (1 << 63) - 1];
        let mut vals: Vec<u64> = edges.to_vec();
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..4000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            vals.push(s % P);
        }
        for (i, &x) in vals.iter().enumerate() {
            let a: [F; 8] = std::array::from_fn(|k| F::new(vals[(i + k * 7) % vals.len()]));
            let b: [F; 8] = std::array::from_fn(|k| F::new(if k == 0 { x } else { vals[(i * 3 + k) % vals.len()] }));
            // SAFETY: AVX-512F is present (checked above).
            let [add, sub, mul] = unsafe { avx512::ops(&a, &b) };
            for k in 0..8 {
                assert_eq!(add[k], a[k] + b[k], "{:?} + {:?}", a[k], b[k]);
                assert_eq!(sub[k], a[k] - b[k], "{:?} - {:?}", a[k], b[k]);
                assert_eq!(mul[k], a[k] * b[k], "{:?} * {:?}", a[k], b[k]);
            }
        }
        for &x in &edges {
            for &y in &edges {
                let (a, b) = ([F::new(x); 8], [F::new(y); 8]);
                // SAFETY: as above.
                let [add, sub, mul] = unsafe { avx512::ops(&a, &b) };
                assert_eq!((add[0], sub[0], mul[0]), (a[0] + b[0], a[0] - b[0], a[0] * b[0]));
            }
        }
    }

    #[test]
    fn slice_helpers_match_scalar_loops_with_tails() {
        let mut s = 0x0123_4567_89AB_CDEFu64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            F::new(s)
        };
        for len in [0usize, 1, 7, 8, 9, 31, 64, 100] {
            let a: Vec<F> = (0..len).map(|_| next()).collect();
            let b: Vec<F> = (0..len).map(|_| next()).collect();
            let k = next();
            assert_eq!(dot(&a, &b), a.iter().zip(&b).map(|(&x, &y)| x * y).sum::<F>());
            let mut acc = b.clone();
            mul_add_const(&mut acc, &a, k);
            assert!(acc.iter().zip(&a).zip(&b).all(|((&r, &x), &y)| r == y + x * k));
            let mut o = vec![F::ZERO; len];
            binop::<ADD>(&mut o, Some(&a), Some(&b), F::ZERO);
            assert!(o.iter().zip(&a).zip(&b).all(|((&r, &x), &y)| r == x + y));
            binop::<SUB>(&mut o, None, Some(&b), k);
            assert!(o.iter().zip(&b).all(|(&r, &y)| r == k - y));
            binop::<SUB>(&mut o, Some(&a), None, k);
            assert!(o.iter().zip(&a).all(|(&r, &x)| r == x - k));
            binop::<MUL>(&mut o, Some(&a), Some(&b), F::ZERO);
            assert!(o.iter().zip(&a).zip(&b).all(|((&r, &x), &y)| r == x * y));
            let mut sc = a.clone();
            scale(&mut sc, k);
            assert!(sc.iter().zip(&a).all(|(&r, &x)| r == x * k));
            let mut by = a.clone();
            mul_by(&mut by, &b);
            assert!(by.iter().zip(&a).zip(&b).all(|((&r, &x), &y)| r == x * y));
        }
    }
}
