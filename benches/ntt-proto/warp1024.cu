// A prototype for issue 14's NTT: a 1024-point transform held in one
// warp's registers, in Kiln's canonical 64-bit field arithmetic, to set
// beside another representation of the field at the same size
// (docs/gpu/yrrid-peer.sh) and beside Kiln's shared-memory passes.
//
// 1024 = 32 x 32, four steps: lane n2 loads x[32 n1 + n2] for n1 < 32 (one
// coalesced row a register), runs a 32-point DFT over its registers,
// multiplies by w^(n2 k1), the warp transposes through shared memory, and
// lane k1 runs the second 32-point DFT: X[k1 + 32 k2] lands in register
// slot(k2), stored coalesced. The 32nd roots of unity are powers of two
// (w_1024^32 = 2^78 for Kiln's roots), so the DFTs' twiddles are products
// by constants. The no-scratch 2^20 variant runs kernels-cuda's ntt_warp,
// the backend's version of these passes.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o warp1024 benches/ntt-proto/warp1024.cu
//   ./warp1024 [COUNT]     (default 65536 transforms: 512 MiB, as 64 x 2^20)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#include "../../kernels-cuda/src/cuda/field.cuh"
// The backend's own 2^20 transform (its no-scratch passes), timed beside these.
#include "../../kernels-cuda/src/cuda/ntt_warp.cuh"
#include "../../kernels-cuda/src/cuda/ntt_warp.cu"
#include "host.h"

// The 32-point DFTs run with w' = 2^E32. Kiln's w_32 = w_1024^32 is
// 2^78; with OMEGA6 they use w' = 2^6 instead, whose products by smaller
// powers of two are cheaper, and since 2^78 = (2^6)^13, X[k] = X'[13 k]:
// only which register holds which output changes (slot).
#ifdef OMEGA6
#define E32 6
#define OMEGA_MUL 13
#else
#define E32 78
#define OMEGA_MUL 1
#endif
#ifndef WARPS
#define WARPS 8  // warps a block
#endif
#ifndef MINB
#define MINB 1  // blocks an SM, for the register cap
#endif
#define PAD 33

__device__ __forceinline__ u32 brev5(u32 r) {
    return ((r & 1) << 4) | ((r & 2) << 2) | (r & 4) | ((r & 8) >> 2) | ((r & 16) >> 4);
}
// The register of a dft32's output that holds X[k] (w = Kiln's w_32).
__device__ __forceinline__ u32 slot(u32 k) { return brev5((OMEGA_MUL * k) & 31); }

// x * 2^e for a constant e < 96 (the callers' e are literals once
// unrolled): field.cuh's shifts, as the backend's ntt_warp uses.
__device__ __forceinline__ u64 shl_const(u64 x, u32 e) { return e == 0 ? x : f_shl(x, e); }

