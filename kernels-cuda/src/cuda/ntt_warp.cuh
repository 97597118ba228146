// The warp NTT's device code, shared by the ntt_warp module (natural-order
// transforms) and ntt_warp_lde (coset LDEs), which compile in parallel.
//
// Natural-order NTTs of 2^20 points as 1024 x 1024 (four steps), each
// 1024-point transform held in one warp's registers: lane n2 holds
// x[32 n1 + n2] for n1 < 32, a 32-point DFT runs over the lane's
// registers, then a product by w_1024^(n2 k1), a transpose through the
// warp's shared memory, and a second 32-point DFT. Every 32nd root of
// unity is a power of two, so the DFTs multiply only by constants.
// Measured against the shared-memory passes of ntt.cu in
// benches/ntt-proto (docs/gpu/RESULTS.md section 37).
//
// Pass A reads column sets n1 of the source (x[n1 + 1024 n2]) through a
// shared tile of 1024 rows x NW_WARPS words, transforms over n2 and
// writes row n1 of dst: T[1024 n1 + k2] = w^(n1 k2) Y[k2]. Pass B reads column sets k2 of dst through the tile,
// transforms over n1 and writes X[k2 + 1024 k1] over the same positions,
// which no other block touches: the source is kept, nothing else is
// allocated. Only forward transforms run: the inverse is the forward
// transform of x[-n mod 2^20] times 2^-20, so pass A reads the source
// reversed when asked and pass B's twiddles carry the scale: one pair of
// kernels serves both directions (and compiles in half the time). Twiddles: w_1024^e from a 1024-word table, which stays in L1
// (the warp's 32 lanes read 32 of its words at once), and pass A's
// w^(n1 k2) from a 2^20-word table in the order a warp reads it, one
// load and one product an element.
// Warps a block and blocks an SM; the prototype (benches/ntt-proto) builds
// other shapes, the backend this one (kernels-cuda's NTT_WARP_WARPS).
#ifndef NW_WARPS
#define NW_WARPS 8
#endif
#ifndef NW_MINB
#define NW_MINB 2
#endif
#define NW_PAD 33
#define NW_TP (NW_WARPS + 1)

__device__ __forceinline__ u32 nw_brev5(u32 r) {
    return ((r & 1) << 4) | ((r & 2) << 2) | (r & 4) | ((r & 8) >> 2) | ((r & 16) >> 4);
}

// The DFTs run with w' = 2^6. Kiln's w_32 is 2^78 = w'^13, so X[k] =
// X'[13 k]: the register holding X[k] after a DFT.
__device__ __forceinline__ u32 nw_slot(u32 k) {
    return nw_brev5((13 * k) & 31);
}

// x * 2^e for a constant e < 96: f_shl, shifts with 2^64 = EPS and 2^96 = -1.
__device__ __forceinline__ u64 nw_shl(u64 x, u32 e) {
    if (e == 0) return x;
    return f_shl(x, e);
}

// A 32-point DFT with w' = 2^6 over v, decimation in frequency: v[r] =
// X'[brev5(r)] afterwards. Every level has 16 butterflies, a fixed trip
// count, so the inner loop unrolls before the outer one and v stays in
// registers. With `lazy`, the last level's sums are left unreduced
// (f_add_lazy): only for outputs that go straight into f_mul.
template <bool lazy>
__device__ __forceinline__ void nw_dft32(u64* v) {
#pragma unroll
    for (u32 lv = 0; lv < 5; lv++) {
        const u32 lh = 4 - lv, h = 1u << lh;
#pragma unroll
        for (u32 b = 0; b < 16; b++) {
            const u32 j = b & (h - 1), x = ((b >> lh) << (lh + 1)) | j, y = x + h;
            const u64 p = v[x], q = v[y];
            v[x] = (lazy && h == 1) ? f_add_lazy(p, q) : f_add(p, q);
            v[y] = nw_shl(f_sub(p, q), 6 * (16 / h) * j);
        }
    }
}

