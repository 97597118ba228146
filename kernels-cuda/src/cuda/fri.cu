// Extension-field stages on flattened columns (3 base columns per
// extension column): FRI folding, DEEP quotients and barycentric
// evaluation out of the domain.

// folded(i) = (1/a) sum_r (beta / x_i)^r u_r,  u_r = sum_j v_j w_a^(-j r),
// v_j = layer[i + j M], x_i = shift * w_N^i; plus s * g(i) when rolling in.
extern "C" __global__ void fri_fold(const u64* __restrict__ layer, u64* out, u64 log_n, u64 log_arity, u64 b0,
                                    u64 b1, u64 b2, u64 shift_inv, const u64* __restrict__ itw, u64 tw_log,
                                    u64 arity_inv, const u64* __restrict__ roll, u64 s0, u64 s1, u64 s2) {
    const u64 n = 1ull << log_n;
    const u64 m = n >> log_arity;
    const u32 a = 1u << log_arity;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    ext3 v[16];
    for (u32 j = 0; j < a; j++) v[j] = e_load(layer, n, i + (u64)j * m);
    const u64 x_inv = f_mul(shift_inv, root_pow(itw, tw_log, log_n, i));
    const ext3 y = e_mul_base(e_make(b0, b1, b2), x_inv);
    ext3 res = e_zero();
    for (int r = (int)a - 1; r >= 0; r--) {
        ext3 u = e_zero();
        for (u32 j = 0; j < a; j++) {
            u64 w = root_pow(itw, tw_log, log_arity, (u64)j * (u64)r);
            u = e_add(u, e_mul_base(v[j], w));
        }
        res = e_add(e_mul(res, y), u);
    }
    res = e_mul_base(res, arity_inv);
    if (roll != 0) res = e_add(res, e_mul(e_make(s0, s1, s2), e_load(roll, m, i)));
    e_store(out, m, i, res);
}

// a[i] (=|+=) sum_c ka[c] * m[c][i], coefficients given as 3 u64 each;
// `lincomb_pair` also b[i] (=|+=) sum_c kb[c] * m[c][i] from the same read
// of the columns. Each coordinate's products are summed unreduced. A
// thread loads `AHEAD` columns before it multiplies any: with one load in
// flight a thread, the main LDE's combination (64 columns of 2^22) took
// 1.13 ms, 1.9 TB/s; four ahead, 0.78 ms (H100). Two kernels, so that
// the single combination fits 64 registers (half the SM's threads).
template <bool PAIR, u32 AHEAD>
__device__ __forceinline__ void lincomb_rows(u64* a, u64* b, const u64* __restrict__ m, const u64* __restrict__ ka,
                                             const u64* __restrict__ kb, u64 width, u64 n, u64 accumulate_a,
                                             u64 accumulate_b) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    e_acc sa = e_acc_zero(), sb = e_acc_zero();
    const u64* row = m + i;
    const u32 w = (u32)width;
    u32 c = 0;
    auto step = [&](u32 c, u64 f) {
        k_acc(sa, e_make(ka[3 * c], ka[3 * c + 1], ka[3 * c + 2]), f);
        if (PAIR) k_acc(sb, e_make(kb[3 * c], kb[3 * c + 1], kb[3 * c + 2]), f);
    };
    for (; c + AHEAD <= w; c += AHEAD) {
        u64 f[AHEAD];
#pragma unroll
        for (u32 u = 0; u < AHEAD; u++) f[u] = row[(u64)(c + u) * n];
#pragma unroll
        for (u32 u = 0; u < AHEAD; u++) step(c + u, f[u]);
    }
    for (; c < w; c++) step(c, row[(u64)c * n]);
    ext3 ra = e_acc_reduce(sa);
    if (accumulate_a) ra = e_add(e_load(a, n, i), ra);
    e_store(a, n, i, ra);
    if (PAIR) {
        ext3 rb = e_acc_reduce(sb);
        if (accumulate_b) rb = e_add(e_load(b, n, i), rb);
        e_store(b, n, i, rb);
    }
}
extern "C" __global__ __launch_bounds__(128, 8) void lincomb(u64* a, const u64* __restrict__ m,
                                                              const u64* __restrict__ ka, u64 width, u64 n,
                                                              u64 accumulate) {
    lincomb_rows<false, 4>(a, nullptr, m, ka, nullptr, width, n, accumulate, 0);
}
extern "C" __global__ void lincomb_pair(u64* a, u64* b, const u64* __restrict__ m, const u64* __restrict__ ka,
                                        const u64* __restrict__ kb, u64 width, u64 n, u64 accumulate_a,
                                        u64 accumulate_b) {
    lincomb_rows<true, 2>(a, b, m, ka, kb, width, n, accumulate_a, accumulate_b);
}