#ifdef LIMBS
// The DFTs in another representation (after yrrid/GoldilocksNTT): four
// signed 24-bit limbs in int32, value x + y 2^24 + z 2^48 + w 2^72 modulo
// 2^96 + 1, a multiple of p. Sums carry nothing (five levels grow a limb
// to at most 2^29), a product by 2^24 is a rotation with the wrapped limb
// negated (2^96 = -1), and one by 2^6, 2^12 or 2^18 moves each limb's
// high bits into the next. Needs OMEGA6 (every exponent below 96).
#ifndef OMEGA6
#error "LIMBS needs OMEGA6"
#endif
struct Limbs {
    int x, y, z, w;
};
#define LM 0xFFFFFF
__device__ __forceinline__ Limbs to_limbs(u64 a) {
    return Limbs{(int)(a & LM), (int)((a >> 24) & LM), (int)(a >> 48), 0};
}
__device__ __forceinline__ Limbs l_add(Limbs a, Limbs b) { return Limbs{a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w}; }
__device__ __forceinline__ Limbs l_sub(Limbs a, Limbs b) { return Limbs{a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w}; }
// a * 2^e for a constant e = 6m < 96.
__device__ __forceinline__ Limbs l_shl(Limbs a, u32 e) {
    for (u32 q = 0; q < e / 24; q++) a = Limbs{-a.w, a.x, a.y, a.z};
    const u32 s = e % 24;
    if (s == 0) return a;
    auto lo = [&](int l) { return (int)(((unsigned)l << s) & LM); };
    auto hi = [&](int l) { return l >> (24 - s); };
    return Limbs{lo(a.x) - hi(a.w), lo(a.y) + hi(a.x), lo(a.z) + hi(a.y), lo(a.w) + hi(a.z)};
}
// The canonical value: the limbs' sum made positive by p 2^40 (above any
// |sum| < 2^104), then reduced.
__device__ __forceinline__ u64 l_canon(Limbs a) {
    __int128 v = (__int128)a.x + ((__int128)a.y << 24) + ((__int128)a.z << 48) + ((__int128)a.w << 72);
    v += (__int128)GL_P << 40;
    const unsigned __int128 u = (unsigned __int128)v;
    return f_reduce128((u64)u, (u64)(u >> 64));
}
__device__ __forceinline__ void dft32(u64* v) {
    Limbs l[32];
#pragma unroll
    for (u32 i = 0; i < 32; i++) l[i] = to_limbs(v[i]);
#pragma unroll
    for (u32 lv = 0; lv < 5; lv++) {
        const u32 lh = 4 - lv, h = 1u << lh;
#pragma unroll
        for (u32 b = 0; b < 16; b++) {
            const u32 j = b & (h - 1), x = ((b >> lh) << (lh + 1)) | j, y = x + h;
            const u32 e = E32 * (16 / h) * j;
            Limbs p = l[x], q = l[y];
            l[x] = l_add(p, q);
            l[y] = l_shl(l_sub(p, q), e);
        }
    }
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = l_canon(l[i]);
}
#else
// A 32-point DFT (w' = 2^E32) over v, decimation in frequency: natural
// order in, v[r] = X'[brev5(r)] out, so X[k] (Kiln's w_32) is v[slot(k)].
__device__ __forceinline__ void dft32(u64* v) {
    // Every level has 16 butterflies: a fixed trip count, so the inner
    // loop unrolls before the outer one and v stays in registers.
#pragma unroll
    for (u32 lv = 0; lv < 5; lv++) {
        const u32 lh = 4 - lv, h = 1u << lh;
#pragma unroll
        for (u32 b = 0; b < 16; b++) {
            const u32 j = b & (h - 1), x = ((b >> lh) << (lh + 1)) | j, y = x + h;
            const u32 e = (E32 * (16 / h) * j) % 192;
            u64 p = v[x], q = v[y];
            v[x] = f_add(p, q);
            v[y] = shl_const(e >= 96 ? f_sub(q, p) : f_sub(p, q), e % 96);
        }
    }
}

#endif

// The warp's 1024-point transform of v (lane l, register i: element
// l + 32 i): afterwards lane l holds X[l + 32 k] in v[slot(k)].
// tw[i] = w_1024^i; sh is the warp's 32 x PAD words.
__device__ __forceinline__ void warp_ntt1024(u64* v, u32 lane, u64* sh, const u64* __restrict__ tw) {
    dft32(v);
    // Lane n2 holds Y[n2][k1] in v[slot(k1)].
#pragma unroll
    for (u32 k1 = 0; k1 < 32; k1++) sh[k1 * PAD + lane] = f_mul(v[slot(k1)], tw[(lane * k1) & 1023]);
    __syncwarp();
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = sh[lane * PAD + i];
    __syncwarp();
    dft32(v);
}

