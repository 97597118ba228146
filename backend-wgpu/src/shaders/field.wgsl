// Goldilocks p = 2^64 - 2^32 + 1 and its cubic extension X^3 = 2, over
// one of two cores that give f_add, f_sub and f_mul: `field32.wgsl` (two
// u32 limbs, any adapter) or `field64.wgsl` (64-bit shader integers). A
// value is a vec2<u32> (x: low word, y: high word) either way. Every value
// kept in memory is canonical, so results are bit-identical to the host
// reference.

fn b2u(b: bool) -> u32 {
    return select(0u, 1u, b);
}

fn f_neg(a: vec2<u32>) -> vec2<u32> {
    return f_sub(vec2<u32>(0u, 0u), a);
}

fn f_dbl(a: vec2<u32>) -> vec2<u32> {
    return f_add(a, a);
}

fn f_sqr(a: vec2<u32>) -> vec2<u32> {
    return f_mul(a, a);
}

fn f_is_zero(a: vec2<u32>) -> bool {
    return a.x == 0u && a.y == 0u;
}

// a^(p-2) with p - 2 = 0xFFFFFFFE_FFFFFFFF: h = a^(2^32 - 2) from 31
// squarings, then h^(2^32) * h * a. Zero maps to zero.
fn f_inv(a: vec2<u32>) -> vec2<u32> {
    var u = a;
    for (var i = 0u; i < 30u; i++) {
        u = f_mul(f_sqr(u), a);
    }
    let h = f_sqr(u);
    let t = f_mul(h, a);
    var acc = h;
    for (var i = 0u; i < 32u; i++) {
        acc = f_sqr(acc);
    }
    return f_mul(acc, t);
}

fn f_one() -> vec2<u32> {
    return vec2<u32>(1u, 0u);
}

fn brev(i: u32, bits: u32) -> u32 {
    if (bits == 0u) {
        return 0u;
    }
    return reverseBits(i) >> (32u - bits);
}

struct E3 {
    a: vec2<u32>,
    b: vec2<u32>,
    c: vec2<u32>,
}

fn e_make(a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> E3 {
    return E3(a, b, c);
}

fn e_zero() -> E3 {
    return E3(vec2<u32>(0u, 0u), vec2<u32>(0u, 0u), vec2<u32>(0u, 0u));
}

fn e_base(x: vec2<u32>) -> E3 {
    return E3(x, vec2<u32>(0u, 0u), vec2<u32>(0u, 0u));
}

fn e_add(x: E3, y: E3) -> E3 {
    return E3(f_add(x.a, y.a), f_add(x.b, y.b), f_add(x.c, y.c));
}

fn e_sub(x: E3, y: E3) -> E3 {
    return E3(f_sub(x.a, y.a), f_sub(x.b, y.b), f_sub(x.c, y.c));
}

fn e_neg(x: E3) -> E3 {
    return E3(f_neg(x.a), f_neg(x.b), f_neg(x.c));
}

fn e_mul_base(x: E3, s: vec2<u32>) -> E3 {
    return E3(f_mul(x.a, s), f_mul(x.b, s), f_mul(x.c, s));
}

fn e_add_base(x: E3, s: vec2<u32>) -> E3 {
    return E3(f_add(x.a, s), x.b, x.c);
}

fn e_sub_base(x: E3, s: vec2<u32>) -> E3 {
    return E3(f_sub(x.a, s), x.b, x.c);
}

fn base_sub_e(s: vec2<u32>, y: E3) -> E3 {
    return E3(f_sub(s, y.a), f_neg(y.b), f_neg(y.c));
}

fn e_mul(x: E3, y: E3) -> E3 {
    let c0 = f_add(f_mul(x.a, y.a), f_dbl(f_add(f_mul(x.b, y.c), f_mul(x.c, y.b))));
    let c1 = f_add(f_add(f_mul(x.a, y.b), f_mul(x.b, y.a)), f_dbl(f_mul(x.c, y.c)));
    let c2 = f_add(f_add(f_mul(x.a, y.c), f_mul(x.b, y.b)), f_mul(x.c, y.a));
    return E3(c0, c1, c2);
}

// The adjugate t of x: x t is the norm of x, a base element.
fn e_adj(x: E3) -> E3 {
    let t0 = f_sub(f_sqr(x.a), f_dbl(f_mul(x.b, x.c)));
    let t1 = f_sub(f_dbl(f_sqr(x.c)), f_mul(x.a, x.b));
    let t2 = f_sub(f_sqr(x.b), f_mul(x.a, x.c));
    return E3(t0, t1, t2);
}

// The norm x t of x, given its adjugate t.
fn e_norm(x: E3, t: E3) -> vec2<u32> {
    return f_add(f_mul(x.a, t.a), f_dbl(f_add(f_mul(x.c, t.b), f_mul(x.b, t.c))));
}

// Inverse through the norm; zero maps to zero.
fn e_inv(x: E3) -> E3 {
    let t = e_adj(x);
    return e_mul_base(t, f_inv(e_norm(x, t)));
}
