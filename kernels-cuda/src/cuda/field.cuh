// Goldilocks field p = 2^64 - 2^32 + 1 and its cubic extension X^3 = 2.
// Every value kept in registers or memory is canonical (0 <= v < p), so
// results are bit-identical to the host reference.
typedef unsigned long long u64;
typedef unsigned int u32;

#define GL_P 0xFFFFFFFF00000001ull
#define GL_EPS 0xFFFFFFFFull

// Addition, subtraction and product are written as 32-bit carry chains:
// ptxas turns these into fewer instructions than the 64-bit C forms (on
// sm_90 f_mul 21 instead of 32, f_sub 4 instead of 7, f_add 7), and the
// NTT's butterflies are bound by instruction issue. The field_asm test in
// kernels-cuda runs these blocks on the host against 128-bit integer
// arithmetic.

// (a + b) mod p for canonical a, b, as a + (b + EPS): b + EPS < 2^64. With
// a carry out of 64 bits a + b >= p and the wrapped sum is a + b - p;
// without one a + b is the sum less EPS, which cannot borrow. m = carry - 1
// is 0 or EPS. On sm_90 seven instructions (a - (p - b) was eight).
__device__ __forceinline__ u64 f_add(u64 a, u64 b) {
    u64 out;
    asm("{\n\t"
        ".reg .u64 s, m64;\n\t"
        ".reg .u32 m;\n\t"
        "add.u64 s, %2, 0xffffffff;\n\t"
        "add.cc.u64 s, %1, s;\n\t"
        "addc.u32 m, 0xffffffff, 0;\n\t"
        "cvt.u64.u32 m64, m;\n\t"
        "sub.u64 %0, s, m64;\n\t"
        "}"
        : "=l"(out)
        : "l"(a), "l"(b));
    return out;
}

// (a - b) mod p for canonical a, b: on a borrow the wrapped difference
// exceeds EPS, and subtracting EPS (the borrow mask m) adds p.
__device__ __forceinline__ u64 f_sub(u64 a, u64 b) {
    u64 out;
    asm("{\n\t"
        ".reg .u32 a0, a1, b0, b1, m;\n\t"
        "mov.b64 {a0, a1}, %1;\n\t"
        "mov.b64 {b0, b1}, %2;\n\t"
        "sub.cc.u32 a0, a0, b0;\n\t"
        "subc.cc.u32 a1, a1, b1;\n\t"
        "subc.u32 m, 0, 0;\n\t"
        "sub.cc.u32 a0, a0, m;\n\t"
        "subc.u32 a1, a1, 0;\n\t"
        "mov.b64 %0, {a0, a1};\n\t"
        "}"
        : "=l"(out)
        : "l"(a), "l"(b));
    return out;
}

