// BLAKE3 Merkle leaves (one thread per row of a column-major matrix) and
// inner nodes, and the gathers of openings. Digests are stored as 4 u64
// (the 32 digest bytes, little-endian).

#define B3_MAX_STACK 24

// Loads 8 elements (one 64-byte block) of row `row`, starting at element
// `first`, zero-padding past `width`; returns the block length in bytes.
__device__ __forceinline__ u32 b3_load_block(const u64* __restrict__ m, u64 height, u32 width, u64 row, u32 first,
                                             u32 w[16]) {
    u32 n = width - first;
    if (n > 8) n = 8;
#pragma unroll
    for (u32 t = 0; t < 8; t++) {
        u64 e = 0;
        if (t < n) e = m[(u64)(first + t) * height + row];
        w[2 * t] = (u32)e;
        w[2 * t + 1] = (u32)(e >> 32);
    }
    return n * 8;
}

// A chaining value as the digest's 4 words, and back.
__device__ __forceinline__ void b3_store(u64* o, const u32 cv[8]) {
#pragma unroll
    for (int i = 0; i < 4; i++) o[i] = (u64)cv[2 * i] | ((u64)cv[2 * i + 1] << 32);
}
__device__ __forceinline__ void b3_load(const u64* o, u32 cv[8]) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        cv[2 * i] = (u32)o[i];
        cv[2 * i + 1] = (u32)(o[i] >> 32);
    }
}

// A row's chunks past the first joined as BLAKE3's tree: chunk ci (not the
// last) goes onto the stack of complete subtrees, merging those of equal
// size; the last chunk's value is folded with the stack into the digest.
__device__ __forceinline__ void b3_push_chunk(u32 stack[][8], u32& depth, u32 cv[8], u32 ci) {
    u64 total = ci + 1;
    while ((total & 1) == 0) {
        depth--;
        b3_parent(stack[depth], cv, 0u, cv);
        total >>= 1;
    }
#pragma unroll
    for (int i = 0; i < 8; i++) stack[depth][i] = cv[i];
    depth++;
}
__device__ __forceinline__ void b3_close_stack(u32 stack[][8], u32 depth, u32 cv[8]) {
    while (depth > 0) {
        depth--;
        b3_parent(stack[depth], cv, depth == 0 ? B3_ROOT : 0u, cv);
    }
}

extern "C" __global__ void blake3_leaves(const u64* __restrict__ m, u64 height, u64 width, u64* out) {
    u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= height) return;
    const u32 n_chunks = (width + 127) / 128;
    u32 stack[B3_MAX_STACK][8];
    u32 depth = 0;
    u32 cv[8];
    for (u32 ci = 0; ci < n_chunks; ci++) {
        u32 first = ci * 128;
        u32 elems = width - first;
        if (elems > 128) elems = 128;
        u32 nblocks = (elems + 7) / 8;
#pragma unroll
        for (int i = 0; i < 8; i++) cv[i] = B3_IV[i];
        bool last_chunk = ci + 1 == n_chunks;
        for (u32 b = 0; b < nblocks; b++) {
            u32 w[16];
            u32 len = b3_load_block(m, height, width, row, first + b * 8, w);
            u32 flags = (b == 0 ? B3_CHUNK_START : 0u) | (b + 1 == nblocks ? B3_CHUNK_END : 0u);
            if (last_chunk && n_chunks == 1 && b + 1 == nblocks) flags |= B3_ROOT;
            b3_compress(cv, w, ci, len, flags, cv);
        }
        if (!last_chunk) b3_push_chunk(stack, depth, cv, ci);
    }
    b3_close_stack(stack, depth, cv);
    b3_store(out + row * 4, cv);
}

// Leaves hashed a block at a time, while the matrix is still being made
// (its columns arrive in order): blake3_leaf_blocks advances every row over
// its blocks [b0, b1) (block b holds elements 8b..8b+7), keeping chunk c's
// chaining value of row r in state[4 (c height + r)..]. A row of one chunk
// ends with its digest there; blake3_leaf_merge joins the chunks of longer
// rows. Together they give blake3_leaves's digests.
extern "C" __global__ void blake3_leaf_blocks(const u64* __restrict__ m, u64 height, u64 width, u64 b0, u64 b1,
                                              u64* state) {
    u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= height) return;
    const u32 blocks = (width + 7) / 8;
    const u32 n_chunks = (width + 127) / 128;
    u32 cv[8];
    for (u32 b = b0; b < b1; b++) {
        const u32 ci = b / 16, bi = b % 16;
        const u32 chunk_blocks = min(16u, blocks - ci * 16);
        u64* slot = state + 4 * ((u64)ci * height + row);
        if (bi == 0) {
#pragma unroll
            for (int i = 0; i < 8; i++) cv[i] = B3_IV[i];
        } else if (b == b0) {
            b3_load(slot, cv);
        }
        u32 w[16];
        const u32 len = b3_load_block(m, height, width, row, b * 8, w);
        const bool end = bi + 1 == chunk_blocks;
        const u32 flags = (bi == 0 ? B3_CHUNK_START : 0u) | (end ? B3_CHUNK_END : 0u) | (end && n_chunks == 1 ? B3_ROOT : 0u);
        b3_compress(cv, w, ci, len, flags, cv);
        if (end || b + 1 == b1) b3_store(slot, cv);
    }
}

extern "C" __global__ void blake3_leaf_merge(const u64* __restrict__ state, u64 height, u64 width, u64* out) {
    u64 row = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= height) return;
    const u32 n_chunks = (width + 127) / 128;
    u32 stack[B3_MAX_STACK][8];
    u32 depth = 0;
    u32 cv[8];
    for (u32 ci = 0; ci < n_chunks; ci++) {
        b3_load(state + 4 * ((u64)ci * height + row), cv);
        if (ci + 1 < n_chunks) b3_push_chunk(stack, depth, cv, ci);
    }
    b3_close_stack(stack, depth, cv);
    b3_store(out + row * 4, cv);
}

// The parent of the two digests at p, into o.
__device__ __forceinline__ void blake3_node(const u64* p, u64* o) {
    u32 w[16];
#pragma unroll
    for (int t = 0; t < 8; t++) {
        u64 e = p[t];
        w[2 * t] = (u32)e;
        w[2 * t + 1] = (u32)(e >> 32);
    }
    u32 h[8];
    b3_hash_block(w, 64, h);
    b3_store(o, h);
}

extern "C" __global__ void blake3_nodes(const u64* __restrict__ in, u64* out, u64 count) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    blake3_node(in + i * 8, out + i * 4);
}

// `levels` levels above the `count` digests at digest `src` of d (see
// keccak_levels).
extern "C" __global__ void blake3_levels(u64* d, u64 src, u64 count, u64 levels) {
    u64 span = count / gridDim.x;
    for (u64 k = 0; k < levels; k++) {
        const u64 dst = src + count, first = blockIdx.x * span;
        for (u64 i = threadIdx.x; i < span / 2; i += blockDim.x)
            blake3_node(d + 4 * (src + first + 2 * i), d + 4 * (dst + first / 2 + i));
        __syncthreads();
        src = dst;
        count >>= 1;
        span >>= 1;
    }
}

// out[k] = src[idx[k]]: row values and authentication paths for openings.
extern "C" __global__ void gather_u64(const u64* __restrict__ src, const u64* __restrict__ idx, u64* out, u64 count) {
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count) out[k] = src[idx[k]];
}
