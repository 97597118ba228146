// Proof-of-work search: every thread tests one nonce of the batch
// [start, start + count); the smallest valid nonce wins through atomicMin,
// and batches are launched in increasing order, so the first batch with a
// hit yields the smallest nonce overall.
__device__ __forceinline__ u32 bswap32(u32 x) { return __byte_perm(x, 0, 0x0123); }

extern "C" __global__ void grind_blake3(u64 s0, u64 s1, u64 s2, u64 s3, u64 start, u64 count, u64 bits,
                                        unsigned long long* best) {
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= count) return;
    u64 nonce = start + idx;
    u32 m[16];
    u64 seed[4] = {s0, s1, s2, s3};
#pragma unroll
    for (int t = 0; t < 4; t++) {
        m[2 * t] = (u32)seed[t];
        m[2 * t + 1] = (u32)(seed[t] >> 32);
    }
    m[8] = (u32)nonce;
    m[9] = (u32)(nonce >> 32);
#pragma unroll
    for (int t = 10; t < 16; t++) m[t] = 0;
    u32 h[8];
    b3_hash_block(m, 40, h);
    u64 v = ((u64)bswap32(h[0]) << 32) | (u64)bswap32(h[1]);
    if ((u32)__clzll(v) >= bits) atomicMin(best, (unsigned long long)nonce);
}

extern "C" __global__ void grind_keccak(u64 s0, u64 s1, u64 s2, u64 s3, u64 start, u64 count, u64 bits,
                                        unsigned long long* best) {
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= count) return;
    u64 nonce = start + idx;
    u64 st[25];
#pragma unroll
    for (int t = 0; t < 25; t++) st[t] = 0;
    st[0] = s0;
    st[1] = s1;
    st[2] = s2;
    st[3] = s3;
    st[4] = nonce;
    st[5] = 1ull;
    st[16] = 0x8000000000000000ull;
    keccak_f(st);
    u64 lane = st[0];
    u64 v = ((u64)bswap32((u32)lane) << 32) | (u64)bswap32((u32)(lane >> 32));
    if ((u32)__clzll(v) >= bits) atomicMin(best, (unsigned long long)nonce);
}