// x * 2^e mod p for a constant 0 < e < 96 (the NTT's twiddles by powers of
// two), canonical for any 64-bit x: shifts and one or two corrections, 9
// to 11 instructions on sm_90 against 22 for f_mul by the constant. e must
// fold to a constant after unrolling (it becomes the shifts' immediates).
// x << e is split at 2^64 and 2^96, with 2^64 = EPS and 2^96 = -1 (mod p).
__device__ __forceinline__ u64 f_shl(u64 x, u32 e) {
    u64 out;
    if (e < 32) {
        // x 2^e = h 2^64 + l (l = x << e mod 2^64, h < 2^e) = l + h EPS.
        // s = l + h 2^32 + ~h = l + h EPS + EPS < 2^65: on a carry out of 64
        // bits the wrapped s is the residue, otherwise s - EPS is (no
        // borrow); m = carry - 1 is 0 or EPS.
        asm("{\n\t"
            ".reg .u32 x0, x1, l0, l1, h, k, m;\n\t"
            "mov.b64 {x0, x1}, %1;\n\t"
            "shl.b32 l0, x0, %2;\n\t"
            "shf.l.clamp.b32 l1, x0, x1, %2;\n\t"
            "sub.u32 k, 32, %2;\n\t"
            "shr.b32 h, x1, k;\n\t"
            "not.b32 k, h;\n\t"
            "add.cc.u32 l0, l0, k;\n\t"
            "addc.cc.u32 l1, l1, h;\n\t"
            "addc.u32 m, 0xffffffff, 0;\n\t"
            "sub.cc.u32 l0, l0, m;\n\t"
            "subc.u32 l1, l1, 0;\n\t"
            "mov.b64 %0, {l0, l1};\n\t"
            "}"
            : "=l"(out)
            : "l"(x), "r"(e));
    } else if (e < 64) {
        // s = e - 32: x 2^e = t2 2^96 + t1 2^64 + t0 2^32 = t0 2^32 + t1 EPS
        // - t2 (t0 = x0 << s, t1 = bits 32..63 of x << s, t2 = x1 >> (32 -
        // s) < 2^31). S = (t0 + t1) 2^32 + ~t1 = t0 2^32 + t1 EPS + EPS <
        // 2^65, so P = (t0 2^32 + t1 EPS) mod p is the wrapped S less m =
        // carry - 1 (0 or EPS, no borrow). Then P - t2 as in f_sub, with m +
        // t2 (below 2^33) taken off in one step: its borrow is that of P - t2.
        asm("{\n\t"
            ".reg .u32 x0, x1, t0, t1, t2, u0, u1, k, m, q1;\n\t"
            "mov.b64 {x0, x1}, %1;\n\t"
            "shl.b32 t0, x0, %2;\n\t"
            "shf.l.clamp.b32 t1, x0, x1, %2;\n\t"
            "sub.u32 k, 32, %2;\n\t"
            "shr.b32 t2, x1, k;\n\t"
            "not.b32 u0, t1;\n\t"
            "add.cc.u32 u1, t0, t1;\n\t"
            "addc.u32 m, 0xffffffff, 0;\n\t"
            "add.cc.u32 m, m, t2;\n\t"
            "addc.u32 q1, 0, 0;\n\t"
            "sub.cc.u32 u0, u0, m;\n\t"
            "subc.cc.u32 u1, u1, q1;\n\t"
            "subc.u32 m, 0, 0;\n\t"
            "sub.cc.u32 u0, u0, m;\n\t"
            "subc.u32 u1, u1, 0;\n\t"
            "mov.b64 %0, {u0, u1};\n\t"
            "}"
            : "=l"(out)
            : "l"(x), "r"(e - 32));
    } else {
        // s = e - 64, k = 32 - s: z = x0 << s (32 bits), h = x >> k < 2^63:
        // x 2^e = h 2^96 + z 2^64 = z EPS - h = z 2^32 - (z + h); z EPS < p,
        // so on a borrow adding p (taking off EPS) gives the residue.
        asm("{\n\t"
            ".reg .u32 x0, x1, z, h0, h1, t0, t1, m, k;\n\t"
            "mov.b64 {x0, x1}, %1;\n\t"
            "shl.b32 z, x0, %2;\n\t"
            "sub.u32 k, 32, %2;\n\t"
            "shf.r.clamp.b32 h0, x0, x1, k;\n\t"
            "shr.b32 h1, x1, k;\n\t"
            "add.cc.u32 h0, h0, z;\n\t"
            "addc.u32 h1, h1, 0;\n\t"
            "sub.cc.u32 t0, 0, h0;\n\t"
            "subc.cc.u32 t1, z, h1;\n\t"
            "subc.u32 m, 0, 0;\n\t"
            "sub.cc.u32 t0, t0, m;\n\t"
            "subc.u32 t1, t1, 0;\n\t"
            "mov.b64 %0, {t0, t1};\n\t"
            "}"
            : "=l"(out)
            : "l"(x), "r"(e - 64));
    }
    return out;
}

// a + b for canonical a, b, as a 64-bit value congruent to it but not
// always canonical: a + b, or on a carry out of 64 bits the wrapped sum
// plus EPS (a + b - 2^64 <= 2^64 - 2^33, so that cannot carry). Only for
// values that go straight into f_mul, which takes any 64-bit operand.
__device__ __forceinline__ u64 f_add_lazy(u64 a, u64 b) {
    u64 out;
    asm("{\n\t"
        ".reg .u64 s, m64;\n\t"
        ".reg .u32 c;\n\t"
        "add.cc.u64 s, %1, %2;\n\t"
        "addc.u32 c, 0, 0;\n\t"
        "neg.s32 c, c;\n\t"
        "cvt.u64.u32 m64, c;\n\t"
        "add.u64 %0, s, m64;\n\t"
        "}"
        : "=l"(out)
        : "l"(a), "l"(b));
    return out;
}

