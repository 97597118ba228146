// The Merkle leaf kernels compiled for the host: every thread of a launch
// runs in turn. Reads a column-major matrix (height, width, then the
// values) from argv[1]; writes to argv[2], one after another, the leaf
// digests (4 words a row) of: blake3_leaves; blake3_leaf_blocks (+ merge)
// a block at a time, three at a time and all at once; keccak_leaves;
// keccak_leaf_blocks a block at a time, two at a time and all at once.
#include <algorithm>
#include <cstdio>
#include <vector>
typedef unsigned long long u64;
typedef unsigned int u32;
#define __device__
#define __global__
#define __forceinline__ inline
#define __constant__
#define __restrict__
struct Dim3 { u64 x; };
static Dim3 blockIdx, blockDim = {1}, threadIdx;
static inline u32 __funnelshift_r(u32 lo, u32 hi, u32 n) {
    n &= 31;
    return n ? (lo >> n) | (hi << (32 - n)) : lo;
}
static inline void __syncthreads() {}
using std::min;
#include "blake3.cuh"
#include "keccak.cuh"
#include "merkle_blake3.cu"
#include "merkle_keccak.cu"

template <class K> static void launch(u64 threads, K k) {
    for (u64 t = 0; t < threads; t++) {
        blockIdx.x = t;
        k();
    }
}

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    FILE* in = fopen(argv[1], "rb");
    u64 hw[2];
    if (!in || fread(hw, 8, 2, in) != 2) return 3;
    const u64 h = hw[0], w = hw[1];
    std::vector<u64> m(h * w), d(4 * h);
    if (fread(m.data(), 8, m.size(), in) != m.size()) return 3;
    fclose(in);
    FILE* out = fopen(argv[2], "wb");
    auto emit = [&] { fwrite(d.data(), 8, d.size(), out); };
    launch(h, [&] { blake3_leaves(m.data(), h, w, d.data()); });
    emit();
    const u64 blocks = (w + 7) / 8, chunks = (w + 127) / 128;
    for (u64 step : {u64(1), u64(3), blocks}) {
        std::vector<u64> state(4 * chunks * h, 0x5a5a5a5a5a5a5a5aull);
        for (u64 b = 0; b < blocks; b += step)
            launch(h, [&] { blake3_leaf_blocks(m.data(), h, w, b, std::min(blocks, b + step), state.data()); });
        if (chunks == 1) std::copy(state.begin(), state.end(), d.begin());
        else launch(h, [&] { blake3_leaf_merge(state.data(), h, w, d.data()); });
        emit();
    }
    launch(h, [&] { keccak_leaves(m.data(), h, w, d.data()); });
    emit();
    const u64 kblocks = w / 17 + 1;
    for (u64 step : {u64(1), u64(2), kblocks}) {
        std::vector<u64> state(25 * h, 0x5a5a5a5a5a5a5a5aull);
        std::fill(d.begin(), d.end(), 0);
        for (u64 b = 0; b < kblocks; b += step)
            launch(h, [&] { keccak_leaf_blocks(m.data(), h, w, b, std::min(kblocks, b + step), state.data(), d.data()); });
        emit();
    }
    fclose(out);
    return 0;
}
