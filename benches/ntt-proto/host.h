// The prototypes' host side (warp1024.cu, lde.cu): CUDA call checks and
// the Goldilocks reference arithmetic their outputs are checked against.
// Included after field.cuh (u64, u32).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const u64 P = 0xFFFFFFFF00000001ull;
static u64 hmul(u64 a, u64 b) { return (u64)((unsigned __int128)a * b % P); }
static u64 hadd(u64 a, u64 b) { return (u64)(((unsigned __int128)a + b) % P); }
static u64 hpow(u64 a, u64 e) {
    u64 r = 1;
    for (; e; e >>= 1, a = hmul(a, a))
        if (e & 1) r = hmul(r, a);
    return r;
}
// Kiln's two_adic_root(k): w_32^(2^(32 - k)), w_32 = 7^((p - 1) / 2^32).
static u64 root(u32 k) { return hpow(hpow(7, (P - 1) >> 32), 1ull << (32 - k)); }

// The radix-2 transform: X[k] = sum_n x[n] w^(nk), natural order.
static void host_ntt(std::vector<u64>& a, u64 w) {
    const size_t n = a.size();
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        const u64 wl = hpow(w, n / len);
        for (size_t i = 0; i < n; i += len) {
            u64 t = 1;
            for (size_t j = 0; j < len / 2; j++) {
                u64 x = a[i + j], y = hmul(a[i + j + len / 2], t);
                a[i + j] = hadd(x, y);
                a[i + j + len / 2] = hadd(x, P - y);
                t = hmul(t, wl);
            }
        }
    }
}
