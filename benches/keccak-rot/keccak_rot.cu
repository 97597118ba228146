// Keccak-f[1600] throughput on one GPU with the 64-bit rotations made two
// ways: funnel shifts (SHF, the integer ALU pipe, which also runs every
// LOP3 of theta and chi) or a wide multiply by 2^n and two multiply-adds
// (IMAD, the FMA pipe, otherwise idle in Keccak). Each thread keeps one
// state in registers and permutes it REPS times; every variant must give
// the same states. Built and run by run.sh on the GPU machine.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __constant__ u64 RC[24] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808Aull, 0x8000000080008000ull,
    0x000000000000808Bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008Aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000Aull,
    0x000000008000808Bull, 0x800000000000008Bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800Aull, 0x800000008000000Aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull};

__device__ __constant__ u32 POW2[32] = {
    1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,
    1u << 8,  1u << 9,  1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15,
    1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21, 1u << 22, 1u << 23,
    1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31};

template <int N>
__device__ __forceinline__ u64 rot_shf(u64 x) { return (x << N) | (x >> (64 - N)); }

// MODE 1: multiplier as an immediate; 2: read from POW2 in C; 3: read from
// POW2 by inline PTX (opaque to the compiler's constant folding).
template <int MODE, int N>
__device__ __forceinline__ u64 rot_mad(u64 x) {
    constexpr int n = N & 31;
    u32 lo = (u32)x, hi = (u32)(x >> 32);
    if (N >= 32) {
        u32 t = lo;
        lo = hi;
        hi = t;
    }
    u32 m;
    if (MODE == 1) {
        m = 1u << n;
    } else if (MODE == 2) {
        m = POW2[n];
    } else {
        asm("ld.const.u32 %0, [POW2+%1];" : "=r"(m) : "n"(4 * n));
    }
    u32 rlo, rhi;
    // lo * 2^n = (lo >> (32 - n)) : (lo << n); the halves of the rotation
    // are sums of disjoint bit ranges.
    asm("{\n\t.reg .u64 w;\n\t.reg .u32 wl, wh;\n\t"
        "mul.wide.u32 w, %2, %4;\n\t"
        "mov.b64 {wl, wh}, w;\n\t"
        "mad.lo.u32 %1, %3, %4, wh;\n\t"
        "mad.hi.u32 %0, %3, %4, wl;\n\t}"
        : "=r"(rlo), "=r"(rhi)
        : "r"(lo), "r"(hi), "r"(m));
    return ((u64)rhi << 32) | rlo;
}

template <int MODE, int N>
__device__ __forceinline__ u64 rot(u64 x) {
    if (MODE == 0) return rot_shf<N>(x);
    return rot_mad<MODE, N>(x);
}

// RHO_MODE for the 24 rho rotations, THETA_MODE for theta's five by one.
template <int RHO_MODE, int THETA_MODE, int UNROLL>
__device__ __forceinline__ void keccak_f(u64 st[25]) {
#pragma unroll UNROLL
    for (int round = 0; round < 24; round++) {
        u64 bc[5];
#pragma unroll
        for (int i = 0; i < 5; i++) bc[i] = st[i] ^ st[i + 5] ^ st[i + 10] ^ st[i + 15] ^ st[i + 20];
#pragma unroll
        for (int i = 0; i < 5; i++) {
            u64 t = bc[(i + 4) % 5] ^ rot<THETA_MODE, 1>(bc[(i + 1) % 5]);
#pragma unroll
            for (int j = 0; j < 25; j += 5) st[j + i] ^= t;
        }
        u64 t = st[1];
        u64 tmp;
#define KRP(j, r) tmp = st[j]; st[j] = rot<RHO_MODE, r>(t); t = tmp;
        KRP(10, 1) KRP(7, 3) KRP(11, 6) KRP(17, 10) KRP(18, 15) KRP(3, 21) KRP(5, 28) KRP(16, 36)
        KRP(8, 45) KRP(21, 55) KRP(24, 2) KRP(4, 14) KRP(15, 27) KRP(23, 41) KRP(19, 56) KRP(13, 8)
        KRP(12, 25) KRP(2, 43) KRP(20, 62) KRP(14, 18) KRP(22, 39) KRP(9, 61) KRP(6, 20) KRP(1, 44)
#undef KRP
#pragma unroll
        for (int j = 0; j < 25; j += 5) {
#pragma unroll
            for (int i = 0; i < 5; i++) bc[i] = st[j + i];
#pragma unroll
            for (int i = 0; i < 5; i++) st[j + i] ^= (~bc[(i + 1) % 5]) & bc[(i + 2) % 5];
        }
        st[0] ^= RC[round];
    }
}