__device__ __forceinline__ u64 f_neg(u64 a) { return a ? GL_P - a : 0ull; }

// hi * 2^64 + lo, reduced: 2^64 = 2^32 - 1 and 2^96 = -1 (mod p).
__device__ __forceinline__ u64 f_reduce128(u64 lo, u64 hi) {
    u64 hh = hi >> 32;
    u64 hl = hi & GL_EPS;
    u64 t0 = lo - hh;
    if (lo < hh) t0 -= GL_EPS;
    u64 t1 = (hl << 32) - hl;
    u64 r = t0 + t1;
    if (r < t1) r += GL_EPS;
    if (r >= GL_P) r -= GL_P;
    return r;
}

// (a * b) mod p, canonical for any 64-bit a, b. The product r3:r2:r1:r0 is
// reduced as r1:r0 - r3 + r2 * EPS: t = r1:r0 - r3 (on a borrow t -= EPS,
// which cannot borrow again), then t + r2 * EPS; if that carries, the
// wrapped sum plus EPS is below p, and otherwise the sum is at least p
// exactly when adding EPS carries, so one select finishes both cases.
__device__ __forceinline__ u64 f_mul(u64 a, u64 b) {
    u64 out;
    asm("{\n\t"
        ".reg .u32 a0, a1, b0, b1, r0, r1, r2, r3, m, c, d0, d1;\n\t"
        ".reg .pred f;\n\t"
        "mov.b64 {a0, a1}, %1;\n\t"
        "mov.b64 {b0, b1}, %2;\n\t"
        "mul.lo.u32 r0, a0, b0;\n\t"
        "mul.hi.u32 r1, a0, b0;\n\t"
        "mul.lo.u32 r2, a1, b1;\n\t"
        "mul.hi.u32 r3, a1, b1;\n\t"
        "mad.lo.cc.u32 r1, a0, b1, r1;\n\t"
        "madc.hi.cc.u32 r2, a0, b1, r2;\n\t"
        "addc.u32 r3, r3, 0;\n\t"
        "mad.lo.cc.u32 r1, a1, b0, r1;\n\t"
        "madc.hi.cc.u32 r2, a1, b0, r2;\n\t"
        "addc.u32 r3, r3, 0;\n\t"
        "sub.cc.u32 r0, r0, r3;\n\t"
        "subc.cc.u32 r1, r1, 0;\n\t"
        "subc.u32 m, 0, 0;\n\t"
        "sub.cc.u32 r0, r0, m;\n\t"
        "subc.u32 r1, r1, 0;\n\t"
        "mad.lo.cc.u32 r0, r2, 0xffffffff, r0;\n\t"
        "madc.hi.cc.u32 r1, r2, 0xffffffff, r1;\n\t"
        "addc.u32 c, 0, 0;\n\t"
        "add.cc.u32 d0, r0, 0xffffffff;\n\t"
        "addc.cc.u32 d1, r1, 0;\n\t"
        "addc.u32 c, c, 0;\n\t"
        "setp.ne.u32 f, c, 0;\n\t"
        "selp.b32 d0, d0, r0, f;\n\t"
        "selp.b32 d1, d1, r1, f;\n\t"
        "mov.b64 %0, {d0, d1};\n\t"
        "}"
        : "=l"(out)
        : "l"(a), "l"(b));
    return out;
}

