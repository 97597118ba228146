// Kiln's Keccak-256 Merkle leaves beside a public GPU peer's on the same
// rows: ICICLE v2's keccak_hash_blocks<512, 256> (ingonyama-zk/icicle,
// MIT; its source is carried to the GPU machine, never copied here; see
// run.sh). Both hash each row of 64 u64 (512 bytes) with Keccak-256 and
// the original padding; ours reads the column-major matrix the prover
// holds, the peer a row-major copy of it. Every digest is compared. Then
// the permutations alone: each thread permutes a state in registers REPS
// times with each side's Keccak-f[1600], states compared.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I$ICICLE/icicle/include -DICICLE_KECCAK=... peer.cu
//   ./peer [LOG_ROWS] [REPS]      (defaults 21, 16)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

typedef unsigned long long u64;
typedef unsigned int u32;
#ifndef KILN_KECCAK  // another keccak.cuh, to compare two of ours in one call
#define KILN_KECCAK "../../kernels-cuda/src/cuda/keccak.cuh"
#endif
#include KILN_KECCAK
#include "../../kernels-cuda/src/cuda/merkle_keccak.cu"
#include ICICLE_KECCAK

#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e = (x);                                                         \
        if (e != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

template <bool PEER>
__global__ void __launch_bounds__(128) permute(u64* states, int reps) {
    const size_t n = (size_t)gridDim.x * blockDim.x, t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    u64 st[25];
#pragma unroll
    for (int i = 0; i < 25; i++) st[i] = states[i * n + t];
    for (int r = 0; r < reps; r++) {
        if (PEER) keccak::keccakf(reinterpret_cast<keccak::u64*>(st));  // its u64 is unsigned long
        else keccak_f(st);
    }
#pragma unroll
    for (int i = 0; i < 25; i++) states[i * n + t] = st[i];
}

// Median of 9 event-timed runs of f, after one untimed.
template <class F>
static float median_ms(F f) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    f();
    std::vector<float> ms;
    for (int i = 0; i < 9; i++) {
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float m;
        CK(cudaEventElapsedTime(&m, a, b));
        ms.push_back(m);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[4];
}

static std::vector<u64> random_words(size_t n, u64 s) {
    std::vector<u64> v(n);
    for (auto& x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x = s;
    }
    return v;
}

int main(int argc, char** argv) {
    const int log_rows = argc > 1 ? atoi(argv[1]) : 21, reps = argc > 2 ? atoi(argv[2]) : 16;
    if (log_rows < 9 || log_rows > 24 || reps < 1) {
        fprintf(stderr, "LOG_ROWS 9..=24 (a grid of 512-thread blocks), REPS >= 1\n");
        return 2;
    }
    const u64 rows = 1ull << log_rows, width = 64;
    const auto cols = random_words(rows * width, 0x9E3779B97F4A7C15ull);
    std::vector<u64> row_major(rows * width);
    for (u64 r = 0; r < rows; r++)
        for (u64 c = 0; c < width; c++) row_major[r * width + c] = cols[c * rows + r];
    u64 *d_cols, *d_rows, *d_ours, *d_peer;
    CK(cudaMalloc(&d_cols, rows * width * 8));
    CK(cudaMalloc(&d_rows, rows * width * 8));
    CK(cudaMalloc(&d_ours, rows * 32));
    CK(cudaMalloc(&d_peer, rows * 32));
    CK(cudaMemcpy(d_cols, cols.data(), rows * width * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_rows, row_major.data(), rows * width * 8, cudaMemcpyHostToDevice));
    // The backend's launch (128 threads a block) and ICICLE's own (512);
    // each launch's digests are compared with ours.
    std::vector<u64> a(rows * 4), b(rows * 4);
    const float ours = median_ms([&] { keccak_leaves<<<rows / 128, 128>>>(d_cols, rows, width, d_ours); });
    CK(cudaMemcpy(a.data(), d_ours, rows * 32, cudaMemcpyDeviceToHost));
    bool equal = true;
    auto peer_at = [&](u32 threads) {
        CK(cudaMemset(d_peer, 0, rows * 32));
        const float ms = median_ms([&] {
            keccak::keccak_hash_blocks<512, 256>
                <<<rows / threads, threads>>>((uint8_t*)d_rows, width * 8, rows, (uint8_t*)d_peer);
        });
        CK(cudaMemcpy(b.data(), d_peer, rows * 32, cudaMemcpyDeviceToHost));
        equal = equal && a == b;
        return ms;
    };
    const float peer = peer_at(512), peer128 = peer_at(128);
    const double bytes = (double)rows * width * 8;
    printf("| work | Kiln (ms) | ICICLE (ms) | Kiln GB/s | ICICLE GB/s | Kiln / ICICLE | outputs |\n|---|---:|---:|---:|---:|---:|---|\n");
    const float best_peer = std::min(peer, peer128);
    printf("| Keccak-256 leaves, 2^%d rows x 64 | %.3f | %.3f (512 a block), %.3f (128) | %.0f | %.0f | %.2f | %s |\n",
           log_rows, ours, peer, peer128, bytes / ours / 1e6, bytes / best_peer / 1e6, ours / best_peer,
           equal ? "equal (every digest)" : "DIGESTS DIFFER");
    // The permutations alone, 2^20 states.
    const size_t n = 1 << 20;
    const auto init = random_words(25 * n, 0x2545F4914F6CDD1Dull);
    u64* d;
    CK(cudaMalloc(&d, 25 * n * 8));
    std::vector<u64> s0(25 * n), s1(25 * n);
    CK(cudaMemcpy(d, init.data(), 25 * n * 8, cudaMemcpyHostToDevice));
    permute<false><<<n / 128, 128>>>(d, reps);
    CK(cudaMemcpy(s0.data(), d, 25 * n * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(d, init.data(), 25 * n * 8, cudaMemcpyHostToDevice));
    permute<true><<<n / 128, 128>>>(d, reps);
    CK(cudaMemcpy(s1.data(), d, 25 * n * 8, cudaMemcpyDeviceToHost));
    const float po = median_ms([&] { permute<false><<<n / 128, 128>>>(d, reps); });
    const float pp = median_ms([&] { permute<true><<<n / 128, 128>>>(d, reps); });
    const double perms = (double)n * reps;
    printf("| Keccak-f[1600], 2^20 states x %d | %.3f | %.3f | %.3f G perm/s | %.3f G perm/s | %.2f | %s |\n", reps,
           po, pp, perms / po / 1e6, perms / pp / 1e6, po / pp, s0 == s1 ? "equal (every state)" : "STATES DIFFER");
    return !(equal && s0 == s1);
}
