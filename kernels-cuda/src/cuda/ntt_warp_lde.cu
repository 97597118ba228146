// ntt_warp_lde: coset LDEs of 2^20 rows at blowups up to 8 on the warp
// NTT (ntt_warp.cuh); pass B is ntt_warp's ntt_warp_b over longer rows.

// An LDE's pass A: coset j < 2^b of the LDE of coefficients c (natural
// order, 2^20 a column) on shift H_(2^(20+b)) is the 2^20-point transform
// of c_i a_j^i, a_j = shift w_(2^(20+b))^j, its output m at 2^b m + j.
// twist[j 2^20 + 1024 n1 + n2] = a_j^(n1 + 1024 n2) (ntt_warp_twist), in
// the order a warp reads it. A block takes NW_WARPS >> b values of n1, a
// warp for each (n1, j) pair, and stages its outputs in the tile: whole
// rows of 2^(10+b) words, T_j[n1][k2] at (k2 << b) + j, which ntt_warp_b
// (row_log 10 + b) transforms in place into the LDE. Grid (2^(10+b) /
// NW_WARPS, columns).
extern "C" __global__ __launch_bounds__(32 * NW_WARPS, NW_MINB) void ntt_warp_lde_a(
    const u64* __restrict__ coeffs, u64 coeff_stride, u64* out, u64 out_stride, const u64* __restrict__ outer,
    const u64* __restrict__ inner, const u64* __restrict__ twist, u64 log_blowup) {
    extern __shared__ u64 tile[];
    const u32 b = (u32)log_blowup, sets = NW_WARPS >> b;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = warp >> b, j = warp & ((1u << b) - 1);
    const u32 n1_0 = blockIdx.x * sets, n1 = n1_0 + r;
    const u64* col = coeffs + blockIdx.y * coeff_stride;
    for (u32 idx = threadIdx.x; idx < 1024 * sets; idx += 32 * NW_WARPS)
        tile[(idx / sets) * NW_TP + idx % sets] = col[((u64)(idx / sets) << 10) + n1_0 + idx % sets];
    __syncthreads();
    u64 v[32];
    const u64* tw = twist + ((u64)j << 20) + ((u64)n1 << 10);
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = f_mul(tile[(lane + 32 * i) * NW_TP + r], tw[lane + 32 * i]);
    __syncthreads();
    nw_transform<true>(v, lane, tile + warp * 32 * NW_PAD, inner);
    const u64* ot = outer + ((u64)n1 << 10);
    __syncthreads();
    u64* staged = tile + r * (1024u << b);
#pragma unroll
    for (u32 k = 0; k < 32; k++) staged[((lane + 32 * k) << b) + j] = f_mul(v[nw_slot(k)], ot[lane + 32 * k]);
    __syncthreads();
    u64* o = out + blockIdx.y * out_stride + ((u64)n1_0 << (10 + b));
    for (u32 idx = threadIdx.x; idx < sets * (1024u << b); idx += 32 * NW_WARPS) o[idx] = tile[idx];
}

// twist[j 2^20 + 1024 n1 + n2] = lo[1024 j + n1] hi[1024 j + n2] (lo[1024 j
// + n1] = a_j^n1, hi[1024 j + n2] = a_j^(1024 n2)). One thread a word.
extern "C" __global__ void ntt_warp_twist(u64* twist, const u64* __restrict__ lo, const u64* __restrict__ hi) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 j = i >> 20;
    twist[i] = f_mul(lo[(j << 10) + ((i >> 10) & 1023)], hi[(j << 10) + (i & 1023)]);
}