// A sum of products reduced once (delayed reduction), exact for fewer than
// 2^31 terms. The 32-bit halves' products go to two accumulators: x0 y0 +
// x1 y1 2^64 to top:hi:lo, the cross terms x0 y1 + x1 y0 to mtop:mid (worth
// 2^32 more). Each sum's register pairs stay aligned, so a multiply-add is
// four wide multiply-adds with carries and no moves (about 5.5
// instructions on sm_90, against about 18 for one 192-bit sum).
struct f_acc {
    u64 lo, hi, mid;
    u32 top, mtop;
};
__device__ __forceinline__ f_acc f_acc_zero() { return f_acc{0ull, 0ull, 0ull, 0u, 0u}; }
__device__ __forceinline__ void f_acc_madd(f_acc& a, u64 x, u64 y) {
    asm("{\n\t"
        ".reg .u32 x0, x1, y0, y1, c0, c1, c2, c3, m0, m1;\n\t"
        "mov.b64 {x0, x1}, %5;\n\t"
        "mov.b64 {y0, y1}, %6;\n\t"
        "mov.b64 {c0, c1}, %0;\n\t"
        "mov.b64 {c2, c3}, %1;\n\t"
        "mov.b64 {m0, m1}, %2;\n\t"
        "mad.lo.cc.u32 c0, x0, y0, c0;\n\t"
        "madc.hi.cc.u32 c1, x0, y0, c1;\n\t"
        "madc.lo.cc.u32 c2, x1, y1, c2;\n\t"
        "madc.hi.cc.u32 c3, x1, y1, c3;\n\t"
        "addc.u32 %3, %3, 0;\n\t"
        "mad.lo.cc.u32 m0, x0, y1, m0;\n\t"
        "madc.hi.cc.u32 m1, x0, y1, m1;\n\t"
        "addc.u32 %4, %4, 0;\n\t"
        "mad.lo.cc.u32 m0, x1, y0, m0;\n\t"
        "madc.hi.cc.u32 m1, x1, y0, m1;\n\t"
        "addc.u32 %4, %4, 0;\n\t"
        "mov.b64 %0, {c0, c1};\n\t"
        "mov.b64 %1, {c2, c3};\n\t"
        "mov.b64 %2, {m0, m1};\n\t"
        "}"
        : "+l"(a.lo), "+l"(a.hi), "+l"(a.mid), "+r"(a.top), "+r"(a.mtop)
        : "l"(x), "l"(y));
}
// Folds mtop:mid in at 2^32, then reduces top:hi:lo with 2^128 = -2^32
// (mod p); top stays below 2^32, so top << 32 is below p.
__device__ __forceinline__ u64 f_acc_reduce(const f_acc& a) {
    u64 lo, hi;
    u32 top;
    asm("{\n\t"
        ".reg .u32 c0, c1, c2, c3, m0, m1;\n\t"
        "mov.b64 {c0, c1}, %3;\n\t"
        "mov.b64 {c2, c3}, %4;\n\t"
        "mov.b64 {m0, m1}, %5;\n\t"
        "add.cc.u32 c1, c1, m0;\n\t"
        "addc.cc.u32 c2, c2, m1;\n\t"
        "addc.cc.u32 c3, c3, %7;\n\t"
        "addc.u32 %2, %6, 0;\n\t"
        "mov.b64 %0, {c0, c1};\n\t"
        "mov.b64 %1, {c2, c3};\n\t"
        "}"
        : "=l"(lo), "=l"(hi), "=r"(top)
        : "l"(a.lo), "l"(a.hi), "l"(a.mid), "r"(a.top), "r"(a.mtop));
    return f_sub(f_reduce128(lo, hi), (u64)top << 32);
}

__device__ __forceinline__ u64 f_sqr(u64 a) { return f_mul(a, a); }

// Kept rolled: an asm f_mul is one instruction to NVVM's unroller, so a
// loop of products looks cheap and is unrolled in full (f_inv's 64 steps
// became some 2,700 SASS instructions at each call site).
__device__ __forceinline__ u64 f_pow(u64 a, u64 e) {
    u64 acc = 1;
#pragma unroll 1
    while (e) {
        if (e & 1) acc = f_mul(acc, a);
        a = f_sqr(a);
        e >>= 1;
    }
    return acc;
}

// x^(2^n).
__device__ __forceinline__ u64 f_sqn(u64 x, u32 n) {
#pragma unroll 1
    for (u32 k = 0; k < n; k++) x = f_sqr(x);
    return x;
}

