// The field's core on 64-bit shader integers (`SHADER_INT64`). Values
// cross function boundaries as vec2<u32> like the 32-bit core's, so every
// kernel is the same text over either core. On the H200 the driver
// compiles kernels over this core in about a third of the time, and the
// extension-heavy ones (composition, DEEP) run faster.

const P64: u64 = 0xffffffff00000001lu;
const M32: u64 = 0xfffffffflu;

fn to64(a: vec2<u32>) -> u64 {
    return u64(a.x) | (u64(a.y) << 32u);
}

fn from64(v: u64) -> vec2<u32> {
    return vec2<u32>(u32(v & M32), u32(v >> 32u));
}

// x + y mod p, the result canonical.
fn g_add(x: u64, y: u64) -> u64 {
    let s = x + y;
    // A carry past 2^64 is 2^32 - 1 mod p, and the sum plus it stays < p.
    let r = s + select(0lu, M32, s < x);
    return select(r, r - P64, r >= P64);
}

fn f_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return from64(g_add(to64(a), to64(b)));
}

fn f_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let x = to64(a);
    let y = to64(b);
    // A borrow of 2^64: subtract 2^32 - 1 to add p back.
    return from64(x - y - select(0lu, M32, x < y));
}

fn f_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let x = to64(a);
    let y = to64(b);
    let xl = x & M32;
    let xh = x >> 32u;
    let yl = y & M32;
    let yh = y >> 32u;
    // The 128-bit product as (lo, hi).
    let ll = xl * yl;
    let lh = xl * yh;
    let hl = xh * yl;
    let mid = lh + hl;
    let lo = ll + (mid << 32u);
    let hi = xh * yh + (mid >> 32u) + select(0lu, 1lu << 32u, mid < lh) + select(0lu, 1lu, lo < ll);
    // lo + h2 * 2^64 + h3 * 2^96 = lo + h2 * (2^32 - 1) - h3 (mod p).
    let h3 = hi >> 32u;
    let h2 = hi & M32;
    let t0 = lo - h3 - select(0lu, M32, lo < h3);
    return from64(g_add(t0, (h2 << 32u) - h2));
}