// d[i] (=|+=) (acc[i] - value) / (x_i - z), DEEP_ROWS rows a thread
// (blockDim.x apart, so that loads coalesce); acc may be d (in place).
// With a = x - z = (x - z0, -z1, -z2), 1/a = adj(a) / N(a) as in
// bary_weights: one inversion serves the thread's norms. N(a) is zero
// only where a is (x = z), and that row gets zero, as the reference's
// batch inversion gives.
#define DEEP_ROWS 8
extern "C" __global__ void deep_accum(u64* d, const u64* acc, u64 log_n, u64 z0, u64 z1, u64 z2,
                                      u64 v0, u64 v1, u64 v2, u64 shift, const u64* __restrict__ tw, u64 tw_log,
                                      u64 accumulate) {
    const u64 n = 1ull << log_n;
    const u64 first = (u64)blockIdx.x * blockDim.x * DEEP_ROWS + threadIdx.x;
    if (first >= n) return;
    const u64 a1 = f_neg(z1), a2 = f_neg(z2);
    const u64 two_a1a2 = f_dbl(f_mul(a1, a2)), two_a2a2 = f_dbl(f_sqr(a2)), a1a1 = f_sqr(a1);
    u64 t0[DEEP_ROWS], t1[DEEP_ROWS], t2[DEEP_ROWS], norm[DEEP_ROWS], before[DEEP_ROWS];
    u64 all = 1;
    u32 rows = 0;
    // Both row loops kept rolled (cold-compile time): NVVM counts an asm
    // product as one instruction, so it unrolled them in full and copied
    // them again for log_n = 0 and for `accumulate` (5x the code). The
    // arrays are in local memory either way; rolled, a row costs the same
    // in the first loop and 6 more instructions (of 460) in the second.
#pragma unroll 1
    for (; rows < DEEP_ROWS && first + rows * blockDim.x < n; rows++) {
        const u32 k = rows;
        const u64 x = f_mul(shift, root_pow(tw, tw_log, log_n, first + k * blockDim.x));
        const u64 a0 = f_sub(x, z0);
        t0[k] = f_sub(f_sqr(a0), two_a1a2);
        t1[k] = f_sub(two_a2a2, f_mul(a0, a1));
        t2[k] = f_sub(a1a1, f_mul(a0, a2));
        norm[k] = f_add(f_mul(a0, t0[k]), f_dbl(f_add(f_mul(a2, t1[k]), f_mul(a1, t2[k]))));
        before[k] = all;
        if (norm[k] != 0) all = f_mul(all, norm[k]);
    }
    u64 inv = f_inv(all);
    const ext3 value = e_make(v0, v1, v2);
#pragma unroll 1
    for (int k = (int)rows - 1; k >= 0; k--) {
        // inv is 1 / (the non-zero norms among norm[0..=k]).
        u64 s = 0;
        if (norm[k] != 0) {
            s = f_mul(inv, before[k]);
            inv = f_mul(inv, norm[k]);
        }
        const u64 i = first + (u64)k * blockDim.x;
        ext3 q = e_mul(e_sub(e_load(acc, n, i), value), e_make(f_mul(t0[k], s), f_mul(t1[k], s), f_mul(t2[k], s)));
        if (accumulate) q = e_add(q, e_load(d, n, i));
        e_store(d, n, i, q);
    }
}

// Barycentric weights for the point z: w[i] = x_i / (z - x_i), for
// BARY_ROWS rows a thread, blockDim.x apart (so that the stores and the
// twiddle reads coalesce). With a = z - x = (z0 - x, z1, z2),
// 1/a = adj(a) / N(a), and z1, z2 do not depend on x: adj(a) and the
// base-field norm cost six products, and one inversion serves the
// thread's norms (a batch inversion). z is off the domain (the host
// answers a point of it from the columns), so no norm is zero. The
// thread's twiddles are read before any product, all in flight at once.
#define BARY_ROWS 8
extern "C" __global__ void bary_weights(u64* w, u64 log_n, u64 z0, u64 z1, u64 z2, u64 shift,
                                        const u64* __restrict__ tw, u64 tw_log) {
    const u64 n = 1ull << log_n;
    const u64 first = (u64)blockIdx.x * blockDim.x * BARY_ROWS + threadIdx.x;
    if (first >= n) return;
    const u64 step = blockDim.x;
    const u32 rows = (u32)((n - first + step - 1) / step < BARY_ROWS ? (n - first + step - 1) / step : BARY_ROWS);
    const u64 two_bc = f_dbl(f_mul(z1, z2)), two_cc = f_dbl(f_sqr(z2)), bb = f_sqr(z1);
    u64 xs[BARY_ROWS], t0[BARY_ROWS], t1[BARY_ROWS], t2[BARY_ROWS], norm[BARY_ROWS], before[BARY_ROWS];
#pragma unroll
    for (u32 k = 0; k < BARY_ROWS; k++)
        if (k < rows) xs[k] = root_pow(tw, tw_log, log_n, first + k * step);
    u64 all = 1;
    // Rolled as in deep_accum (a pass over the trace per point, against
    // bary_partial's pass per column): 4x less code, about 18 more
    // instructions a row (of some 400).
#pragma unroll 1
    for (u32 k = 0; k < rows; k++) {
        const u64 x = f_mul(shift, xs[k]);
        const u64 a0 = f_sub(z0, x);
        xs[k] = x;
        t0[k] = f_sub(f_sqr(a0), two_bc);
        t1[k] = f_sub(two_cc, f_mul(a0, z1));
        t2[k] = f_sub(bb, f_mul(a0, z2));
        norm[k] = f_add(f_mul(a0, t0[k]), f_dbl(f_add(f_mul(z2, t1[k]), f_mul(z1, t2[k]))));
        before[k] = all;
        all = f_mul(all, norm[k]);
    }
    u64 inv = f_inv(all);
#pragma unroll 1
    for (int k = (int)rows - 1; k >= 0; k--) {
        // inv is 1 / (norm[0] ... norm[k]).
        const u64 s = f_mul(f_mul(inv, before[k]), xs[k]);
        inv = f_mul(inv, norm[k]);
        e_store(w, n, first + k * step, e_make(f_mul(t0[k], s), f_mul(t1[k], s), f_mul(t2[k], s)));
    }
}