// The warp's 1024-point transform of v (lane l, register i: element
// l + 32 i): afterwards lane l holds X[l + 32 k] in v[nw_slot(k)].
// w1024[e] = w_1024^e; sh is the warp's 32 x NW_PAD words.
template <bool lazy_out>
__device__ __forceinline__ void nw_transform(u64* v, u32 lane, u64* sh, const u64* __restrict__ w1024) {
    nw_dft32<true>(v);
#pragma unroll
    for (u32 k1 = 0; k1 < 32; k1++) sh[k1 * NW_PAD + lane] = f_mul(v[nw_slot(k1)], w1024[(lane * k1) & 1023]);
    __syncwarp();
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = sh[lane * NW_PAD + i];
    __syncwarp();
    nw_dft32<lazy_out>(v);
}

// A block's column set is words c0 + w, w < NW_WARPS, of 1024 rows (of
// 2^row_log words) of a column. In the tile its rows lie NW_TP words
// apart, so a warp reading one column of the tile meets each bank pair
// once per wavefront. Thread t moves word t % NW_WARPS of rows
// t / NW_WARPS + 32 j, j < 32; all 32 of its loads are issued before the
// first store (v is not live yet, so they take its registers): a block's
// load phase is not held to a few loads in flight a thread.

// The thread's 32 words (v[j], row t / NW_WARPS + 32 j) into the tile,
// then column `warp` of the tile into v in the warp transform's layout
// (element lane + 32 i in v[i]); the tile is free again on return.
__device__ __forceinline__ void nw_tile_columns(u64* tile, u64* v, u32 lane, u32 warp) {
    u64* t = tile + (threadIdx.x / NW_WARPS) * NW_TP + threadIdx.x % NW_WARPS;
#pragma unroll
    for (u32 j = 0; j < 32; j++) t[j * 32 * NW_TP] = v[j];
    __syncthreads();
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = tile[(lane + 32 * i) * NW_TP + warp];
    __syncthreads();
}
// The column set of rows of 2^row_log words at col, into v.
__device__ __forceinline__ void nw_load_rows(u64* tile, const u64* __restrict__ col, u32 c0, u32 row_log, u64* v,
                                             u32 lane, u32 warp) {
    const u32 w = threadIdx.x % NW_WARPS, r0 = threadIdx.x / NW_WARPS;
    const u64* p = col + c0 + w + ((u64)r0 << row_log);
    const u64 step = 32ull << row_log;
#pragma unroll
    for (u32 j = 0; j < 32; j++, p += step) v[j] = *p;
    nw_tile_columns(tile, v, lane, warp);
}
// The column set of rows of 1024 words with `reverse`: element e (c0 + w
// + 1024 r) read from -e mod 2^20, that is 2^20 - b - 2^15 j for the
// thread's b, except 0 for b = j = 0.
__device__ __forceinline__ void nw_load_reversed(u64* tile, const u64* __restrict__ col, u32 c0, u64* v, u32 lane,
                                                 u32 warp) {
    const u32 b = c0 + threadIdx.x % NW_WARPS + ((threadIdx.x / NW_WARPS) << 10);
    v[0] = col[(0u - b) & ((1u << 20) - 1)];
    const u64* p = col + ((1u << 20) - b);
#pragma unroll
    for (u32 j = 1; j < 32; j++) v[j] = p[-(long long)(j << 15)];
    nw_tile_columns(tile, v, lane, warp);
}
// The tile back to the column set at col (the same thread-to-word map).
__device__ __forceinline__ void nw_tile_store(const u64* tile, u64* col, u32 c0, u32 row_log) {
    const u32 w = threadIdx.x % NW_WARPS, r0 = threadIdx.x / NW_WARPS;
    const u64* t = tile + r0 * NW_TP + w;
    u64* p = col + c0 + w + ((u64)r0 << row_log);
    const u64 step = 32ull << row_log;
#pragma unroll
    for (u32 j = 0; j < 32; j++, p += step) *p = t[j * 32 * NW_TP];
}
