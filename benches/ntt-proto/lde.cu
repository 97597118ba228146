// A prototype for issue 14's LDE row on kernels-cuda's warp NTT: 64
// columns of 2^20 evaluations to their coset LDE of 2^(20+B) points, all
// in 2^20-point transforms held in warps' registers.
//
// LDE[2^B m + j] = f(g w_N^(2^B m + j)) = NTT_(2^20)(c_i a_j^i)[m], a_j =
// g w_N^j (N = 2^(20+B), c the coefficients): coset j is a 2^20-point
// transform of the twisted coefficients, its outputs every 2^B-th word.
//   1. the backend's inverse passes (ntt_warp_a reversed, ntt_warp_b with
//      the scaled inner table): coefficients, natural order;
//   2. ntt_warp_lde_a: pass A of the twisted coefficients, a warp for each
//      pair of n1 and coset, its rows staged in the tile and written whole
//      and interleaved: T_j[n1][k2] at 2^B (1024 n1 + k2) + j;
//   3. ntt_warp_b: pass B in place over rows of 2^(10+B) words, word (k2 << B)
//      + j being coset j's column k2: the block's columns are
//      NW_WARPS / 2^B values of k2 for all 2^B cosets, and coset j's output
//      k2 + 1024 k1 lands on the position it was read from.
// Since the kernels moved into kernels-cuda (ntt_warp_lde_a, ntt_warp_b
// over longer rows, ntt_warp_twist), this runs the backend's. Checked on
// the host: coefficients of two columns against a radix-2 inverse, and 16
// LDE values of each against Horner's rule.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o lde benches/ntt-proto/lde.cu && ./lde [B]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#include "../../kernels-cuda/src/cuda/field.cuh"
#include "../../kernels-cuda/src/cuda/ntt_warp.cuh"
#include "../../kernels-cuda/src/cuda/ntt_warp.cu"
#include "../../kernels-cuda/src/cuda/ntt_warp_lde.cu"
#include "host.h"

