// LogUp running sums: an inclusive prefix sum over one extension column
// (3 base columns of stride `stride` from word `base`), in blocks of
// 256 x 8 rows; the block totals are scanned the same way and added back.
// Field addition is exact, so the grouping does not change a value.
//   mode 0: scan each block in place, its total to sums[block];
//   mode 1: add the scanned total of the blocks before each block.
struct Pc {
    mode: u32,
    n: u32,
    stride: u32,
    base: u32,
    sums_stride: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read_write> col: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> sums: array<vec2<u32>>;

var<workgroup> sa: array<E3, 256>;

fn ld(i: u32) -> E3 {
    return E3(col[pc.base + i], col[pc.base + pc.stride + i], col[pc.base + 2u * pc.stride + i]);
}

fn st(i: u32, v: E3) {
    col[pc.base + i] = v.a;
    col[pc.base + pc.stride + i] = v.b;
    col[pc.base + 2u * pc.stride + i] = v.c;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let block = wid.y * 65535u + wid.x;
    if (pc.mode == 1u) {
        let i = block * 256u + t;
        let b = i / 2048u;
        if (i < pc.n && b > 0u) {
            let s = E3(sums[b - 1u], sums[pc.sums_stride + b - 1u], sums[2u * pc.sums_stride + b - 1u]);
            st(i, e_add(ld(i), s));
        }
        return;
    }
    let start = (block * 256u + t) * 8u;
    var v: array<E3, 8>;
    var acc = e_zero();
    for (var j = 0u; j < 8u; j++) {
        if (start + j < pc.n) {
            acc = e_add(acc, ld(start + j));
        }
        v[j] = acc;
    }
    sa[t] = acc;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off <<= 1u) {
        var prev = e_zero();
        if (t >= off) {
            prev = sa[t - off];
        }
        workgroupBarrier();
        sa[t] = e_add(sa[t], prev);
        workgroupBarrier();
    }
    var prefix = e_zero();
    if (t > 0u) {
        prefix = sa[t - 1u];
    }
    for (var j = 0u; j < 8u; j++) {
        if (start + j < pc.n) {
            st(start + j, e_add(v[j], prefix));
        }
    }
    if (t == 255u) {
        sums[block] = sa[t].a;
        sums[pc.sums_stride + block] = sa[t].b;
        sums[2u * pc.sums_stride + block] = sa[t].c;
    }
}
