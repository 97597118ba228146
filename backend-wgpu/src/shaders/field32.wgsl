// The field's core on two u32 limbs, for adapters without 64-bit shader
// integers: WGSL has no wider integer and no multiply-high, so products go
// through 16-bit halves.

fn f_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    let hi1 = a.y + b.y;
    let hi = hi1 + b2u(lo < a.x);
    if (hi1 < a.y || hi < hi1) {
        // Wrapped past 2^64: add 2^64 - p = 2^32 - 1 (the result is < p).
        return vec2<u32>(lo - 1u, hi + b2u(lo != 0u));
    }
    if (hi == 0xffffffffu && lo != 0u) {
        return vec2<u32>(lo - 1u, 0u);
    }
    return vec2<u32>(lo, hi);
}

fn f_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let bw = a.x < b.x;
    let lo = a.x - b.x;
    let hi = a.y - b.y - b2u(bw);
    if (a.y < b.y || (a.y == b.y && bw)) {
        // Borrowed 2^64: subtract 2^32 - 1 to add p back.
        return vec2<u32>(lo + 1u, hi - b2u(lo != 0xffffffffu));
    }
    return vec2<u32>(lo, hi);
}

// 32x32 -> 64-bit product through 16-bit halves.
fn mul32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p10 = a1 * b0;
    let mid = a0 * b1 + (p00 >> 16u) + (p10 & 0xffffu);
    return vec2<u32>((mid << 16u) | (p00 & 0xffffu), a1 * b1 + (mid >> 16u) + (p10 >> 16u));
}

// Reduces the 128-bit value (r0, r1, r2, r3) (low word first) mod p:
// 2^64 = 2^32 - 1 and 2^96 = -1.
fn f_reduce(r0: u32, r1: u32, r2: u32, r3: u32) -> vec2<u32> {
    // t0 = (r0, r1) - r3, adding p back on a borrow.
    let bx = r0 < r3;
    var t0 = vec2<u32>(r0 - r3, r1 - b2u(bx));
    if (r1 == 0u && bx) {
        t0 = vec2<u32>(t0.x + 1u, t0.y - b2u(t0.x != 0xffffffffu));
    }
    // t1 = r2 * (2^32 - 1).
    var t1 = vec2<u32>(0u, 0u);
    if (r2 != 0u) {
        t1 = vec2<u32>(0u - r2, r2 - 1u);
    }
    return f_add(t0, t1);
}

fn f_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let ll = mul32(a.x, b.x);
    let lh = mul32(a.x, b.y);
    let hl = mul32(a.y, b.x);
    let hh = mul32(a.y, b.y);
    let s1 = ll.y + lh.x;
    let r1 = s1 + hl.x;
    let c1 = b2u(s1 < ll.y) + b2u(r1 < s1);
    let s2 = lh.y + hl.y;
    let s3 = s2 + hh.x;
    let r2 = s3 + c1;
    let c2 = b2u(s2 < lh.y) + b2u(s3 < s2) + b2u(r2 < s3);
    return f_reduce(ll.x, r1, r2, hh.y + c2);
}