// a^(p-2); zero maps to zero. An addition chain through x_k = a^(2^k - 1):
// 64 squarings and 9 products (the binary method takes 126), as
// p - 2 = (2^31 - 1) 2^33 + 2^32 - 1. Not inlined: one copy a module
// instead of one a call site (e_inv in every LogUp interaction), for a
// call's cost next to some 1,800 instructions.
__device__ __noinline__ u64 f_inv(u64 a) {
    const u64 x2 = f_mul(f_sqr(a), a);
    const u64 x3 = f_mul(f_sqr(x2), a);
    const u64 x6 = f_mul(f_sqn(x3, 3), x3);
    const u64 x12 = f_mul(f_sqn(x6, 6), x6);
    const u64 x24 = f_mul(f_sqn(x12, 12), x12);
    const u64 x30 = f_mul(f_sqn(x24, 6), x6);
    const u64 x31 = f_mul(f_sqr(x30), a);
    const u64 x32 = f_mul(f_sqr(x31), a);
    return f_mul(f_sqn(x31, 33), x32);
}

// Reverses the low `bits` bits of i.
__device__ __forceinline__ u64 brev_bits(u64 i, u32 bits) { return bits ? (__brevll(i) >> (64 - bits)) : 0ull; }

// w_N^i (N = 2^log_n) from a table of w_(2^tw_log)^k, k < 2^(tw_log-1), tw_log >= log_n.
__device__ __forceinline__ u64 root_pow(const u64* __restrict__ tw, u32 tw_log, u32 log_n, u64 i) {
    if (log_n == 0) return 1ull;
    u64 half = 1ull << (log_n - 1);
    i &= (half << 1) - 1;
    if (i < half) return tw[i << (tw_log - log_n)];
    return f_neg(tw[(i - half) << (tw_log - log_n)]);
}

struct ext3 {
    u64 a, b, c;
};

__device__ __forceinline__ ext3 e_make(u64 a, u64 b, u64 c) {
    ext3 r;
    r.a = a;
    r.b = b;
    r.c = c;
    return r;
}
__device__ __forceinline__ ext3 e_zero() { return e_make(0, 0, 0); }
__device__ __forceinline__ ext3 e_one() { return e_make(1, 0, 0); }
__device__ __forceinline__ ext3 e_add(ext3 x, ext3 y) { return e_make(f_add(x.a, y.a), f_add(x.b, y.b), f_add(x.c, y.c)); }
__device__ __forceinline__ ext3 e_sub(ext3 x, ext3 y) { return e_make(f_sub(x.a, y.a), f_sub(x.b, y.b), f_sub(x.c, y.c)); }
__device__ __forceinline__ ext3 e_neg(ext3 x) { return e_make(f_neg(x.a), f_neg(x.b), f_neg(x.c)); }
__device__ __forceinline__ ext3 e_mul_base(ext3 x, u64 s) { return e_make(f_mul(x.a, s), f_mul(x.b, s), f_mul(x.c, s)); }
__device__ __forceinline__ u64 f_dbl(u64 a) { return f_add(a, a); }
__device__ __forceinline__ ext3 e_mul(ext3 x, ext3 y) {
    u64 c0 = f_add(f_mul(x.a, y.a), f_dbl(f_add(f_mul(x.b, y.c), f_mul(x.c, y.b))));
    u64 c1 = f_add(f_add(f_mul(x.a, y.b), f_mul(x.b, y.a)), f_dbl(f_mul(x.c, y.c)));
    u64 c2 = f_add(f_add(f_mul(x.a, y.c), f_mul(x.b, y.b)), f_mul(x.c, y.a));
    return e_make(c0, c1, c2);
}
// Inverse through the norm; zero maps to zero.
__device__ __forceinline__ ext3 e_inv(ext3 x) {
    u64 t0 = f_sub(f_sqr(x.a), f_dbl(f_mul(x.b, x.c)));
    u64 t1 = f_sub(f_dbl(f_sqr(x.c)), f_mul(x.a, x.b));
    u64 t2 = f_sub(f_sqr(x.b), f_mul(x.a, x.c));
    u64 norm = f_add(f_mul(x.a, t0), f_dbl(f_add(f_mul(x.c, t1), f_mul(x.b, t2))));
    u64 inv = f_inv(norm);
    return e_make(f_mul(t0, inv), f_mul(t1, inv), f_mul(t2, inv));
}
__device__ __forceinline__ ext3 e_load(const u64* __restrict__ base, u64 stride, u64 i) {
    return e_make(base[i], base[stride + i], base[2 * stride + i]);
}
__device__ __forceinline__ void e_store(u64* base, u64 stride, u64 i, ext3 v) {
    base[i] = v.a;
    base[stride + i] = v.b;
    base[2 * stride + i] = v.c;
}

