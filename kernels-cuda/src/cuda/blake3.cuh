// BLAKE3 compression (single-threaded per message), bit-identical to the
// reference: 7 rounds, message permutation, chunk/parent/root flags.
#define B3_CHUNK_START 1u
#define B3_CHUNK_END 2u
#define B3_PARENT 4u
#define B3_ROOT 8u

__device__ __constant__ u32 B3_IV[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                                        0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};

__device__ __forceinline__ u32 b3_rotr(u32 x, u32 n) { return __funnelshift_r(x, x, n); }

#define B3_G(a, b, c, d, mx, my)        \
    do {                                \
        v[a] = v[a] + v[b] + (mx);      \
        v[d] = b3_rotr(v[d] ^ v[a], 16); \
        v[c] = v[c] + v[d];             \
        v[b] = b3_rotr(v[b] ^ v[c], 12); \
        v[a] = v[a] + v[b] + (my);      \
        v[d] = b3_rotr(v[d] ^ v[a], 8);  \
        v[c] = v[c] + v[d];             \
        v[b] = b3_rotr(v[b] ^ v[c], 7);  \
    } while (0)

// out = first 8 words of the compression output (the chaining value).
__device__ __forceinline__ void b3_compress(const u32 cv[8], const u32 m_in[16], u64 counter, u32 block_len,
                                            u32 flags, u32 out[8]) {
    u32 v[16];
    u32 m[16];
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = cv[i];
#pragma unroll
    for (int i = 0; i < 4; i++) v[8 + i] = B3_IV[i];
    v[12] = (u32)counter;
    v[13] = (u32)(counter >> 32);
    v[14] = block_len;
    v[15] = flags;
#pragma unroll
    for (int i = 0; i < 16; i++) m[i] = m_in[i];
#pragma unroll
    for (int r = 0; r < 7; r++) {
        B3_G(0, 4, 8, 12, m[0], m[1]);
        B3_G(1, 5, 9, 13, m[2], m[3]);
        B3_G(2, 6, 10, 14, m[4], m[5]);
        B3_G(3, 7, 11, 15, m[6], m[7]);
        B3_G(0, 5, 10, 15, m[8], m[9]);
        B3_G(1, 6, 11, 12, m[10], m[11]);
        B3_G(2, 7, 8, 13, m[12], m[13]);
        B3_G(3, 4, 9, 14, m[14], m[15]);
        if (r < 6) {
            u32 t[16];
            t[0] = m[2]; t[1] = m[6]; t[2] = m[3]; t[3] = m[10];
            t[4] = m[7]; t[5] = m[0]; t[6] = m[4]; t[7] = m[13];
            t[8] = m[1]; t[9] = m[11]; t[10] = m[12]; t[11] = m[5];
            t[12] = m[9]; t[13] = m[14]; t[14] = m[15]; t[15] = m[8];
#pragma unroll
            for (int i = 0; i < 16; i++) m[i] = t[i];
        }
    }
#pragma unroll
    for (int i = 0; i < 8; i++) out[i] = v[i] ^ v[i + 8];
}

__device__ __forceinline__ void b3_parent(const u32 left[8], const u32 right[8], u32 flags, u32 out[8]) {
    u32 m[16];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        m[i] = left[i];
        m[8 + i] = right[i];
    }
    u32 iv[8];
#pragma unroll
    for (int i = 0; i < 8; i++) iv[i] = B3_IV[i];
    b3_compress(iv, m, 0, 64, B3_PARENT | flags, out);
}

// BLAKE3 of one message of <= 64 bytes given as 16 words (zero-padded).
__device__ __forceinline__ void b3_hash_block(const u32 m[16], u32 len, u32 out[8]) {
    u32 iv[8];
#pragma unroll
    for (int i = 0; i < 8; i++) iv[i] = B3_IV[i];
    b3_compress(iv, m, 0, len, B3_CHUNK_START | B3_CHUNK_END | B3_ROOT, out);
}
