// Keccak-f[1600] and Keccak-256 with the original padding (0x01 ... 0x80),
// as the sha3 crate's Keccak256. Rate 136 bytes = 17 lanes; lanes are
// little-endian u64, which is exactly how field elements are hashed.
__device__ __constant__ u64 KECCAK_RC[24] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808Aull, 0x8000000080008000ull,
    0x000000000000808Bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008Aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000Aull,
    0x000000008000808Bull, 0x800000000000008Bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800Aull, 0x800000008000000Aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull};

// Rotations: Keccak-f's round is all integer-ALU work (LOP3 for the XORs
// and chi, SHF for the rotations), and the ALU pipe bounds it. A rotation
// can instead run on the FMA pipe, as products by 2^n: each 32-bit half
// is lo * 2^n + hi(hi * 2^n). The powers come from constant memory so that
// ptxas keeps them as IMADs rather than turning them back into shifts.
// KECCAK_FMA_ROTS of the round's 29 rotations (theta's five first, then
// rho's in pi's order) go to the FMA pipe.
#ifndef KECCAK_FMA_ROTS
#define KECCAK_FMA_ROTS 0
#endif
__device__ __constant__ u32 KECCAK_POW2[32] = {
    1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,  1u << 8,  1u << 9,  1u << 10,
    1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15, 1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21,
    1u << 22, 1u << 23, 1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31};

// x rotated left by a constant 0 < n < 64; rotation number k of the round.
__device__ __forceinline__ u64 k_rotl(u64 x, int n, int k) {
    if (k >= KECCAK_FMA_ROTS) return (x << n) | (x >> (64 - n));
    u32 lo = (u32)x, hi = (u32)(x >> 32);
    if (n >= 32) {
        const u32 t = lo;
        lo = hi;
        hi = t;
        n -= 32;
    }
    if (n == 0) return ((u64)hi << 32) | lo;
    const u32 m = KECCAK_POW2[n];
    return ((u64)(hi * m + __umulhi(lo, m)) << 32) | (lo * m + __umulhi(hi, m));
}

__device__ __forceinline__ void keccak_f(u64 st[25]) {
    for (int round = 0; round < 24; round++) {
        u64 bc[5];
#pragma unroll
        for (int i = 0; i < 5; i++) bc[i] = st[i] ^ st[i + 5] ^ st[i + 10] ^ st[i + 15] ^ st[i + 20];
#pragma unroll
        for (int i = 0; i < 5; i++) {
            u64 t = bc[(i + 4) % 5] ^ k_rotl(bc[(i + 1) % 5], 1, i);
#pragma unroll
            for (int j = 0; j < 25; j += 5) st[j + i] ^= t;
        }
        // rho and pi
        u64 t = st[1];
        u64 tmp;
#define KRP(j, r, k) tmp = st[j]; st[j] = k_rotl(t, r, 5 + k); t = tmp;
        KRP(10, 1, 0) KRP(7, 3, 1) KRP(11, 6, 2) KRP(17, 10, 3) KRP(18, 15, 4) KRP(3, 21, 5) KRP(5, 28, 6)
        KRP(16, 36, 7) KRP(8, 45, 8) KRP(21, 55, 9) KRP(24, 2, 10) KRP(4, 14, 11) KRP(15, 27, 12) KRP(23, 41, 13)
        KRP(19, 56, 14) KRP(13, 8, 15) KRP(12, 25, 16) KRP(2, 43, 17) KRP(20, 62, 18) KRP(14, 18, 19)
        KRP(22, 39, 20) KRP(9, 61, 21) KRP(6, 20, 22) KRP(1, 44, 23)
#undef KRP
#pragma unroll
        for (int j = 0; j < 25; j += 5) {
#pragma unroll
            for (int i = 0; i < 5; i++) bc[i] = st[j + i];
#pragma unroll
            for (int i = 0; i < 5; i++) st[j + i] ^= (~bc[(i + 1) % 5]) & bc[(i + 2) % 5];
        }
        st[0] ^= KECCAK_RC[round];
    }
}
