// Radix-2 NTT passes over batched columns. One launch does k consecutive
// butterfly levels (bits [l0, l0+k) of the index) of every column in shared
// memory; blocks own tiles of 2^c consecutive low indices so global
// accesses are coalesced. DIT (bit-reversed in, natural out) runs levels
// upwards, DIF (natural in, bit-reversed out) downwards. The first pass may
// load through a bit-reversal (natural-order NTT) or expand a bit-reversed
// coefficient vector into a zero-padded LDE whose first log_blowup levels
// are skipped (each 2^log_blowup-chunk after them is constant).
//
// load_mode: 0 plain, 1 bit-reversed gather, 2 expand from bit-reversed
// coefficients, 3 expand from natural-order coefficients; 4 and 5 are 2 and
// 3 zero-padded instead of expanded (only index multiples of 2^log_blowup
// hold a value), for transforms that run every level from 0 so that their
// first pass reads and writes whole contiguous tiles.
extern "C" __global__ void ntt_pass(const u64* __restrict__ src, u64* dst, u64 src_stride, u64 dst_stride,
                                    u64 log_n, u64 l0, u64 k, u64 c, u64 dif, const u64* __restrict__ tw,
                                    u64 tw_log, u64 load_mode, u64 log_src_n, u64 log_blowup,
                                    const u64* __restrict__ twist_lo, const u64* __restrict__ twist_hi,
                                    u64 twist_lo_bits, u64 load_scale, u64 store_scale) {
    extern __shared__ u64 s[];
    const u32 E = 1u << (k + c);
    const u64 col = blockIdx.y;
    const u64 t = blockIdx.x;
    const u32 lo_tiles_log = l0 - c;
    const u64 lo_tile = t & ((1ull << lo_tiles_log) - 1);
    const u64 hi = t >> lo_tiles_log;
    const u64 base = (hi << (l0 + k)) + (lo_tile << c);
    const u32 cmask = (1u << c) - 1;
    const u64* sc = src + col * src_stride;
    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u64 i = base + ((u64)(e >> c) << l0) + (e & cmask);
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
    for (u32 step = 0; step < k; step++) {
        const u32 r = dif ? (k - 1 - step) : step;
        const u32 rmask = (1u << r) - 1;
        const u32 shift = tw_log - (l0 + r + 1);
        for (u32 b = threadIdx.x; b < half; b += blockDim.x) {
            u32 lo = b & cmask;
            u32 q = b >> c;
            u32 a0 = ((q >> r) << (r + 1)) | (q & rmask);
            u32 e0 = (a0 << c) | lo;
            u32 e1 = e0 + (1u << (r + c));
            u64 j = ((u64)(a0 & rmask) << l0) | ((lo_tile << c) | lo);
            u64 w = tw[j << shift];
            u64 x = s[e0];
            u64 y = s[e1];
            if (dif) {
                s[e0] = f_add(x, y);
                s[e1] = f_mul(f_sub(x, y), w);
            } else {
                u64 m = f_mul(y, w);
                s[e0] = f_add(x, m);
                s[e1] = f_sub(x, m);
            }
        }
        __syncthreads();
    }
    u64* dc = dst + col * dst_stride;
    for (u32 e = threadIdx.x; e < E; e += blockDim.x) {
        u64 i = base + ((u64)(e >> c) << l0) + (e & cmask);
        u64 v = s[e];
        if (store_scale != 1ull) v = f_mul(v, store_scale);
        dc[i] = v;
    }
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