// Partial sums of f_c(x_i) * w_k[i] for one or two points k (the weights
// of point k at w + 3nk): block (c, s) adds its slice s of the rows of
// column c for every point, reading each value once; partial[c][s][k]
// holds 3 u64. Point i is row i << log_stride of m (columns of
// n << log_stride rows). Columns vary fastest across the grid, so the
// blocks resident together share their slice of the weights in L2 (with
// slices fastest, every few columns read the weights from memory again:
// 2.70 GB read for the main LDE's 2.15). A thread loads two rows before
// it multiplies either. Both: 1.10 ms to 0.90 for the main LDE (H100).
extern "C" __global__ void bary_partial(const u64* __restrict__ m, const u64* __restrict__ w, u64 n, u64 log_stride,
                                        u64 points, u64* partial) {
    __shared__ u64 sa[256], sb[256], sc[256];
    const u64 col = blockIdx.x, slice = blockIdx.y;
    const u64 slices = gridDim.y;
    const u64 per = (n + slices - 1) / slices;
    const u64 lo = slice * per;
    const u64 hi = lo + per < n ? lo + per : n;
    const u64* src = m + ((col * n) << log_stride);
    // The products summed unreduced (fewer than 2^31 rows a thread).
    // (f_acc by coordinate rather than an e_acc: the loop is two
    // instructions shorter this way on sm_90.)
    f_acc acc[2][3] = {{f_acc_zero(), f_acc_zero(), f_acc_zero()}, {f_acc_zero(), f_acc_zero(), f_acc_zero()}};
    const u64* w1 = w + 3 * n;
    auto add = [&](u64 i, u64 f) {
        f_acc_madd(acc[0][0], w[i], f);
        f_acc_madd(acc[0][1], w[n + i], f);
        f_acc_madd(acc[0][2], w[2 * n + i], f);
        if (points > 1) {
            f_acc_madd(acc[1][0], w1[i], f);
            f_acc_madd(acc[1][1], w1[n + i], f);
            f_acc_madd(acc[1][2], w1[2 * n + i], f);
        }
    };
    u64 i = lo + threadIdx.x;
    for (; i + blockDim.x < hi; i += 2 * blockDim.x) {
        const u64 f0 = src[i << log_stride], f1 = src[(i + blockDim.x) << log_stride];
        add(i, f0);
        add(i + blockDim.x, f1);
    }
    if (i < hi) add(i, src[i << log_stride]);
    // Unrolled, so acc stays in registers; points is uniform across the block.
#pragma unroll
    for (u32 k = 0; k < 2; k++) {
        if (k >= points) break;
        sa[threadIdx.x] = f_acc_reduce(acc[k][0]);
        sb[threadIdx.x] = f_acc_reduce(acc[k][1]);
        sc[threadIdx.x] = f_acc_reduce(acc[k][2]);
        __syncthreads();
        for (u32 s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) {
                sa[threadIdx.x] = f_add(sa[threadIdx.x], sa[threadIdx.x + s]);
                sb[threadIdx.x] = f_add(sb[threadIdx.x], sb[threadIdx.x + s]);
                sc[threadIdx.x] = f_add(sc[threadIdx.x], sc[threadIdx.x + s]);
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            u64* p = partial + ((col * slices + slice) * points + k) * 3;
            p[0] = sa[0];
            p[1] = sb[0];
            p[2] = sc[0];
        }
        __syncthreads();
    }
}
