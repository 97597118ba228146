// Keccak-256 Merkle leaves (one thread per row of a column-major matrix)
// and inner nodes. Digests are stored as 4 u64 (the 32 digest bytes,
// little-endian). A module apart from BLAKE3's: the two compile in
// parallel.

extern "C" __global__ void keccak_leaves(const u64* __restrict__ m, u64 height, u64 width, u64* out) {
    u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= height) return;
    u64 st[25];
#pragma unroll
    for (int i = 0; i < 25; i++) st[i] = 0;
    u32 col = 0;
    while (col + 17 <= width) {
#pragma unroll
        for (int t = 0; t < 17; t++) st[t] ^= m[(u64)(col + t) * height + row];
        keccak_f(st);
        col += 17;
    }
    u32 rem = width - col;
#pragma unroll
    for (u32 t = 0; t < 17; t++) {
        if (t < rem) st[t] ^= m[(u64)(col + t) * height + row];
        if (t == rem) st[t] ^= 1ull;
    }
    st[16] ^= 0x8000000000000000ull;
    keccak_f(st);
    u64* o = out + row * 4;
#pragma unroll
    for (int i = 0; i < 4; i++) o[i] = st[i];
}

// The parent of the two digests at p, into o.
__device__ __forceinline__ void keccak_node(const u64* p, u64* o) {
    u64 st[25];
#pragma unroll
    for (int t = 0; t < 25; t++) st[t] = 0;
#pragma unroll
    for (int t = 0; t < 8; t++) st[t] = p[t];
    st[8] = 1ull;
    st[16] = 0x8000000000000000ull;
    keccak_f(st);
#pragma unroll
    for (int t = 0; t < 4; t++) o[t] = st[t];
}

extern "C" __global__ void keccak_nodes(const u64* __restrict__ in, u64* out, u64 count) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    keccak_node(in + i * 8, out + i * 4);
}

// Every level above the `count` digests at digest `src` of d (levels
// stored one after another), up to the root, in one block synchronised
// between levels: a tree's small top levels each cost a launch's latency
// more than their hashing does.
extern "C" __global__ void keccak_top(u64* d, u64 src, u64 count) {
    while (count > 1) {
        const u64 dst = src + count;
        count >>= 1;
        for (u64 i = threadIdx.x; i < count; i += blockDim.x) keccak_node(d + 4 * (src + 2 * i), d + 4 * (dst + i));
        __syncthreads();
        src = dst;
    }
}
