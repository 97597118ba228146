// The Merkle kernels compiled for the host: every block of a launch runs
// in turn, with one thread (the kernels' block-stride loops cover every
// index, and a synchronisation is a no-op).
// `leaves IN OUT`: reads a column-major matrix (height, width, then the
// values) from IN; writes to OUT, one after another, the leaf digests (4
// words a row) of: blake3_leaves; blake3_leaf_blocks (+ merge) a block at
// a time, three at a time and all at once; keccak_leaves;
// keccak_leaf_blocks a block at a time, two at a time and all at once.
// `tree IN OUT HASH FROM LEVELS` (HASH 0 BLAKE3, 1 Keccak): reads n (a
// power of two) and n leaf digests; writes the whole tree (levels one
// after another) built as CudaBackend::tree_over_leaves builds it, with
// levels above FROM digests a launch each and the rest LEVELS a launch.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
typedef unsigned long long u64;
typedef unsigned int u32;
#define __device__
#define __global__
#define __forceinline__ inline
#define __constant__
#define __restrict__
struct Dim3 { u64 x; };
static Dim3 blockIdx, blockDim = {1}, threadIdx, gridDim = {1};
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

template <class K> static void launch(u64 blocks, K k) {
    gridDim.x = blocks;
    for (u64 t = 0; t < blocks; t++) {
        blockIdx.x = t;
        k();
    }
}

static int tree(char** argv) {
    FILE* in = fopen(argv[2], "rb");
    u64 n;
    if (!in || fread(&n, 8, 1, in) != 1) return 3;
    std::vector<u64> d(4 * (2 * n - 1));
    if (fread(d.data(), 8, 4 * n, in) != 4 * n) return 3;
    fclose(in);
    const bool keccak = atoi(argv[4]) == 1;
    const u64 from = strtoull(argv[5], 0, 10), subtree = strtoull(argv[6], 0, 10);
    u64 src = 0, count = n;
    while (count > 1) {
        if (count > from) {
            const u64 parents = count / 2;
            launch(parents, [&] {
                if (keccak) keccak_nodes(d.data() + 4 * src, d.data() + 4 * (src + count), parents);
                else blake3_nodes(d.data() + 4 * src, d.data() + 4 * (src + count), parents);
            });
            src += count;
            count = parents;
            continue;
        }
        u64 levels = 0;
        while ((1ull << levels) < count && (count <= 256 || levels < subtree)) levels++;
        launch(count >> levels, [&] {
            if (keccak) keccak_levels(d.data(), src, count, levels);
            else blake3_levels(d.data(), src, count, levels);
        });
        for (u64 k = 0; k < levels; k++) src += count >> k;
        count >>= levels;
    }
    FILE* out = fopen(argv[3], "wb");
    fwrite(d.data(), 8, d.size(), out);
    fclose(out);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 7 && strcmp(argv[1], "tree") == 0) return tree(argv);
    if (argc != 4 || strcmp(argv[1], "leaves") != 0) return 2;
    FILE* in = fopen(argv[2], "rb");
    u64 hw[2];
    if (!in || fread(hw, 8, 2, in) != 2) return 3;
    const u64 h = hw[0], w = hw[1];
    std::vector<u64> m(h * w), d(4 * h);
    if (fread(m.data(), 8, m.size(), in) != m.size()) return 3;
    fclose(in);
    FILE* out = fopen(argv[3], "wb");
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
