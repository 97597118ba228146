// What pinning a host buffer in place costs on this host, beside the
// copy engine and the host's own copy rate (the staging copy's):
//   512 MiB registered whole, copied, unregistered (three times);
//   registered in 32 pieces by 1-16 threads, each piece copied as soon as
//   it is registered (the copy stream in order), then unregistered;
//   memcpy into pinned memory by 1-16 threads.
// nvcc -O2 -o pin_rates benches/pinning/pin_rates.cu -lpthread && ./pin_rates
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <atomic>
using clk = std::chrono::steady_clock;
static double ms(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
int main() {
    const size_t n = 512ull << 20, pieces = 32, piece = n / pieces;
    char* d; CK(cudaMalloc(&d, n));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int rep = 0; rep < 3; rep++) {
        char* h = (char*)aligned_alloc(4096, n); memset(h, rep + 1, n);
        auto t0 = clk::now(); CK(cudaHostRegister(h, n, 0)); auto t1 = clk::now();
        CK(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s)); auto t2 = clk::now();
        CK(cudaHostUnregister(h)); auto t3 = clk::now();
        printf("whole: register %.2f, copy %.2f, unregister %.2f ms\n", ms(t0, t1), ms(t1, t2), ms(t2, t3));
        free(h);
    }
    for (int threads : {1, 4, 8, 16}) {
        for (int rep = 0; rep < 2; rep++) {
            char* h = (char*)aligned_alloc(4096, n); memset(h, rep + 1, n);
            std::vector<std::atomic<int>> ready(pieces);
            for (auto& r : ready) r = 0;
            auto t0 = clk::now();
            std::atomic<size_t> next{0};
            std::vector<std::thread> ts;
            for (int t = 0; t < threads; t++) ts.emplace_back([&] {
                for (size_t k; (k = next++) < pieces;) { CK(cudaHostRegister(h + k * piece, piece, 0)); ready[k] = 1; }
            });
            for (size_t k = 0; k < pieces; k++) {
                while (!ready[k]) std::this_thread::yield();
                CK(cudaMemcpyAsync(d + k * piece, h + k * piece, piece, cudaMemcpyHostToDevice, s));
            }
            CK(cudaStreamSynchronize(s)); auto t1 = clk::now();
            for (auto& t : ts) t.join();
            auto t2 = clk::now();
            std::vector<std::thread> us;
            std::atomic<size_t> un{0};
            for (int t = 0; t < threads; t++) us.emplace_back([&] { for (size_t k; (k = un++) < pieces;) CK(cudaHostUnregister(h + k * piece)); });
            for (auto& t : us) t.join();
            auto t3 = clk::now();
            printf("%2d threads, %zu pieces: register+copy pipelined %.2f ms (%.1f GB/s), unregister %.2f ms\n", threads, pieces, ms(t0, t1), n / ms(t0, t1) / 1e6, ms(t2, t3));
            free(h);
        }
    }
    // host copy bandwidth with threads into a pinned buffer
    char* p; CK(cudaHostAlloc(&p, n, 0)); memset(p, 0, n);
    char* h = (char*)aligned_alloc(4096, n); memset(h, 3, n);
    for (int threads : {1, 4, 8, 16}) {
        auto t0 = clk::now();
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; t++) ts.emplace_back([&, t] { size_t a = n / threads * t; memcpy(p + a, h + a, n / threads); });
        for (auto& t : ts) t.join();
        auto t1 = clk::now();
        printf("memcpy into pinned, %2d threads: %.1f GB/s\n", threads, n / ms(t0, t1) / 1e6);
    }
    return 0;
}
