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

__device__ __forceinline__ u64 k_rotl(u64 x, int n) { return (x << n) | (x >> (64 - n)); }

// a ^ b ^ c as one LOP3 a half. Left to itself the compiler forms theta's
// d = c[x - 1] ^ rot(c[x + 1], 1) first and then xors it into each lane,
// one LOP3 a half more for each x: 194 integer instructions a round, 180
// this way. tests/field_asm.rs runs
// this asm on the host; the host build of the Merkle tests takes the
// plain form.
__device__ __forceinline__ u64 k_xor3(u64 a, u64 b, u64 c) {
#ifdef __CUDA_ARCH__
    u32 lo, hi;
    asm("lop3.b32 %0, %2, %3, %4, 0x96;\n\tlop3.b32 %1, %5, %6, %7, 0x96;"
        : "=r"(lo), "=r"(hi)
        : "r"((u32)a), "r"((u32)b), "r"((u32)c), "r"((u32)(a >> 32)), "r"((u32)(b >> 32)), "r"((u32)(c >> 32)));
    return ((u64)hi << 32) | lo;
#else
    return a ^ b ^ c;
#endif
}

__device__ __forceinline__ void keccak_f(u64 st[25]) {
    for (int round = 0; round < 24; round++) {
        u64 bc[5];
#pragma unroll
        for (int i = 0; i < 5; i++) bc[i] = st[i] ^ st[i + 5] ^ st[i + 10] ^ st[i + 15] ^ st[i + 20];
#pragma unroll
        for (int i = 0; i < 5; i++) {
            const u64 r = k_rotl(bc[(i + 1) % 5], 1);
#pragma unroll
            for (int j = 0; j < 25; j += 5) st[j + i] = k_xor3(st[j + i], bc[(i + 4) % 5], r);
        }
        // rho and pi
        u64 t = st[1];
        u64 tmp;
#define KRP(j, r) tmp = st[j]; st[j] = k_rotl(t, r); t = tmp;
        KRP(10, 1) KRP(7, 3) KRP(11, 6) KRP(17, 10) KRP(18, 15) KRP(3, 21) KRP(5, 28) KRP(16, 36)
        KRP(8, 45) KRP(21, 55) KRP(24, 2) KRP(4, 14) KRP(15, 27) KRP(23, 41) KRP(19, 56) KRP(13, 8)
        KRP(12, 25) KRP(2, 43) KRP(20, 62) KRP(14, 18) KRP(22, 39) KRP(9, 61) KRP(6, 20) KRP(1, 44)
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