template <u32 B>
static int run(u32 cols) {
    const u64 n = 1ull << 20, big = n << B, g = 7;
    const u64 w20 = root(20), wN = root(20 + B);
    std::vector<u64> x(n * cols);
    u64 s = 0x9E3779B97F4A7C15ull;
    for (auto& e : x) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        e = s % P;
    }
    // The backend's tables for 2^20 points: w^k, k < 2^19; inner (w_1024^e, then times 2^-20).
    std::vector<u64> table(n / 2), inner(2048);
    table[0] = 1;
    for (size_t i = 1; i < table.size(); i++) table[i] = hmul(table[i - 1], w20);
    const u64 w1024 = hpow(w20, 1024), inv_n = hpow(n, P - 2);
    inner[0] = 1;
    for (int e = 1; e < 1024; e++) inner[e] = hmul(inner[e - 1], w1024);
    for (int e = 0; e < 1024; e++) inner[1024 + e] = hmul(inner[e], inv_n);
    std::vector<u64> lo(1024 << B), hi(1024 << B);
    for (u32 j = 0; j < (1u << B); j++) {
        const u64 a = hmul(g, hpow(wN, j)), a1024 = hpow(a, 1024);
        lo[j * 1024] = hi[j * 1024] = 1;
        for (int e = 1; e < 1024; e++) {
            lo[j * 1024 + e] = hmul(lo[j * 1024 + e - 1], a);
            hi[j * 1024 + e] = hmul(hi[j * 1024 + e - 1], a1024);
        }
    }
    u64 *d_x, *d_c, *d_out, *d_table, *d_inner, *d_outer, *d_twist, *d_lo, *d_hi;
    CHECK(cudaMalloc(&d_x, x.size() * 8));
    CHECK(cudaMalloc(&d_c, x.size() * 8));
    CHECK(cudaMalloc(&d_out, (big * cols) * 8));
    CHECK(cudaMalloc(&d_table, table.size() * 8));
    CHECK(cudaMalloc(&d_inner, inner.size() * 8));
    CHECK(cudaMalloc(&d_outer, n * 8));
    CHECK(cudaMalloc(&d_twist, (n << B) * 8));
    CHECK(cudaMalloc(&d_lo, lo.size() * 8));
    CHECK(cudaMalloc(&d_hi, hi.size() * 8));
    CHECK(cudaMemcpy(d_x, x.data(), x.size() * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_table, table.data(), table.size() * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_inner, inner.data(), inner.size() * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_lo, lo.data(), lo.size() * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_hi, hi.data(), hi.size() * 8, cudaMemcpyHostToDevice));
    ntt_warp_outer<<<n / 256, 256>>>(d_outer, d_table, 20);
    ntt_warp_twist<<<(n << B) / 256, 256>>>(d_twist, d_lo, d_hi);
    const int smem = 1024 * NW_TP * 8;
    CHECK(cudaFuncSetAttribute(ntt_warp_a, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(ntt_warp_b, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(ntt_warp_lde_a, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const dim3 g_n(1024 / NW_WARPS, cols), g_big((1024u << B) / NW_WARPS, cols);
    const u32 th = 32 * NW_WARPS;
    auto intt = [&] {
        ntt_warp_a<<<g_n, th, smem>>>(d_x, n, d_c, n, d_outer, d_inner, 1);
        ntt_warp_b<<<g_n, th, smem>>>(d_c, n, d_inner + 1024, 10);
    };
    const dim3 g_a((1024u << B) / NW_WARPS, cols);
    auto pass_a = [&] { ntt_warp_lde_a<<<g_a, th, smem>>>(d_c, n, d_out, big, d_outer, d_inner, d_twist, B); };
    auto pass_b = [&] { ntt_warp_b<<<g_big, th, smem>>>(d_out, big, d_inner, 10 + B); };
    intt();
    pass_a();
    pass_b();
    CHECK(cudaDeviceSynchronize());
    // Host checks on two columns.
    int bad = 0;
    for (u32 c : {0u, cols - 1}) {
        std::vector<u64> coef(x.begin() + c * n, x.begin() + (c + 1) * n);
        host_ntt(coef, hpow(w20, P - 2));
        for (auto& e : coef) e = hmul(e, inv_n);
        std::vector<u64> dc(n);
        CHECK(cudaMemcpy(dc.data(), d_c + c * n, n * 8, cudaMemcpyDeviceToHost));
        bad += dc != coef;
        for (int t = 0; t < 16; t++) {
            const u64 k = (t * 0x9E3779B97F4A7C15ull >> 7) % big;
            const u64 pt = hmul(g, hpow(wN, k));
            u64 acc = 0;
            for (u64 i = n; i-- > 0;) acc = hadd(hmul(acc, pt), coef[i]);
            u64 got;
            CHECK(cudaMemcpy(&got, d_out + c * big + k, 8, cudaMemcpyDeviceToHost));
            bad += got != acc;
        }
    }
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    float slowest = 0;
    auto time = [&](auto f) {
        f();  // a warm-up call, untimed
        CHECK(cudaDeviceSynchronize());
        std::vector<float> ms;
        for (int i = 0; i < 15; i++) {
            CHECK(cudaEventRecord(e0));
            f();
            CHECK(cudaEventRecord(e1));
            CHECK(cudaEventSynchronize(e1));
            float m;
            CHECK(cudaEventElapsedTime(&m, e0, e1));
            ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        slowest = ms[14];
        return ms[7];
    };
    const float all = time([&] { intt(); pass_a(); pass_b(); });
    const float ti = time(intt), ta = time(pass_a), tb = time(pass_b);
    CHECK(cudaGetLastError());
    printf("LDE 2^20 x %u, blowup %u: %.3f ms (iNTT %.3f, coset passes A %.3f, B %.3f; median of 15); check %s\n", cols,
           1u << B, all, ti, ta, tb, bad ? "FAILED" : "ok (coefficients and 16 LDE values of two columns)");
    // The coefficients and the output from the device's stream-ordered
    // pool each call, freed after it: the scratch first (the backend's order
    // before f0ea7ff) or the output first (since), with the pool's release
    // threshold at its largest (the backend's setting) and at 0 (memory
    // handed back at every synchronisation).
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    for (u64 threshold : {~0ull, 0ull}) {
        CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
        for (bool out_first : {false, true}) {
            const float pooled = time([&] {
                u64 *c, *o;
                if (out_first) CHECK(cudaMallocAsync(&o, big * cols * 8, 0));
                CHECK(cudaMallocAsync(&c, n * cols * 8, 0));
                if (!out_first) CHECK(cudaMallocAsync(&o, big * cols * 8, 0));
                ntt_warp_a<<<g_n, th, smem>>>(d_x, n, c, n, d_outer, d_inner, 1);
                ntt_warp_b<<<g_n, th, smem>>>(c, n, d_inner + 1024, 10);
                ntt_warp_lde_a<<<g_a, th, smem>>>(c, n, o, big, d_outer, d_inner, d_twist, B);
                ntt_warp_b<<<g_big, th, smem>>>(o, big, d_inner, 10 + B);
                CHECK(cudaFreeAsync(c, 0));
                CHECK(cudaFreeAsync(o, 0));
            });
            printf("  the same from the pool, %s first, release threshold %s: median %.3f ms, slowest %.3f\n",
                   out_first ? "output" : "scratch", threshold ? "max" : "0", pooled, slowest);
        }
    }
    for (u64* p : {d_x, d_c, d_out, d_table, d_inner, d_outer, d_twist, d_lo, d_hi}) CHECK(cudaFree(p));
    return bad != 0;
}

int main(int argc, char** argv) {
    const int b = argc > 1 ? atoi(argv[1]) : 1;
    const u32 cols = argc > 2 ? (u32)atoi(argv[2]) : 64;
    switch (b) {
        case 1: return run<1>(cols);
        case 2: return run<2>(cols);
        case 3: return run<3>(cols);
        default: fprintf(stderr, "B is 1, 2 or 3\n"); return 2;
    }
}
