// NTT passes over batched columns. One launch does k consecutive
// butterfly levels (bits [l0, l0+k) of the index) of every column in shared
// memory; blocks own tiles of 2^c consecutive low indices so global
// accesses are coalesced. The levels run in rounds, each a shared-memory
// round trip: with `radix` 8..32, groups of up to 2^5 elements in
// registers whose inner twiddles are shifts (ntt_group); with 4 or 2,
// radix-2 butterflies, two levels a round at 4. DIT (bit-reversed in, natural out) runs levels
// upwards, DIF (natural in, bit-reversed out) downwards. The first pass may
// load through a bit-reversal (natural-order NTT) or expand a bit-reversed
// coefficient vector into a zero-padded LDE whose first log_blowup levels
// are skipped (each 2^log_blowup-chunk after them is constant).
//
// With `lanes_high` (the first pass of a natural-order transform), a
// block's 2^c lanes are not consecutive positions but the positions whose
// bit-reversed indices are 2^c consecutive input elements: the gather then
// reads runs of 2^c contiguous words instead of one word per 2^(L-k)
// stride, and each lane stores a contiguous run of 2^k positions. Its
// twiddles depend on the level bits only (the lanes sit above them).
//
// load_mode: 0 plain, 1 bit-reversed gather, 2 expand from bit-reversed
// coefficients, 3 expand from natural-order coefficients; 4 and 5 are 2 and
// 3 zero-padded instead of expanded (only index multiples of 2^log_blowup
// hold a value), for transforms that run every level from 0 so that their
// first pass reads and writes whole contiguous tiles.
// One radix-2 butterfly: DIT (x, y) -> (x + wy, x - wy), DIF (x, y) -> (x + y, (x - y)w).
__device__ __forceinline__ void ntt_bfly(u64& x, u64& y, u64 w, u64 dif) {
    if (dif) {
        u64 t = f_add(x, y);
        y = f_mul(f_sub(x, y), w);
        x = t;
    } else {
        u64 m = f_mul(y, w);
        y = f_sub(x, m);
        x = f_add(x, m);
    }
}

// Levels r and r+1 of a pass at once, four elements in registers per group
// (half the shared-memory traffic and barriers of two radix-2 levels, three
// twiddle loads for four butterflies). DIT runs r then r+1, DIF r+1 then r.
__device__ __forceinline__ void ntt_radix4(u64* s, u32 E, u32 r, u32 c, u64 l0, u64 lo_tile, u64 dif,
                                           const u64* __restrict__ tw, u64 tw_log, u64 lanes_high) {
    const u32 cmask = (1u << c) - 1;
    const u32 rmask = (1u << r) - 1;
    const u32 d1 = 1u << (r + c);
    const u32 d2 = 1u << (r + 1 + c);
    const u32 sa = tw_log - (l0 + r + 1);
    const u32 sb = sa - 1;
    for (u32 b = threadIdx.x; b < (E >> 2); b += blockDim.x) {
        u32 lo = b & cmask;
        u32 g = b >> c;
        u32 q0 = ((g >> r) << (r + 2)) | (g & rmask);
        u32 e0 = (q0 << c) | lo;
        u64 tl = lanes_high ? 0ull : ((lo_tile << c) | lo);
        u64 ja = ((u64)(q0 & rmask) << l0) | tl;
        u64 jb = ((u64)((q0 & rmask) + (1u << r)) << l0) | tl;
        u64 wa = tw[ja << sa];
        u64 wb0 = tw[ja << sb];
        u64 wb1 = tw[jb << sb];
        u64 x0 = s[e0], x1 = s[e0 + d1], x2 = s[e0 + d2], x3 = s[e0 + d1 + d2];
        if (dif) {
            ntt_bfly(x0, x2, wb0, 1);
            ntt_bfly(x1, x3, wb1, 1);
            ntt_bfly(x0, x1, wa, 1);
            ntt_bfly(x2, x3, wa, 1);
        } else {
            ntt_bfly(x0, x1, wa, 0);
            ntt_bfly(x2, x3, wa, 0);
            ntt_bfly(x0, x2, wb0, 0);
            ntt_bfly(x1, x3, wb1, 0);
        }
        s[e0] = x0;
        s[e0 + d1] = x1;
        s[e0 + d2] = x2;
        s[e0 + d1 + d2] = x3;
    }
}

// The 64th roots of unity of the transforms as powers of two: w_64 = 2^39
// and w_64^-1 = 2^153 for backend-api's roots (backend-cuda's tests check).
#define GL_ROOT64_LOG2 39u
#define GL_ROOT64_INV_LOG2 153u

// w_(2^(i+1))^j (i < 6) as the power of two it is.
template <bool INV>
__device__ __forceinline__ u32 small_root_log2(u32 i, u32 j) {
    return ((INV ? GL_ROOT64_INV_LOG2 : GL_ROOT64_LOG2) * ((32u >> i) * j)) % 192u;
}