// One warp per transform of `count` (1024 contiguous words each). `reps`
// repeats the arithmetic on the loaded data before the store (reps > 1
// times the arithmetic without the memory traffic; only reps = 1 is a
// transform).
extern "C" __global__ void __launch_bounds__(32 * WARPS, MINB)
    ntt1024_warp(const u64* __restrict__ in, u64* __restrict__ out, const u64* __restrict__ tw, u32 count, u32 reps) {
    extern __shared__ u64 sh_all[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64* sh = sh_all + warp * 32 * PAD;
    const u32 stride = gridDim.x * WARPS;
    for (u32 t = blockIdx.x * WARPS + warp; t < count; t += stride) {
        const u64* src = in + (u64)t * 1024;
        u64 v[32];
#pragma unroll
        for (u32 i = 0; i < 32; i++) v[i] = src[lane + 32 * i];
        for (u32 rep = 0; rep < reps; rep++) warp_ntt1024(v, lane, sh, tw);
        u64* dst = out + (u64)t * 1024;
#pragma unroll
        for (u32 k = 0; k < 32; k++) dst[lane + 32 * k] = v[slot(k)];
    }
}

// A 2^20-point transform of each column (2^20 contiguous words) in two
// passes, n = n1 + 1024 n2 and k = k2 + 1024 k1. Pass 1: warp n1 of a
// column transforms x[n1 + 1024 n2] over n2, multiplies by w^(n1 k2) and
// writes T[1024 k2 + n1]. A block's warps take consecutive n1, so each
// strided load and store touches runs of WARPS words. hi[a] = w^(1024 a),
// lo[a] = w^a for a < 1024, w = w_(2^20).
extern "C" __global__ void __launch_bounds__(32 * WARPS, MINB)
    ntt2e20_pass1(const u64* __restrict__ in, u64* __restrict__ tmp, const u64* __restrict__ tw,
                  const u64* __restrict__ hi, const u64* __restrict__ lo) {
    extern __shared__ u64 sh_all[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64* sh = sh_all + warp * 32 * PAD;
    const u32 n1 = blockIdx.x * WARPS + warp;
    const u64* src = in + ((u64)blockIdx.y << 20) + n1;
    u64 v[32];
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = src[(u64)(lane + 32 * i) << 10];
    warp_ntt1024(v, lane, sh, tw);
    // k2 = lane + 32 k: w^(n1 k2) = w^(n1 lane) (w^(32 n1))^k.
    const u32 a = n1 * lane, b = n1 * 32;
    const u64 start = f_mul(hi[a >> 10], lo[a & 1023]);
    const u64 step = f_mul(hi[b >> 10], lo[b & 1023]);
    u64 t = start;
    u64* dst = tmp + ((u64)blockIdx.y << 20) + n1;
#pragma unroll
    for (u32 k = 0; k < 32; k++) {
        dst[(u64)(lane + 32 * k) << 10] = f_mul(v[slot(k)], t);
        t = f_mul(t, step);
    }
}

// Pass 2: warp k2 of a column transforms T[1024 k2 + n1] over n1 and
// writes X[k2 + 1024 k1].
extern "C" __global__ void __launch_bounds__(32 * WARPS, MINB)
    ntt2e20_pass2(const u64* __restrict__ tmp, u64* __restrict__ out, const u64* __restrict__ tw) {
    extern __shared__ u64 sh_all[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64* sh = sh_all + warp * 32 * PAD;
    const u32 k2 = blockIdx.x * WARPS + warp;
    const u64* src = tmp + ((u64)blockIdx.y << 20) + ((u64)k2 << 10);
    u64 v[32];
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = src[lane + 32 * i];
    warp_ntt1024(v, lane, sh, tw);
    u64* dst = out + ((u64)blockIdx.y << 20) + k2;
#pragma unroll
    for (u32 k = 0; k < 32; k++) dst[(u64)(lane + 32 * k) << 10] = v[slot(k)];
}

// The same two passes with each block's strided accesses staged through a
// shared tile of 1024 rows x WARPS words (rows TP words apart, so a warp
// reading its column meets no bank twice per 64-bit wavefront): global
// loads and stores then move whole runs of WARPS words per row, one
// instruction covering 32 / WARPS rows. The tile is reused as the warps'
// transpose scratch.
#define TP (WARPS + 1)
__device__ __forceinline__ void tile_load(u64* tile, const u64* __restrict__ src) {
    for (u32 idx = threadIdx.x; idx < 1024 * WARPS; idx += 32 * WARPS) {
        const u32 row = idx / WARPS, w = idx % WARPS;
        tile[row * TP + w] = src[((u64)row << 10) + w];
    }
}
__device__ __forceinline__ void tile_store(const u64* tile, u64* dst) {
    for (u32 idx = threadIdx.x; idx < 1024 * WARPS; idx += 32 * WARPS) {
        const u32 row = idx / WARPS, w = idx % WARPS;
        dst[((u64)row << 10) + w] = tile[row * TP + w];
    }
}

extern "C" __global__ void __launch_bounds__(32 * WARPS, MINB)
    ntt2e20_pass1_tiled(const u64* __restrict__ in, u64* __restrict__ tmp, const u64* __restrict__ tw,
                        const u64* __restrict__ hi, const u64* __restrict__ lo) {
    extern __shared__ u64 sh_all[];
    u64* tile = sh_all;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 n1_0 = blockIdx.x * WARPS, n1 = n1_0 + warp;
    const u64 col = (u64)blockIdx.y << 20;
    tile_load(tile, in + col + n1_0);
    __syncthreads();
    u64 v[32];
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = tile[(lane + 32 * i) * TP + warp];
    __syncthreads();
    warp_ntt1024(v, lane, tile + warp * 32 * PAD, tw);
    __syncthreads();
    const u32 a = n1 * lane, b = n1 * 32;
    const u64 start = f_mul(hi[a >> 10], lo[a & 1023]);
    const u64 step = f_mul(hi[b >> 10], lo[b & 1023]);
    u64 t = start;
#pragma unroll
    for (u32 k = 0; k < 32; k++) {
        tile[(lane + 32 * k) * TP + warp] = f_mul(v[slot(k)], t);
        t = f_mul(t, step);
    }
    __syncthreads();
    tile_store(tile, tmp + col + n1_0);
}

extern "C" __global__ void __launch_bounds__(32 * WARPS, MINB)
    ntt2e20_pass2_tiled(const u64* __restrict__ tmp, u64* __restrict__ out, const u64* __restrict__ tw) {
    extern __shared__ u64 sh_all[];
    u64* tile = sh_all;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 k2_0 = blockIdx.x * WARPS, k2 = k2_0 + warp;
    const u64 col = (u64)blockIdx.y << 20;
    const u64* src = tmp + col + ((u64)k2 << 10);
    u64 v[32];
#pragma unroll
    for (u32 i = 0; i < 32; i++) v[i] = src[lane + 32 * i];
    warp_ntt1024(v, lane, tile + warp * 32 * PAD, tw);
    __syncthreads();
#pragma unroll
    for (u32 k = 0; k < 32; k++) tile[(lane + 32 * k) * TP + warp] = v[slot(k)];
    __syncthreads();
    tile_store(tile, out + col + k2_0);
}


int main(int argc, char** argv) {
    const u32 count = argc > 1 ? (u32)atoi(argv[1]) : 65536;
    const u64 w = 0x9d8f2ad78bfed972ull;  // Kiln's w_1024 (two_adic_root(10))
    std::vector<u64> tw(1024);
    tw[0] = 1;
    for (int i = 1; i < 1024; i++) tw[i] = hmul(tw[i - 1], w);
    if (tw[32] != hmul(1ull << 62, 1ull << 16)) {  // slot() assumes w_32 = 2^78
        fprintf(stderr, "w_32 is not 2^78\n");
        return 1;
    }
    std::vector<u64> h((size_t)count * 1024);
    u64 s = 0x243F6A8885A308D3ull;
    for (auto& x : h) {  // splitmix64, reduced: random, never all zeros
        s += 0x9E3779B97F4A7C15ull;
        u64 z = s;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        x = (z ^ (z >> 31)) % P;
    }
    u64 *d_in, *d_out, *d_tw;
    const size_t bytes = h.size() * 8;
    CHECK(cudaMalloc(&d_in, bytes));
    CHECK(cudaMalloc(&d_out, bytes));
    CHECK(cudaMalloc(&d_tw, 1024 * 8));
    CHECK(cudaMemcpy(d_in, h.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_tw, tw.data(), 1024 * 8, cudaMemcpyHostToDevice));
    const int smem = WARPS * 32 * PAD * 8;
    CHECK(cudaFuncSetAttribute(ntt1024_warp, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int sms = 0, per_sm = 0, regs = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ntt1024_warp, 32 * WARPS, smem));
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, ntt1024_warp));
    regs = fa.numRegs;
    const u32 grid = sms * per_sm;
    printf("warp1024: %u transforms, %d SMs x %d blocks of %d warps, %d registers, %d B local\n", count, sms,
           per_sm, WARPS, regs, (int)fa.localSizeBytes);

    ntt1024_warp<<<grid, 32 * WARPS, smem>>>(d_in, d_out, d_tw, count, 1);
    CHECK(cudaDeviceSynchronize());
    std::vector<u64> o(h.size());
    CHECK(cudaMemcpy(o.data(), d_out, bytes, cudaMemcpyDeviceToHost));
    // X[k] = sum_n x[n] w^(nk) for 24 transforms spread over the batch.
    int bad = 0;
    for (u32 q = 0; q < 24; q++) {
        const size_t t = ((size_t)q * 2654435761u) % count;
        for (u32 k = 0; k < 1024; k++) {
            u64 acc = 0;
            for (u32 n = 0; n < 1024; n++) acc = hadd(acc, hmul(h[t * 1024 + n], tw[(n * k) & 1023]));
            if (acc != o[t * 1024 + k] && bad++ < 5)
                fprintf(stderr, "transform %zu, X[%u]: %016llx, expected %016llx\n", t, k, o[t * 1024 + k], acc);
        }
    }
    printf("check: %s (24 transforms against the O(n^2) sum)\n", bad ? "FAILED" : "ok");

    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    auto time = [&](u32 n, u32 reps, int launches) {
        std::vector<float> ms;
        for (int i = 0; i < launches; i++) {
            CHECK(cudaEventRecord(a));
            ntt1024_warp<<<grid, 32 * WARPS, smem>>>(d_in, d_out, d_tw, n, reps);
            CHECK(cudaEventRecord(b));
            CHECK(cudaEventSynchronize(b));
            float m;
            CHECK(cudaEventElapsedTime(&m, a, b));
            ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    };
    float full = time(count, 1, 15);
    printf("%u transforms, in to out: %.3f ms (median of 15), %.1f G elements/s, %.0f GB/s\n", count, full,
           count * 1024.0 / full / 1e6, 2.0 * bytes / full / 1e6);
    const u32 l2 = std::min(count, 3072u);
    float l2ms = time(l2, 1, 15);
    printf("%u transforms (L2-resident), in to out: %.4f ms, %.1f G elements/s\n", l2, l2ms, l2 * 1024.0 / l2ms / 1e6);
    float c1 = time(count, 1, 5), c9 = time(count, 9, 5);
    printf("arithmetic alone (9 reps - 1 rep, / 8): %.3f ms a transform set, %.1f G elements/s\n", (c9 - c1) / 8,
           count * 1024.0 / ((c9 - c1) / 8) / 1e6);

    // 64 columns of 2^20 (the matrix of issue 14's NTT), two passes.
    {
        const u32 cols = 64;
        const u64 w20 = 0x30ba2ecd5e93e76dull;  // Kiln's w_(2^20) (two_adic_root(20))
        std::vector<u64> lo(1024), hi(1024);
        lo[0] = 1;
        for (int i = 1; i < 1024; i++) lo[i] = hmul(lo[i - 1], w20);
        const u64 w10 = hmul(lo[1023], w20);
        hi[0] = 1;
        for (int i = 1; i < 1024; i++) hi[i] = hmul(hi[i - 1], w10);
        if (w10 != w) {
            fprintf(stderr, "w_(2^20)^1024 != w_1024\n");
            return 1;
        }
        const size_t n = (size_t)cols << 20;
        std::vector<u64> x(n);
        for (size_t i = 0; i < n; i++) x[i] = h[i % h.size()] ^ (i * 0x9E3779B97F4A7C15ull % 0xFFFFFFFFull);
        for (auto& e : x) e %= P;
        u64 *d_x, *d_t, *d_y, *d_hi, *d_lo;
        CHECK(cudaMalloc(&d_x, n * 8));
        CHECK(cudaMalloc(&d_t, n * 8));
        CHECK(cudaMalloc(&d_y, n * 8));
        CHECK(cudaMalloc(&d_hi, 1024 * 8));
        CHECK(cudaMalloc(&d_lo, 1024 * 8));
        CHECK(cudaMemcpy(d_x, x.data(), n * 8, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_hi, hi.data(), 1024 * 8, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_lo, lo.data(), 1024 * 8, cudaMemcpyHostToDevice));
        CHECK(cudaFuncSetAttribute(ntt2e20_pass1, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        CHECK(cudaFuncSetAttribute(ntt2e20_pass2, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        const dim3 g2(1024 / WARPS, cols);
        const int tsmem = 1024 * TP * 8;  // the tile, which also holds the warps' transposes
        CHECK(cudaFuncSetAttribute(ntt2e20_pass1_tiled, cudaFuncAttributeMaxDynamicSharedMemorySize, tsmem));
        CHECK(cudaFuncSetAttribute(ntt2e20_pass2_tiled, cudaFuncAttributeMaxDynamicSharedMemorySize, tsmem));
        // The backend's kernels read its twiddle table, w^k for k < 2^19 (tw_log 20).
        std::vector<u64> table(1 << 19);
        for (size_t i = 0; i < table.size(); i++) table[i] = hmul(hi[i >> 10], lo[i & 1023]);
        u64* d_table;
        CHECK(cudaMalloc(&d_table, table.size() * 8));
        CHECK(cudaMemcpy(d_table, table.data(), table.size() * 8, cudaMemcpyHostToDevice));
        const int nw_smem = 1024 * NW_TP * 8;
        const dim3 gw(1024 / NW_WARPS, cols);
        u64* d_outer;
        CHECK(cudaMalloc(&d_outer, (1 << 20) * 8));
        ntt_warp_outer<<<(1 << 20) / 256, 256>>>(d_outer, d_table, 20);
        CHECK(cudaFuncSetAttribute(ntt_warp_a, cudaFuncAttributeMaxDynamicSharedMemorySize, nw_smem));
        CHECK(cudaFuncSetAttribute(ntt_warp_b, cudaFuncAttributeMaxDynamicSharedMemorySize, nw_smem));
        bool tiled = false, inplace = false;
        auto pass1 = [&] {
            if (inplace)
                ntt_warp_a<<<gw, 32 * NW_WARPS, nw_smem>>>(d_x, 1ull << 20, d_y, 1ull << 20, d_outer, d_tw, 0);
            else if (tiled)
                ntt2e20_pass1_tiled<<<g2, 32 * WARPS, tsmem>>>(d_x, d_t, d_tw, d_hi, d_lo);
            else
                ntt2e20_pass1<<<g2, 32 * WARPS, smem>>>(d_x, d_t, d_tw, d_hi, d_lo);
        };
        auto run = [&] {
            pass1();
            if (inplace)
                ntt_warp_b<<<gw, 32 * NW_WARPS, nw_smem>>>(d_y, 1ull << 20, d_tw, 10);
            else if (tiled)
                ntt2e20_pass2_tiled<<<g2, 32 * WARPS, tsmem>>>(d_t, d_y, d_tw);
            else
                ntt2e20_pass2<<<g2, 32 * WARPS, smem>>>(d_t, d_y, d_tw);
        };
        const char* names[] = {"", " tiled", " tiled, no scratch (the backend's ntt_warp kernels)"};
        for (int variant = 0; variant < 3; variant++) {
        tiled = variant == 1;
        inplace = variant == 2;
        CHECK(cudaMemset(d_y, 0, n * 8));
        run();
        CHECK(cudaDeviceSynchronize());
        std::vector<u64> y(n);
        CHECK(cudaMemcpy(y.data(), d_y, n * 8, cudaMemcpyDeviceToHost));
        int bad20 = 0;
        for (u32 c : {0u, 37u, 63u}) {
            std::vector<u64> a(x.begin() + ((size_t)c << 20), x.begin() + ((size_t)(c + 1) << 20));
            host_ntt(a, w20);
            for (size_t k = 0; k < a.size(); k++)
                if (a[k] != y[((size_t)c << 20) + k] && bad20++ < 5)
                    fprintf(stderr, "column %u, X[%zu]: %016llx, expected %016llx\n", c, k, y[((size_t)c << 20) + k], a[k]);
        }
        printf("check 2^20%s: %s (columns 0, 37, 63 against the host's radix-2 transform)\n", names[variant],
               bad20 ? "FAILED" : "ok");
        bad += bad20;
        std::vector<float> ms, ms1;
        for (int i = 0; i < 15; i++) {
            CHECK(cudaEventRecord(a));
            run();
            CHECK(cudaEventRecord(b));
            CHECK(cudaEventSynchronize(b));
            float m;
            CHECK(cudaEventElapsedTime(&m, a, b));
            ms.push_back(m);
            CHECK(cudaEventRecord(a));
            pass1();
            CHECK(cudaEventRecord(b));
            CHECK(cudaEventSynchronize(b));
            CHECK(cudaEventElapsedTime(&m, a, b));
            ms1.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        std::sort(ms1.begin(), ms1.end());
        printf("NTT %u x 2^20, two passes%s: %.3f ms (median of 15; pass 1 alone %.3f ms)\n", cols,
               names[variant], ms[7], ms1[7]);
        }
    }
    return bad ? 1 : 0;
}
