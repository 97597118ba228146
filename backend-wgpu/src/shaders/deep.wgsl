// DEEP quotients and out-of-domain evaluation over flattened extension
// columns (3 base columns each). One module, five entry modes:
//   0 lincomb:  sum_c coeffs[c] * m[c][i] over the columns of one buffer
//               for up to two coefficient sets at once (two points
//               opening one matrix read it once): from coeff_base into
//               d, from coeff_base2 into acc, each skipped (0), stored
//               (1) or added (2) as to_d and to_acc say;
//   1 accum:    d[i] (= or +=) (acc[i] - value) / (x_i - z);
//   2 weights:  acc[i] = x_i / (z - x_i) (barycentric weights);
//   3 partial:  partial[col][slice] = sum over the slice of m[col][i << log_stride] * acc[i];
//   5 accum in place: mode 1 for the first point, from d into d.
// Modes 1, 2 and 5 take ROWS consecutive rows an invocation and invert
// their denominators together (one inversion, three products a row).
struct Pc {
    mode: u32,
    n: u32,
    log_n: u32,
    tw_log: u32,
    accumulate: u32,
    cols: u32,
    coeff_base: u32,
    slices: u32,
    z: E3w,
    v: E3w,
    shift: vec2<u32>,
    m_base: u32,
    to_d: u32,
    to_acc: u32,
    coeff_base2: u32,
    log_stride: u32,
    pad: u32,
}

struct E3w {
    a: vec2<u32>,
    b: vec2<u32>,
    c: vec2<u32>,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> m: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> coeffs: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> tw: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> acc: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> d: array<vec2<u32>>;

// COMMON

var<workgroup> red: array<E3, 256>;

fn ld3(i: u32) -> E3 {
    return E3(acc[i], acc[pc.n + i], acc[2u * pc.n + i]);
}

fn ld3d(i: u32) -> E3 {
    return E3(d[i], d[pc.n + i], d[2u * pc.n + i]);
}

fn coeff(c: u32) -> E3 {
    return E3(coeffs[3u * c], coeffs[3u * c + 1u], coeffs[3u * c + 2u]);
}

fn lincomb(i: u32) {
    var s = e_zero();
    var t = e_zero();
    if (pc.to_d == 2u) {
        s = ld3d(i);
    }
    if (pc.to_acc == 2u) {
        t = ld3(i);
    }
    for (var c = 0u; c < pc.cols; c++) {
        let v = m[pc.m_base + c * pc.n + i];
        if (pc.to_d != 0u) {
            s = e_add(s, e_mul_base(coeff(pc.coeff_base + c), v));
        }
        if (pc.to_acc != 0u) {
            t = e_add(t, e_mul_base(coeff(pc.coeff_base2 + c), v));
        }
    }
    if (pc.to_d != 0u) {
        st3(1u, i, s);
    }
    if (pc.to_acc != 0u) {
        st3(0u, i, t);
    }
}

fn st3(buf: u32, i: u32, v: E3) {
    if (buf == 0u) {
        acc[i] = v.a;
        acc[pc.n + i] = v.b;
        acc[2u * pc.n + i] = v.c;
    } else {
        d[i] = v.a;
        d[pc.n + i] = v.b;
        d[2u * pc.n + i] = v.c;
    }
}

fn x_at(i: u32) -> vec2<u32> {
    return f_mul(pc.shift, root_pow(pc.log_n, i));
}

const ROWS: u32 = 4u;

// The denominator of row i: x_i - z (modes 1 and 5) or z - x_i (mode 2).
fn den_at(i: u32) -> E3 {
    let x = x_at(i);
    if (pc.mode == 2u) {
        return E3(f_sub(pc.z.a, x), pc.z.b, pc.z.c);
    }
    return E3(f_sub(x, pc.z.a), f_neg(pc.z.b), f_neg(pc.z.c));
}

// Rows i0 .. i0 + ROWS of modes 1, 2 and 5, their denominators (never
// zero: z is off the domain) inverted as one product.
fn rows_over_den(i0: u32) {
    var den: array<E3, ROWS>;
    var before: array<E3, ROWS>;
    var prod = e_base(f_one());
    let end = min(i0 + ROWS, pc.n);
    for (var i = i0; i < end; i++) {
        den[i - i0] = den_at(i);
        before[i - i0] = prod;
        prod = e_mul(prod, den[i - i0]);
    }
    var inv = e_inv(prod);
    for (var i = end; i > i0; i--) {
        let r = i - 1u - i0;
        let inv_den = e_mul(inv, before[r]);
        inv = e_mul(inv, den[r]);
        let row = i - 1u;
        if (pc.mode == 2u) {
            st3(0u, row, e_mul_base(inv_den, x_at(row)));
            continue;
        }
        var combined = ld3(row);
        if (pc.mode == 5u) {
            combined = ld3d(row);
        }
        var q = e_mul(e_sub(combined, E3(pc.v.a, pc.v.b, pc.v.c)), inv_den);
        if (pc.accumulate == 1u) {
            q = e_add(q, ld3d(row));
        }
        st3(1u, row, q);
    }
}

fn partial(wid: vec3<u32>, tid: u32) {
    let col = wid.y;
    let per = (pc.n + pc.slices - 1u) / pc.slices;
    let lo = wid.x * per;
    let hi = min(lo + per, pc.n);
    var s = e_zero();
    for (var i = lo + tid; i < hi; i += 256u) {
        s = e_add(s, e_mul_base(ld3(i), m[pc.m_base + ((col * pc.n + i) << pc.log_stride)]));
    }
    red[tid] = s;
    workgroupBarrier();
    for (var k = 128u; k > 0u; k >>= 1u) {
        if (tid < k) {
            red[tid] = e_add(red[tid], red[tid + k]);
        }
        workgroupBarrier();
    }
    if (tid == 0u) {
        let o = 3u * (col * pc.slices + wid.x);
        d[o] = red[0].a;
        d[o + 1u] = red[0].b;
        d[o + 2u] = red[0].c;
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    if (pc.mode == 3u) {
        partial(wid, tid);
        return;
    }
    let i = (wid.y * 65535u + wid.x) * 256u + tid;
    if (pc.mode == 1u || pc.mode == 2u || pc.mode == 5u) {
        if (i * ROWS < pc.n) {
            rows_over_den(i * ROWS);
        }
        return;
    }
    if (i < pc.n) {
        lincomb(i);
    }
}