// Level I of a 2^M-point transform in registers whose roots are 2^M-th
// roots (M <= 6), so every twiddle is a shift. Levels are template
// parameters so that every loop has a constant trip count and unrolls
// (the array then stays in registers).
template <int M, bool INV, int I, bool DIF>
__device__ __forceinline__ void small_level(u64 (&v)[1 << M]) {
#pragma unroll
    for (int b = 0; b < (1 << M); b += 2 << I) {
#pragma unroll
        for (int j = 0; j < (1 << I); j++) {
            const u32 sh = small_root_log2<INV>(I, j);
            u64 x = v[b + j], y = v[b + j + (1 << I)];
            if (DIF) {
                v[b + j] = f_add(x, y);
                v[b + j + (1 << I)] = f_mul_pow2(f_sub(x, y), sh);
            } else {
                u64 m = f_mul_pow2(y, sh);
                v[b + j] = f_add(x, m);
                v[b + j + (1 << I)] = f_sub(x, m);
            }
        }
    }
}

// DIT, levels upwards: bit-reversed slots to natural order.
template <int M, bool INV, int I = 0>
__device__ __forceinline__ void small_dit(u64 (&v)[1 << M]) {
    if constexpr (I < M) {
        small_level<M, INV, I, false>(v);
        small_dit<M, INV, I + 1>(v);
    }
}

// DIF, levels downwards: natural order to bit-reversed slots.
template <int M, bool INV, int I = M - 1>
__device__ __forceinline__ void small_dif(u64 (&v)[1 << M]) {
    if constexpr (I >= 0) {
        small_level<M, INV, I, true>(v);
        small_dif<M, INV, I - 1>(v);
    }
}

// Levels r..r+M-1 of a pass at once, 2^M elements in registers per group.
// By Cooley-Tukey, those M radix-2 levels on the group at low index j
// (< 2^(l0+r)) are a twist of slot t by w_(2^(l0+r+M))^(j * brev_M(t)) and
// a 2^M-point transform whose twiddles are shifts (DIT twists first, DIF
// last): one multiplication per element instead of M/2, and one
// shared-memory round trip instead of M/2.
template <int M, bool INV>
__device__ __forceinline__ void ntt_group(u64* s, u32 E, u32 r, u32 c, u64 l0, u64 lo_tile, u64 dif,
                                          const u64* __restrict__ tw, u32 tw_log, u64 lanes_high) {
    constexpr u32 G = 1u << M;
    const u32 cmask = (1u << c) - 1;
    const u32 rmask = (1u << r) - 1;
    const u32 d = 1u << (r + c);
    const u32 log_b = (u32)l0 + r + M;
    for (u32 g = threadIdx.x; g < (E >> M); g += blockDim.x) {
        const u32 lo = g & cmask;
        const u32 q = g >> c;
        const u32 e0 = ((((q >> r) << (r + M)) | (q & rmask)) << c) | lo;
        const u64 j = ((u64)(q & rmask) << l0) | (lanes_high ? 0ull : ((lo_tile << c) | lo));
        u64 v[G];
#pragma unroll
        for (u32 t = 0; t < G; t++) v[t] = s[e0 + t * d];
        if (dif) small_dif<M, INV>(v);
        if (j != 0) {
#pragma unroll
            for (u32 t = 1; t < G; t++) v[t] = f_mul(v[t], root_pow(tw, tw_log, log_b, j * (__brev(t) >> (32 - M))));
        }
        if (!dif) small_dit<M, INV>(v);
#pragma unroll
        for (u32 t = 0; t < G; t++) s[e0 + t * d] = v[t];
    }
}

// Round of m levels (1 <= m <= MMAX).
template <int MMAX, bool INV>
__device__ __forceinline__ void ntt_group_m(u32 m, u64* s, u32 E, u32 r, u32 c, u64 l0, u64 lo_tile, u64 dif,
                                            const u64* __restrict__ tw, u32 tw_log, u64 lanes_high) {
#define NTT_GROUP(M)                                                                                                 \
    if constexpr (MMAX >= M)                                                                                         \
        if (m == M) return ntt_group<M, INV>(s, E, r, c, l0, lo_tile, dif, tw, tw_log, lanes_high);
    NTT_GROUP(5)
    NTT_GROUP(4)
    NTT_GROUP(3)
    NTT_GROUP(2)
#undef NTT_GROUP
    ntt_group<1, INV>(s, E, r, c, l0, lo_tile, dif, tw, tw_log, lanes_high);
}

