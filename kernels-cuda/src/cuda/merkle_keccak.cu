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

// Leaves hashed a block at a time, while the matrix is still being made
// (its columns arrive in order): every row absorbs its blocks [b0, b1),
// block b < width / 17 being elements 17b..17b+16 (one rate) and block
// width / 17 the rest with the padding. Between calls a row's state is
// state[i height + row], i < 25; the call that absorbs the last block
// writes the digest to out instead. Together they give keccak_leaves's
// digests.
extern "C" __global__ void keccak_leaf_blocks(const u64* __restrict__ m, u64 height, u64 width, u64 b0, u64 b1,
                                              u64* state, u64* out) {
    u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= height) return;
    const u64 last = width / 17;
    u64 st[25];
#pragma unroll
    for (int i = 0; i < 25; i++) st[i] = b0 == 0 ? 0 : state[(u64)i * height + row];
    for (u64 b = b0; b < b1; b++) {
        const u64 col = b * 17;
        if (b < last) {
#pragma unroll
            for (int t = 0; t < 17; t++) st[t] ^= m[(col + t) * height + row];
        } else {
            const u32 rem = width - col;
#pragma unroll
            for (u32 t = 0; t < 17; t++) {
                if (t < rem) st[t] ^= m[(col + t) * height + row];
                if (t == rem) st[t] ^= 1ull;
            }
            st[16] ^= 0x8000000000000000ull;
        }
        keccak_f(st);
    }
    if (b1 == last + 1) {
        u64* o = out + row * 4;
#pragma unroll
        for (int i = 0; i < 4; i++) o[i] = st[i];
    } else {
#pragma unroll
        for (int i = 0; i < 25; i++) state[(u64)i * height + row] = st[i];
    }
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

// `levels` levels above the `count` digests at digest `src` of d (levels
// stored one after another, each right after the one below), a subtree a
// block: block b builds the parents of the digests [b span, (b + 1) span),
// span = count / gridDim.x, then theirs, and so on, synchronised between
// levels. Small levels each cost a launch's latency more than their
// hashing does; one launch builds up to log2(span) of them. One block over
// a whole level builds the tree's top.
extern "C" __global__ void keccak_levels(u64* d, u64 src, u64 count, u64 levels) {
    u64 span = count / gridDim.x;
    for (u64 k = 0; k < levels; k++) {
        const u64 dst = src + count, first = blockIdx.x * span;
        for (u64 i = threadIdx.x; i < span / 2; i += blockDim.x)
            keccak_node(d + 4 * (src + first + 2 * i), d + 4 * (dst + first / 2 + i));
        __syncthreads();
        src = dst;
        count >>= 1;
        span >>= 1;
    }
}