// A sum of extension products alpha * v, each coordinate an f_acc until
// e_acc_reduce (composition, column combinations, barycentric sums): three
// multiply-adds cost a fifth of a reduced product and sum.
struct e_acc {
    f_acc a, b, c;
};
__device__ __forceinline__ e_acc e_acc_zero() { return e_acc{f_acc_zero(), f_acc_zero(), f_acc_zero()}; }
__device__ __forceinline__ void k_acc(e_acc& s, ext3 alpha, u64 v) {
    f_acc_madd(s.a, alpha.a, v);
    f_acc_madd(s.b, alpha.b, v);
    f_acc_madd(s.c, alpha.c, v);
}
// As e_mul with X^3 = 2, the doubled terms through doubled coefficients.
__device__ __forceinline__ void k_acc(e_acc& s, ext3 alpha, ext3 v) {
    const u64 b2 = f_dbl(alpha.b), c2 = f_dbl(alpha.c);
    f_acc_madd(s.a, alpha.a, v.a);
    f_acc_madd(s.a, b2, v.c);
    f_acc_madd(s.a, c2, v.b);
    f_acc_madd(s.b, alpha.a, v.b);
    f_acc_madd(s.b, alpha.b, v.a);
    f_acc_madd(s.b, c2, v.c);
    f_acc_madd(s.c, alpha.a, v.c);
    f_acc_madd(s.c, alpha.b, v.b);
    f_acc_madd(s.c, alpha.c, v.a);
}
__device__ __forceinline__ ext3 e_acc_reduce(const e_acc& s) {
    return e_make(f_acc_reduce(s.a), f_acc_reduce(s.b), f_acc_reduce(s.c));
}

// Overloads used by generated constraint code (base and extension mixed).
__device__ __forceinline__ u64 k_add(u64 x, u64 y) { return f_add(x, y); }
__device__ __forceinline__ ext3 k_add(ext3 x, ext3 y) { return e_add(x, y); }
__device__ __forceinline__ ext3 k_add(ext3 x, u64 y) { return e_make(f_add(x.a, y), x.b, x.c); }
__device__ __forceinline__ ext3 k_add(u64 x, ext3 y) { return e_make(f_add(x, y.a), y.b, y.c); }
__device__ __forceinline__ u64 k_sub(u64 x, u64 y) { return f_sub(x, y); }
__device__ __forceinline__ ext3 k_sub(ext3 x, ext3 y) { return e_sub(x, y); }
__device__ __forceinline__ ext3 k_sub(ext3 x, u64 y) { return e_make(f_sub(x.a, y), x.b, x.c); }
__device__ __forceinline__ ext3 k_sub(u64 x, ext3 y) { return e_make(f_sub(x, y.a), f_neg(y.b), f_neg(y.c)); }
__device__ __forceinline__ u64 k_mul(u64 x, u64 y) { return f_mul(x, y); }
__device__ __forceinline__ ext3 k_mul(ext3 x, ext3 y) { return e_mul(x, y); }
__device__ __forceinline__ ext3 k_mul(ext3 x, u64 y) { return e_mul_base(x, y); }
__device__ __forceinline__ ext3 k_mul(u64 x, ext3 y) { return e_mul_base(y, x); }
__device__ __forceinline__ u64 k_neg(u64 x) { return f_neg(x); }
__device__ __forceinline__ ext3 k_neg(ext3 x) { return e_neg(x); }
__device__ __forceinline__ ext3 k_ext(u64 x) { return e_make(x, 0, 0); }
__device__ __forceinline__ ext3 k_ext(ext3 x) { return x; }