// The pass itself; MMAX 0 runs radix-2 or radix-4 rounds (`radix`), 3..5
// rounds of register groups of at most 2^MMAX elements.
template <int MMAX>
__device__ __forceinline__ void ntt_pass_body(const u64* __restrict__ src, u64* dst, u64 src_stride, u64 dst_stride,
                                              u64 log_n, u64 l0, u64 k, u64 c, u64 dif, const u64* __restrict__ tw,
                                              u64 tw_log, u64 load_mode, u64 log_src_n, u64 log_blowup,
                                              const u64* __restrict__ twist_lo, const u64* __restrict__ twist_hi,
                                              u64 twist_lo_bits, u64 load_scale, u64 store_scale, u64 radix,
                                              u64 lanes_high, u64 inv_roots) {
    extern __shared__ u64 s[];
    const u32 E = 1u << (k + c);
    const u64 col = blockIdx.y;
    const u64 t = blockIdx.x;
    const u32 lo_tiles_log = lanes_high ? 0u : (u32)(l0 - c);
    const u64 lo_tile = t & ((1ull << lo_tiles_log) - 1);
    const u64 hi = t >> lo_tiles_log;
    const u64 base = (hi << (l0 + k)) + (lo_tile << c);
    const u32 cmask = (1u << c) - 1;
    const u32 hbits = lanes_high ? (u32)(log_n - k - c) : 0u;
    const u64 mrev = lanes_high ? brev_bits(t, hbits) : 0ull;
    // The position of shared-memory element e.
    auto position = [&](u32 e) -> u64 {
        if (lanes_high) return ((mrev | (brev_bits(e & cmask, c) << hbits)) << k) | (e >> c);
        return base + ((u64)(e >> c) << l0) + (e & cmask);
    };
    const u64* sc = src + col * src_stride;
    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u64 i = position(e);
        u64 v;
        if (load_mode == 0) {
            v = sc[i];
        } else if (load_mode == 1) {
            v = sc[brev_bits(i, log_n)];
        } else if (load_mode >= 4 && (i & ((1ull << log_blowup) - 1)) != 0) {
            v = 0;
        } else {
            u64 m = i >> log_blowup;
            u64 kk = brev_bits(m, log_src_n);
            v = sc[(load_mode == 2 || load_mode == 4) ? m : kk];
            if (load_scale != 1ull) v = f_mul(v, load_scale);
            if (twist_lo != 0) {
                u64 lo_mask = (1ull << twist_lo_bits) - 1;
                v = f_mul(v, f_mul(twist_lo[kk & lo_mask], twist_hi[kk >> twist_lo_bits]));
            }
        }
        s[e] = v;
    }
    __syncthreads();
    const u32 half = E >> 1;
    u32 done = 0;
    if constexpr (MMAX > 0) {
        // Balanced rounds of at most MMAX levels, fewer where the block
        // has more threads than groups of that size.
        const int spare = (int)(k + c) - (31 - __clz(blockDim.x));
        const u32 mmax = (u32)min(MMAX, max(spare, 1));
        const u32 rounds = ((u32)k + mmax - 1) / mmax;
        for (u32 i = 0; i < rounds; i++) {
            const u32 m = ((u32)k - done + (rounds - i) - 1) / (rounds - i);
            const u32 r = dif ? (u32)k - done - m : done;
            if (inv_roots) {
                ntt_group_m<MMAX, true>(m, s, E, r, c, l0, lo_tile, dif, tw, tw_log, lanes_high);
            } else {
                ntt_group_m<MMAX, false>(m, s, E, r, c, l0, lo_tile, dif, tw, tw_log, lanes_high);
            }
            done += m;
            __syncthreads();
        }
    }
    // Levels in order (DIT upwards, DIF downwards); pairs of levels run as
    // radix-4 groups when `radix` is 4.
    while (done < k) {
        if (radix >= 4 && done + 1 < k) {
            const u32 r = dif ? (k - 2 - done) : done;
            ntt_radix4(s, E, r, c, l0, lo_tile, dif, tw, tw_log, lanes_high);
            done += 2;
            __syncthreads();
            continue;
        }
        const u32 r = dif ? (k - 1 - done) : done;
        const u32 rmask = (1u << r) - 1;
        const u32 shift = tw_log - (l0 + r + 1);
        for (u32 b = threadIdx.x; b < half; b += blockDim.x) {
            u32 lo = b & cmask;
            u32 q = b >> c;
            u32 a0 = ((q >> r) << (r + 1)) | (q & rmask);
            u32 e0 = (a0 << c) | lo;
            u32 e1 = e0 + (1u << (r + c));
            u64 j = ((u64)(a0 & rmask) << l0) | (lanes_high ? 0ull : ((lo_tile << c) | lo));
            u64 w = tw[j << shift];
            u64 x = s[e0];
            u64 y = s[e1];
            ntt_bfly(x, y, w, dif);
            s[e0] = x;
            s[e1] = y;
        }
        done += 1;
        __syncthreads();
    }
    u64* dc = dst + col * dst_stride;
    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u64 i = position(e);
        u64 v = s[e];
        if (store_scale != 1ull) v = f_mul(v, store_scale);
        dc[i] = v;
    }
}

