// FRI folding (`tw` holds inverse roots): folded(i) = (1/a) sum_r (beta / x_i)^r u_r with
// u_r = sum_j v_j w_a^(-j r), v_j = layer[i + j m], x_i = shift w_N^i;
// plus s * g(i) when rolling in (`roll` = 1).
struct Pc {
    log_n: u32,
    log_arity: u32,
    tw_log: u32,
    roll: u32,
    beta: E3w,
    s: E3w,
    shift_inv: vec2<u32>,
    arity_inv: vec2<u32>,
}

struct E3w {
    a: vec2<u32>,
    b: vec2<u32>,
    c: vec2<u32>,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> layer: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> roll: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> tw: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec2<u32>>;

// COMMON

fn ld3(i: u32, stride: u32) -> E3 {
    return E3(layer[i], layer[stride + i], layer[2u * stride + i]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let n = 1u << pc.log_n;
    let m = n >> pc.log_arity;
    let a = 1u << pc.log_arity;
    let i = (wid.y * 65535u + wid.x) * 256u + tid;
    if (i >= m) {
        return;
    }
    var v: array<E3, 16>;
    for (var j = 0u; j < a; j++) {
        v[j] = ld3(i + j * m, n);
    }
    // x_i^-1 = shift^-1 w_N^-i (`tw` is the inverse table).
    let x_inv = f_mul(pc.shift_inv, root_pow(pc.log_n, i));
    let y = e_mul_base(E3(pc.beta.a, pc.beta.b, pc.beta.c), x_inv);
    var res = e_zero();
    for (var r = a; r > 0u; r--) {
        var u = e_zero();
        for (var j = 0u; j < a; j++) {
            let w = root_pow(pc.log_arity, j * (r - 1u));
            u = e_add(u, e_mul_base(v[j], w));
        }
        res = e_add(e_mul(res, y), u);
    }
    res = e_mul_base(res, pc.arity_inv);
    if (pc.roll == 1u) {
        let g = E3(roll[i], roll[m + i], roll[2u * m + i]);
        res = e_add(res, e_mul(E3(pc.s.a, pc.s.b, pc.s.c), g));
    }
    out[i] = res.a;
    out[m + i] = res.b;
    out[2u * m + i] = res.c;
}