// MIN_BLOCKS > 0 caps the registers so that many 128-thread blocks fit an SM.
template <int RHO_MODE, int THETA_MODE, int MIN_BLOCKS, int UNROLL = 1>
__global__ void __launch_bounds__(128, MIN_BLOCKS) perm(u64* states, int reps) {
    const size_t T = (size_t)gridDim.x * blockDim.x;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    u64 st[25];
#pragma unroll
    for (int i = 0; i < 25; i++) st[i] = states[i * T + t];
    for (int r = 0; r < reps; r++) keccak_f<RHO_MODE, THETA_MODE, UNROLL>(st);
#pragma unroll
    for (int i = 0; i < 25; i++) states[i * T + t] = st[i];
}

#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

typedef void (*Kernel)(u64*, int);

int main(int argc, char** argv) {
    const int log_threads = argc > 1 ? atoi(argv[1]) : 20;
    const int reps = argc > 2 ? atoi(argv[2]) : 16;
    const int threads = 128;
    const size_t T = (size_t)1 << log_threads;
    std::vector<u64> init(25 * T);
    u64 s = 0x9E3779B97F4A7C15ull;
    for (auto& v : init) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v = s;
    }
    u64* d;
    CK(cudaMalloc(&d, init.size() * 8));
    struct V {
        const char* name;
        Kernel k;
    } vs[] = {
        {"shf (rho SHF, theta SHF)", &perm<0, 0, 1>},
        {"rho IMAD imm, theta SHF", &perm<1, 0, 1>},
        {"rho IMAD const, theta SHF", &perm<2, 0, 1>},
        {"rho IMAD ptx-const, theta SHF", &perm<3, 0, 1>},
        {"rho IMAD ptx-const, theta IMAD ptx-const", &perm<3, 3, 1>},
        {"rho IMAD imm, theta IMAD imm", &perm<1, 1, 1>},
        {"shf, at most 96 registers (5 blocks an SM)", &perm<0, 0, 5>},
        {"shf, at most 80 registers (6 blocks an SM)", &perm<0, 0, 6>},
        {"shf, at most 64 registers (8 blocks an SM)", &perm<0, 0, 8>},
        {"rho IMAD imm, at most 80 registers", &perm<1, 0, 6>},
        {"shf, rounds unrolled by 2", &perm<0, 0, 1, 2>},
        {"shf, rounds unrolled", &perm<0, 0, 1, 24>},
        {"shf, rounds unrolled, at most 80 registers", &perm<0, 0, 6, 24>},
    };
    std::vector<u64> ref, out(init.size());
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    printf("%zu states x %d permutations per launch, %d threads a block\n", T, reps, threads);
    for (auto& v : vs) {
        CK(cudaMemcpy(d, init.data(), init.size() * 8, cudaMemcpyHostToDevice));
        v.k<<<T / threads, threads>>>(d, reps);
        CK(cudaGetLastError());
        CK(cudaMemcpy(out.data(), d, out.size() * 8, cudaMemcpyDeviceToHost));
        bool same = true;
        if (ref.empty()) ref = out;
        else same = ref == out;
        std::vector<float> ms;
        for (int i = 0; i < 7; i++) {
            CK(cudaEventRecord(a));
            v.k<<<T / threads, threads>>>(d, reps);
            CK(cudaEventRecord(b));
            CK(cudaEventSynchronize(b));
            float m;
            CK(cudaEventElapsedTime(&m, a, b));
            ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        double gperm = (double)T * reps / (ms[3] * 1e-3) / 1e9;
        printf("| %-42s | %8.3f ms | %6.3f G perm/s | %s |\n", v.name, ms[3], gperm,
               same ? "states equal" : "STATES DIFFER");
    }
    return 0;
}
