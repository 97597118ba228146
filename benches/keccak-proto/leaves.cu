// Times kernels-cuda's keccak_leaves and keccak_nodes standalone, built
// with nvcc (extra -D flags reach keccak.cuh, for trying variants of it),
// and checks rows and nodes against a textbook host Keccak-256.
//   nvcc -O3 -arch=sm_90 -o leaves leaves.cu && ./leaves [LOG_ROWS] [COLUMNS]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "../../kernels-cuda/src/cuda/field.cuh"
#include "../../kernels-cuda/src/cuda/keccak.cuh"
#include "../../kernels-cuda/src/cuda/merkle_keccak.cu"

#define CHECK(x)                                                                   \
    do {                                                                           \
        cudaError_t e = (x);                                                       \
        if (e != cudaSuccess) {                                                    \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static const u64 RC[24] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808Aull, 0x8000000080008000ull,
    0x000000000000808Bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008Aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000Aull,
    0x000000008000808Bull, 0x800000000000008Bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800Aull, 0x800000008000000Aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull};
static const int ROT[25] = {0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14};
static u64 rotl(u64 x, int n) { return n ? (x << n) | (x >> (64 - n)) : x; }
// The textbook permutation (FIPS 202's step mappings), independent of the kernel's code.
static void host_f(u64 a[25]) {
    for (int r = 0; r < 24; r++) {
        u64 c[5], b[25];
        for (int x = 0; x < 5; x++) c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 5; y++) a[x + 5 * y] ^= c[(x + 4) % 5] ^ rotl(c[(x + 1) % 5], 1);
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 5; y++) b[y + 5 * ((2 * x + 3 * y) % 5)] = rotl(a[x + 5 * y], ROT[x + 5 * y]);
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 5; y++) a[x + 5 * y] = b[x + 5 * y] ^ (~b[(x + 1) % 5 + 5 * y] & b[(x + 2) % 5 + 5 * y]);
        a[0] ^= RC[r];
    }
}
// Keccak-256 (0x01 padding) of n words.
static void host_hash(const u64* w, size_t n, u64 out[4]) {
    u64 a[25] = {0};
    size_t i = 0;
    for (; i + 17 <= n; i += 17) {
        for (int t = 0; t < 17; t++) a[t] ^= w[i + t];
        host_f(a);
    }
    for (size_t t = 0; t < n - i; t++) a[t] ^= w[i + t];
    a[n - i] ^= 1;
    a[16] ^= 0x8000000000000000ull;
    host_f(a);
    for (int t = 0; t < 4; t++) out[t] = a[t];
}

int main(int argc, char** argv) {
    const int log_rows = argc > 1 ? atoi(argv[1]) : 21;
    const u64 height = 1ull << log_rows, width = argc > 2 ? atoi(argv[2]) : 64;
    std::vector<u64> m(height * width);
    u64 s = 0x9E3779B97F4A7C15ull;
    for (auto& e : m) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        e = s % 0xFFFFFFFF00000001ull;
    }
    u64 *d_m, *d_leaves, *d_nodes;
    CHECK(cudaMalloc(&d_m, m.size() * 8));
    CHECK(cudaMalloc(&d_leaves, height * 32));
    CHECK(cudaMalloc(&d_nodes, height * 16));
    CHECK(cudaMemcpy(d_m, m.data(), m.size() * 8, cudaMemcpyHostToDevice));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    auto time = [&](auto launch) {
        std::vector<float> ms;
        for (int i = 0; i < 15; i++) {
            CHECK(cudaEventRecord(a));
            launch();
            CHECK(cudaEventRecord(b));
            CHECK(cudaEventSynchronize(b));
            float t;
            CHECK(cudaEventElapsedTime(&t, a, b));
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return ms[7];
    };
    const float leaves = time([&] { keccak_leaves<<<(height + 255) / 256, 256>>>(d_m, height, width, d_leaves); });
    const float nodes = time([&] { keccak_nodes<<<(height / 2 + 255) / 256, 256>>>(d_leaves, d_nodes, height / 2); });
    CHECK(cudaGetLastError());
    std::vector<u64> lv(height * 4), nd(height * 2);
    CHECK(cudaMemcpy(lv.data(), d_leaves, lv.size() * 8, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(nd.data(), d_nodes, nd.size() * 8, cudaMemcpyDeviceToHost));
    int bad = 0;
    std::vector<u64> row(width);
    for (u64 r : {0ull, 1ull, 77ull, height / 3, height - 1}) {
        for (u64 c = 0; c < width; c++) row[c] = m[c * height + r];
        u64 h[4];
        host_hash(row.data(), width, h);
        bad += !std::equal(h, h + 4, &lv[r * 4]);
    }
    for (u64 k : {0ull, 5ull, height / 2 - 1}) {
        u64 h[4];
        host_hash(&lv[k * 8], 8, h);
        bad += !std::equal(h, h + 4, &nd[k * 4]);
    }
    printf("2^%d x %llu leaves %.3f ms (%.0f GB/s of leaf data), one node level %.3f ms; check %s\n",
           log_rows, (unsigned long long)width, leaves, height * width * 8 / leaves / 1e6, nodes,
           bad ? "FAILED" : "ok (5 rows, 3 nodes against the host)");
    return bad != 0;
}
