// Row k of each of `cols` columns of dst (2^log_m rows, from word dst_base)
// is the sum over r of src[k + r * m] * c^r (columns of 2^log_n rows, from
// word src_base): each column's polynomial modulo X^m - c, by Horner from
// the last slice.
struct Pc {
    src_base: u32,
    dst_base: u32,
    log_n: u32,
    log_m: u32,
    cols: u32,
    pad: u32,
    c: vec2<u32>,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let idx = (wid.y * 65535u + wid.x) * 256u + tid;
    let m = 1u << pc.log_m;
    if (idx >= m * pc.cols) {
        return;
    }
    let s = pc.src_base + (idx >> pc.log_m) * (1u << pc.log_n) + (idx & (m - 1u));
    var off = (1u << pc.log_n) - m;
    var acc = src[s + off];
    while (off > 0u) {
        off -= m;
        acc = f_add(f_mul(acc, pc.c), src[s + off]);
    }
    dst[pc.dst_base + idx] = acc;
}