#define NTT_PASS_PARAMS                                                                                              \
    const u64 *__restrict__ src, u64 *dst, u64 src_stride, u64 dst_stride, u64 log_n, u64 l0, u64 k, u64 c, u64 dif, \
        const u64 *__restrict__ tw, u64 tw_log, u64 load_mode, u64 log_src_n, u64 log_blowup,                        \
        const u64 *__restrict__ twist_lo, const u64 *__restrict__ twist_hi, u64 twist_lo_bits, u64 load_scale,       \
        u64 store_scale, u64 radix, u64 lanes_high, u64 inv_roots
#define NTT_PASS_ARGS                                                                                                \
    src, dst, src_stride, dst_stride, log_n, l0, k, c, dif, tw, tw_log, load_mode, log_src_n, log_blowup, twist_lo,  \
        twist_hi, twist_lo_bits, load_scale, store_scale, radix, lanes_high, inv_roots
// One kernel per round kind: each gets the registers its own rounds need.
extern "C" __global__ void ntt_pass(NTT_PASS_PARAMS) { ntt_pass_body<0>(NTT_PASS_ARGS); }
extern "C" __global__ void ntt_pass_r8(NTT_PASS_PARAMS) { ntt_pass_body<3>(NTT_PASS_ARGS); }
extern "C" __global__ void ntt_pass_r16(NTT_PASS_PARAMS) { ntt_pass_body<4>(NTT_PASS_ARGS); }
extern "C" __global__ void ntt_pass_r32(NTT_PASS_PARAMS) { ntt_pass_body<5>(NTT_PASS_ARGS); }

// Sets *flag when any of the first `cols` columns (stride `stride`) holds a
// non-zero value at a row in [from, height).
extern "C" __global__ void any_nonzero_tail(const u64* __restrict__ m, u64 stride, u64 height, u64 from, u64 cols,
                                            u32* flag) {
    u64 span = height - from;
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= span * cols) return;
    u64 col = idx / span;
    u64 row = from + idx % span;
    if (m[col * stride + row] != 0ull) atomicOr(flag, 1u);
}

// Row k of each of `cols` columns of dst (m = 2^log_m rows) is the sum over
// r of src[k + r * m] * c^r (columns of 2^log_n): each column's polynomial
// modulo X^m - c, by Horner from the last slice.
extern "C" __global__ void fold_coeffs(const u64* __restrict__ src, u64* dst, u64 log_n, u64 log_m, u64 cols,
                                       u64 c) {
    const u64 n = 1ull << log_n, m = 1ull << log_m;
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= m * cols) return;
    const u64* s = src + (idx >> log_m) * n + (idx & (m - 1));
    u64 off = n - m;
    u64 acc = s[off];
    while (off > 0) {
        off -= m;
        acc = f_add(f_mul(acc, c), s[off]);
    }
    dst[idx] = acc;
}

// Swaps rows i and bitrev(i) of each of `cols` columns (2^log_n rows,
// stride 2^log_n) in place: one thread a pair, grid (rows, columns).
extern "C" __global__ void bitrev_permute(u64* m, u64 log_n, u64 cols) {
    const u64 n = 1ull << log_n;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 col = blockIdx.y;
    if (i >= n || col >= cols) return;
    u64 j = brev_bits(i, (u32)log_n);
    if (i < j) {
        u64* c = m + col * n;
        u64 t = c[i];
        c[i] = c[j];
        c[j] = t;
    }
}

// Row k of each of `cols` columns of dst (2^log_m rows) is row
// (first + k << log_stride) mod 2^log_n of src: a strided piece of rows.
extern "C" __global__ void stride_rows(const u64* __restrict__ src, u64* dst, u64 log_n, u64 log_m, u64 log_stride,
                                       u64 first, u64 cols) {
    const u64 n = 1ull << log_n, m = 1ull << log_m;
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= m * cols) return;
    u64 col = idx >> log_m, k = idx & (m - 1);
    dst[idx] = src[col * n + ((first + (k << log_stride)) & (n - 1))];
}

// Row j + k << log_count of each of `cols` columns of dst (2^log_m <<
// log_count rows) is row k of the piece src (2^log_m rows): piece j of an
// interleave.
extern "C" __global__ void interleave_piece(const u64* __restrict__ src, u64* dst, u64 log_m, u64 log_count, u64 j,
                                            u64 cols) {
    const u64 m = 1ull << log_m;
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= m * cols) return;
    u64 col = idx >> log_m, k = idx & (m - 1);
    dst[(col << (log_m + log_count)) + j + (k << log_count)] = src[idx];
}
