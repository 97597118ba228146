// ntt_warp: natural-order transforms of 2^20 points (ntt_warp.cuh) and
// their outer twiddles.

// Grid (1024 / NW_WARPS, columns), NW_WARPS warps a block, 1024 * NW_TP
// words of dynamic shared memory; 128 registers a thread, two blocks an
// SM (measured fastest at 8 warps). outer[1024 n1 + k2] = w^(n1 k2) (ntt_warp_outer),
// inner[e] = w_1024^e.
extern "C" __global__ __launch_bounds__(32 * NW_WARPS, NW_MINB) void ntt_warp_a(
    const u64* __restrict__ src, u64 src_stride, u64* dst, u64 dst_stride, const u64* __restrict__ outer,
    const u64* __restrict__ inner, u64 reverse) {
    extern __shared__ u64 tile[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 n1_0 = blockIdx.x * NW_WARPS, n1 = n1_0 + warp;
    u64 v[32];
    const u64* col = src + blockIdx.y * src_stride;
    if (reverse)
        nw_load_reversed(tile, col, n1_0, v, lane, warp);
    else
        nw_load_rows(tile, col, n1_0, 10, v, lane, warp);
    nw_transform<true>(v, lane, tile + warp * 32 * NW_PAD, inner);
    const u64* tw = outer + ((u64)n1 << 10);
    u64* row = dst + blockIdx.y * dst_stride + ((u64)n1 << 10);
#pragma unroll
    for (u32 k = 0; k < 32; k++) row[lane + 32 * k] = f_mul(v[nw_slot(k)], tw[lane + 32 * k]);
}

// Pass B over rows of 2^row_log words (1024 for a transform, 2^(10+b) for
// an LDE's 2^b interleaved cosets, see ntt_warp_lde_a), in place; grid
// (2^row_log / NW_WARPS, columns). The inner table may carry a scale (the
// inverse's 2^-20): every element meets exactly one of its words, between
// the two DFTs.
extern "C" __global__ __launch_bounds__(32 * NW_WARPS, NW_MINB) void ntt_warp_b(u64* data, u64 stride,
                                                                          const u64* __restrict__ inner,
                                                                          u64 row_log) {
    extern __shared__ u64 tile[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 v[32];
    nw_load_rows(tile, data + blockIdx.y * stride, blockIdx.x * NW_WARPS, (u32)row_log, v, lane, warp);
    nw_transform<false>(v, lane, tile + warp * 32 * NW_PAD, inner);
    __syncthreads();
#pragma unroll
    for (u32 k = 0; k < 32; k++) tile[(lane + 32 * k) * NW_TP + warp] = v[nw_slot(k)];
    __syncthreads();
    // Where to store, worked out again from the parameters: kept live
    // across the transform, the runtime row length's addresses spill.
    u64 rl;
    asm volatile("ld.param.u64 %0, [ntt_warp_b_param_3];" : "=l"(rl));
    nw_tile_store(tile, data + blockIdx.y * stride, blockIdx.x * NW_WARPS, (u32)rl);
}

// outer[1024 n1 + k2] = w^(n1 k2), w = w_(2^20), from the backend's table
// of w_(2^tw_log)^k, k < 2^(tw_log - 1) (the upper half of the exponents
// is the lower one negated); n1 k2 < 2^20. One thread a word.
extern "C" __global__ void ntt_warp_outer(u64* outer, const u64* __restrict__ tw, u64 tw_log) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 e = (i >> 10) * (i & 1023), half = 1u << 19;
    const u64 v = tw[(u64)(e & (half - 1)) << (tw_log - 20)];
    outer[i] = (e & half) ? f_neg(v) : v;
}
