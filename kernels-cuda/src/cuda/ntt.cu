// Radix-2 NTT passes over batched columns. One launch does k consecutive
// butterfly levels (bits [l0, l0+k) of the index) of every column in shared
// memory; blocks own tiles of 2^c consecutive low indices so global
// accesses are coalesced. DIT (bit-reversed in, natural out) runs levels
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

// One radix-4 group: elements e0, e0 + d1, e0 + d2, e0 + d1 + d2 of s with
// twiddles wa (level r) and wb0, wb1 (level r + 1). DIT runs r then r+1,
// DIF r+1 then r.
__device__ __forceinline__ void ntt_group4(u64* s, u32 e0, u32 d1, u32 d2, u64 wa, u64 wb0, u64 wb1, u64 dif) {
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

// Levels r and r+1 of a pass at once, four elements in registers per group
// (half the shared-memory traffic and barriers of two radix-2 levels, three
// twiddle loads for four butterflies). Group b is lane b mod 2^c of pair
// b / 2^c, whose low r bits pick the twiddles. The direction is a template
// argument, so the butterflies carry no branch on it.
template <bool DIF>
__device__ __forceinline__ void ntt_radix4(u64* s, u32 E, u32 r, u32 c, u64 l0, u64 lo_tile,
                                           const u64* __restrict__ tw, u64 tw_log, u64 lanes_high) {
    const u64 dif = DIF;
    const u32 cmask = (1u << c) - 1;
    const u32 rmask = (1u << r) - 1;
    const u32 d1 = 1u << (r + c);
    const u32 d2 = 1u << (r + 1 + c);
    const u32 sa = tw_log - (l0 + r + 1);
    const u32 sb = sa - 1;
    const u32 B = blockDim.x;
    // Group b's first element and its three twiddles.
    auto locate = [&](u32 b, u32& e0, u64& wa, u64& wb0, u64& wb1) {
        u32 lo = b & cmask;
        u32 g = b >> c;
        u32 q0 = ((g >> r) << (r + 2)) | (g & rmask);
        e0 = (q0 << c) | lo;
        u64 tl = lanes_high ? 0ull : ((lo_tile << c) | lo);
        u64 ja = ((u64)(q0 & rmask) << l0) | tl;
        u64 jb = ((u64)((q0 & rmask) + (1u << r)) << l0) | tl;
        wa = tw[ja << sa];
        wb0 = tw[ja << sb];
        wb1 = tw[jb << sb];
    };
    // A thread's groups are B apart. When 2^(r+c) divides B (a power of
    // two) and B divides the group count, adding B to b keeps its low r + c
    // bits, so every group of the thread has the same twiddles and sits 4B
    // elements after the previous one: both are worked out once.
    if ((B & (B - 1)) == 0 && (1u << (r + c)) <= B && ((E >> 2) & (B - 1)) == 0) {
        u32 e0;
        u64 wa, wb0, wb1;
        locate(threadIdx.x, e0, wa, wb0, wb1);
#pragma unroll 2
        for (; e0 < E; e0 += 4 * B) ntt_group4(s, e0, d1, d2, wa, wb0, wb1, dif);
        return;
    }
    for (u32 b = threadIdx.x; b < (E >> 2); b += B) {
        u32 e0;
        u64 wa, wb0, wb1;
        locate(b, e0, wa, wb0, wb1);
        ntt_group4(s, e0, d1, d2, wa, wb0, wb1, dif);
    }
}

extern "C" __global__ void ntt_pass(const u64* __restrict__ src, u64* dst, u64 src_stride, u64 dst_stride,
                                    u64 log_n, u64 l0, u64 k, u64 c, u64 dif, const u64* __restrict__ tw,
                                    u64 tw_log, u64 load_mode, u64 log_src_n, u64 log_blowup,
                                    const u64* __restrict__ twist_lo, const u64* __restrict__ twist_hi,
                                    u64 twist_lo_bits, u64 load_scale, u64 store_scale, u64 radix,
                                    u64 lanes_high) {
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
    // A thread's elements are B apart: when 2^c divides B, the next one's
    // position is delta further (its lane bits stay, its level bits grow by
    // B / 2^c), so the loops below add instead of recomputing.
    const u32 B = blockDim.x;
    const bool stepped = (B & cmask) == 0;
    const u64 delta = lanes_high ? (u64)(B >> c) : ((u64)(B >> c) << l0);
    const u64 first = position(threadIdx.x);
    const u64* sc = src + col * src_stride;
    u64 p = first;
    for (u32 e = threadIdx.x; e < E; e += B, p += delta) {
        u64 i = stepped ? p : position(e);
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
    // Levels in order (DIT upwards, DIF downwards); pairs of levels run as
    // radix-4 groups when `radix` is 4. (Radix-8 groups, three levels per
    // round trip, measured no faster on the H200: docs/gpu/logs.)
    u32 done = 0;
    while (done < k) {
        if (radix >= 4 && done + 1 < k) {
            const u32 r = dif ? (k - 2 - done) : done;
            if (dif) {
                ntt_radix4<true>(s, E, r, c, l0, lo_tile, tw, tw_log, lanes_high);
            } else {
                ntt_radix4<false>(s, E, r, c, l0, lo_tile, tw, tw_log, lanes_high);
            }
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
    p = first;
    for (u32 e = threadIdx.x; e < E; e += B, p += delta) {
        u64 i = stepped ? p : position(e);
        u64 v = s[e];
        if (store_scale != 1ull) v = f_mul(v, store_scale);
        dc[i] = v;
    }
}

// Row k < n of each column (blockIdx.y, `stride` apart) times factor *
// shift^k, from the two tables of backend-cuda's `Twist` (the low lo_bits
// bits of k index lo, the rest hi).
extern "C" __global__ void mul_twist(u64* m, u64 stride, u64 n, const u64* __restrict__ lo,
                                     const u64* __restrict__ hi, u64 lo_bits) {
    const u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    u64* col = m + blockIdx.y * stride;
    col[k] = f_mul(col[k], f_mul(lo[k & ((1ull << lo_bits) - 1)], hi[k >> lo_bits]));
}

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
