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
// Keccak-f[1600] with the state's 25 lanes in locals for the 24 rounds:
// theta, rho and pi, chi and iota written out with constant lanes and
// rotations, so no lane is indexed at run time (an indexed state lives in
// local memory, not registers).
fn keccak_f(st: ptr<function, array<vec2<u32>, 25>>) {
    var a0 = (*st)[0];
    var a1 = (*st)[1];
    var a2 = (*st)[2];
    var a3 = (*st)[3];
    var a4 = (*st)[4];
    var a5 = (*st)[5];
    var a6 = (*st)[6];
    var a7 = (*st)[7];
    var a8 = (*st)[8];
    var a9 = (*st)[9];
    var a10 = (*st)[10];
    var a11 = (*st)[11];
    var a12 = (*st)[12];
    var a13 = (*st)[13];
    var a14 = (*st)[14];
    var a15 = (*st)[15];
    var a16 = (*st)[16];
    var a17 = (*st)[17];
    var a18 = (*st)[18];
    var a19 = (*st)[19];
    var a20 = (*st)[20];
    var a21 = (*st)[21];
    var a22 = (*st)[22];
    var a23 = (*st)[23];
    var a24 = (*st)[24];
    for (var round = 0u; round < 24u; round++) {
        let c0 = a0 ^ a5 ^ a10 ^ a15 ^ a20;
        let c1 = a1 ^ a6 ^ a11 ^ a16 ^ a21;
        let c2 = a2 ^ a7 ^ a12 ^ a17 ^ a22;
        let c3 = a3 ^ a8 ^ a13 ^ a18 ^ a23;
        let c4 = a4 ^ a9 ^ a14 ^ a19 ^ a24;
        let d0 = c4 ^ vec2<u32>((c1.x << 1u) | (c1.y >> 31u), (c1.y << 1u) | (c1.x >> 31u));
        let d1 = c0 ^ vec2<u32>((c2.x << 1u) | (c2.y >> 31u), (c2.y << 1u) | (c2.x >> 31u));
        let d2 = c1 ^ vec2<u32>((c3.x << 1u) | (c3.y >> 31u), (c3.y << 1u) | (c3.x >> 31u));
        let d3 = c2 ^ vec2<u32>((c4.x << 1u) | (c4.y >> 31u), (c4.y << 1u) | (c4.x >> 31u));
        let d4 = c3 ^ vec2<u32>((c0.x << 1u) | (c0.y >> 31u), (c0.y << 1u) | (c0.x >> 31u));
        let b0 = a0 ^ d0;
        let t5 = a5 ^ d0;
        let b16 = vec2<u32>((t5.y << 4u) | (t5.x >> 28u), (t5.x << 4u) | (t5.y >> 28u));
        let t10 = a10 ^ d0;
        let b7 = vec2<u32>((t10.x << 3u) | (t10.y >> 29u), (t10.y << 3u) | (t10.x >> 29u));
        let t15 = a15 ^ d0;
        let b23 = vec2<u32>((t15.y << 9u) | (t15.x >> 23u), (t15.x << 9u) | (t15.y >> 23u));
        let t20 = a20 ^ d0;
        let b14 = vec2<u32>((t20.x << 18u) | (t20.y >> 14u), (t20.y << 18u) | (t20.x >> 14u));
        let t1 = a1 ^ d1;
        let b10 = vec2<u32>((t1.x << 1u) | (t1.y >> 31u), (t1.y << 1u) | (t1.x >> 31u));
        let t6 = a6 ^ d1;
        let b1 = vec2<u32>((t6.y << 12u) | (t6.x >> 20u), (t6.x << 12u) | (t6.y >> 20u));
        let t11 = a11 ^ d1;
        let b17 = vec2<u32>((t11.x << 10u) | (t11.y >> 22u), (t11.y << 10u) | (t11.x >> 22u));
        let t16 = a16 ^ d1;
        let b8 = vec2<u32>((t16.y << 13u) | (t16.x >> 19u), (t16.x << 13u) | (t16.y >> 19u));
        let t21 = a21 ^ d1;
        let b24 = vec2<u32>((t21.x << 2u) | (t21.y >> 30u), (t21.y << 2u) | (t21.x >> 30u));
        let t2 = a2 ^ d2;
        let b20 = vec2<u32>((t2.y << 30u) | (t2.x >> 2u), (t2.x << 30u) | (t2.y >> 2u));
        let t7 = a7 ^ d2;
        let b11 = vec2<u32>((t7.x << 6u) | (t7.y >> 26u), (t7.y << 6u) | (t7.x >> 26u));
        let t12 = a12 ^ d2;
        let b2 = vec2<u32>((t12.y << 11u) | (t12.x >> 21u), (t12.x << 11u) | (t12.y >> 21u));
        let t17 = a17 ^ d2;
        let b18 = vec2<u32>((t17.x << 15u) | (t17.y >> 17u), (t17.y << 15u) | (t17.x >> 17u));
        let t22 = a22 ^ d2;
        let b9 = vec2<u32>((t22.y << 29u) | (t22.x >> 3u), (t22.x << 29u) | (t22.y >> 3u));
        let t3 = a3 ^ d3;
        let b5 = vec2<u32>((t3.x << 28u) | (t3.y >> 4u), (t3.y << 28u) | (t3.x >> 4u));
        let t8 = a8 ^ d3;
        let b21 = vec2<u32>((t8.y << 23u) | (t8.x >> 9u), (t8.x << 23u) | (t8.y >> 9u));
        let t13 = a13 ^ d3;
        let b12 = vec2<u32>((t13.x << 25u) | (t13.y >> 7u), (t13.y << 25u) | (t13.x >> 7u));
        let t18 = a18 ^ d3;
        let b3 = vec2<u32>((t18.x << 21u) | (t18.y >> 11u), (t18.y << 21u) | (t18.x >> 11u));
        let t23 = a23 ^ d3;
        let b19 = vec2<u32>((t23.y << 24u) | (t23.x >> 8u), (t23.x << 24u) | (t23.y >> 8u));
        let t4 = a4 ^ d4;
        let b15 = vec2<u32>((t4.x << 27u) | (t4.y >> 5u), (t4.y << 27u) | (t4.x >> 5u));
        let t9 = a9 ^ d4;
        let b6 = vec2<u32>((t9.x << 20u) | (t9.y >> 12u), (t9.y << 20u) | (t9.x >> 12u));
        let t14 = a14 ^ d4;
        let b22 = vec2<u32>((t14.y << 7u) | (t14.x >> 25u), (t14.x << 7u) | (t14.y >> 25u));
        let t19 = a19 ^ d4;
        let b13 = vec2<u32>((t19.x << 8u) | (t19.y >> 24u), (t19.y << 8u) | (t19.x >> 24u));
        let t24 = a24 ^ d4;
        let b4 = vec2<u32>((t24.x << 14u) | (t24.y >> 18u), (t24.y << 14u) | (t24.x >> 18u));
        a0 = b0 ^ (~b1 & b2);
        a1 = b1 ^ (~b2 & b3);
        a2 = b2 ^ (~b3 & b4);
        a3 = b3 ^ (~b4 & b0);
        a4 = b4 ^ (~b0 & b1);
        a5 = b5 ^ (~b6 & b7);
        a6 = b6 ^ (~b7 & b8);
        a7 = b7 ^ (~b8 & b9);
        a8 = b8 ^ (~b9 & b5);
        a9 = b9 ^ (~b5 & b6);
        a10 = b10 ^ (~b11 & b12);
        a11 = b11 ^ (~b12 & b13);
        a12 = b12 ^ (~b13 & b14);
        a13 = b13 ^ (~b14 & b10);
        a14 = b14 ^ (~b10 & b11);
        a15 = b15 ^ (~b16 & b17);
        a16 = b16 ^ (~b17 & b18);
        a17 = b17 ^ (~b18 & b19);
        a18 = b18 ^ (~b19 & b15);
        a19 = b19 ^ (~b15 & b16);
        a20 = b20 ^ (~b21 & b22);
        a21 = b21 ^ (~b22 & b23);
        a22 = b22 ^ (~b23 & b24);
        a23 = b23 ^ (~b24 & b20);
        a24 = b24 ^ (~b20 & b21);
        a0 = a0 ^ KECCAK_RC[round];
    }
    (*st)[0] = a0;
    (*st)[1] = a1;
    (*st)[2] = a2;
    (*st)[3] = a3;
    (*st)[4] = a4;
    (*st)[5] = a5;
    (*st)[6] = a6;
    (*st)[7] = a7;
    (*st)[8] = a8;
    (*st)[9] = a9;
    (*st)[10] = a10;
    (*st)[11] = a11;
    (*st)[12] = a12;
    (*st)[13] = a13;
    (*st)[14] = a14;
    (*st)[15] = a15;
    (*st)[16] = a16;
    (*st)[17] = a17;
    (*st)[18] = a18;
    (*st)[19] = a19;
    (*st)[20] = a20;
    (*st)[21] = a21;
    (*st)[22] = a22;
    (*st)[23] = a23;
    (*st)[24] = a24;
}
