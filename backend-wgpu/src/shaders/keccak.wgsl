// Keccak-f[1600] and Keccak-256 with the original padding (0x01 .. 0x80),
// as the sha3 crate's Keccak256. Lanes are u64 as two u32 words (low
// first), which is exactly how field elements are hashed.
const KECCAK_RC = array<vec2<u32>, 24>(
    vec2<u32>(0x00000001u, 0x00000000u), vec2<u32>(0x00008082u, 0x00000000u), vec2<u32>(0x0000808Au, 0x80000000u),
    vec2<u32>(0x80008000u, 0x80000000u), vec2<u32>(0x0000808Bu, 0x00000000u), vec2<u32>(0x80000001u, 0x00000000u),
    vec2<u32>(0x80008081u, 0x80000000u), vec2<u32>(0x00008009u, 0x80000000u), vec2<u32>(0x0000008Au, 0x00000000u),
    vec2<u32>(0x00000088u, 0x00000000u), vec2<u32>(0x80008009u, 0x00000000u), vec2<u32>(0x8000000Au, 0x00000000u),
    vec2<u32>(0x8000808Bu, 0x00000000u), vec2<u32>(0x0000008Bu, 0x80000000u), vec2<u32>(0x00008089u, 0x80000000u),
    vec2<u32>(0x00008003u, 0x80000000u), vec2<u32>(0x00008002u, 0x80000000u), vec2<u32>(0x00000080u, 0x80000000u),
    vec2<u32>(0x0000800Au, 0x00000000u), vec2<u32>(0x8000000Au, 0x80000000u), vec2<u32>(0x80008081u, 0x80000000u),
    vec2<u32>(0x00008080u, 0x80000000u), vec2<u32>(0x80000001u, 0x00000000u), vec2<u32>(0x80008008u, 0x80000000u));
// rho offsets and pi destinations, in the order of the lane walk from 1.
const KECCAK_PI = array<u32, 24>(10u, 7u, 11u, 17u, 18u, 3u, 5u, 16u, 8u, 21u, 24u, 4u,
                                 15u, 23u, 19u, 13u, 12u, 2u, 20u, 14u, 22u, 9u, 6u, 1u);
const KECCAK_RHO = array<u32, 24>(1u, 3u, 6u, 10u, 15u, 21u, 28u, 36u, 45u, 55u, 2u, 14u,
                                  27u, 41u, 56u, 8u, 25u, 43u, 62u, 18u, 39u, 61u, 20u, 44u);

fn rotl64(x: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return x;
    }
    if (n == 32u) {
        return vec2<u32>(x.y, x.x);
    }
    if (n < 32u) {
        return vec2<u32>((x.x << n) | (x.y >> (32u - n)), (x.y << n) | (x.x >> (32u - n)));
    }
    let m = n - 32u;
    return vec2<u32>((x.y << m) | (x.x >> (32u - m)), (x.x << m) | (x.y >> (32u - m)));
}

fn keccak_f(st: ptr<function, array<vec2<u32>, 25>>) {
    for (var round = 0u; round < 24u; round++) {
        var bc: array<vec2<u32>, 5>;
        for (var i = 0u; i < 5u; i++) {
            bc[i] = (*st)[i] ^ (*st)[i + 5u] ^ (*st)[i + 10u] ^ (*st)[i + 15u] ^ (*st)[i + 20u];
        }
        for (var i = 0u; i < 5u; i++) {
            let t = bc[(i + 4u) % 5u] ^ rotl64(bc[(i + 1u) % 5u], 1u);
            for (var j = 0u; j < 25u; j += 5u) {
                (*st)[j + i] = (*st)[j + i] ^ t;
            }
        }
        var t = (*st)[1];
        for (var i = 0u; i < 24u; i++) {
            let j = KECCAK_PI[i];
            let tmp = (*st)[j];
            (*st)[j] = rotl64(t, KECCAK_RHO[i]);
            t = tmp;
        }
        for (var j = 0u; j < 25u; j += 5u) {
            for (var i = 0u; i < 5u; i++) {
                bc[i] = (*st)[j + i];
            }
            for (var i = 0u; i < 5u; i++) {
                (*st)[j + i] = bc[i] ^ (~bc[(i + 1u) % 5u] & bc[(i + 2u) % 5u]);
            }
        }
        (*st)[0] = (*st)[0] ^ KECCAK_RC[round];
    }
}
