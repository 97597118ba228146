// One pass of a radix-2 decimation-in-time NTT over columns: butterfly
// levels [l0, l0 + k) of a size-2^log_n transform, 2^(k+c) elements per
// workgroup held in workgroup memory (2^c consecutive indices, so global
// reads and writes are coalesced in runs of 2^c). Natural order out.
//
// The first pass loads its input one of three ways (`mode`):
//   0  in place: dst itself (later passes);
//   1  bit-reversed gather from src (a whole transform: level 0 first);
//   2  expand coefficients: position i holds coefficient
//      brev(i >> (log_n - log_src), log_src) of src times load_scale (and
//      times shift^index from the two twist tables when `twist`), the
//      zero-padded levels below l0 = log_n - log_src already done.
// The last pass multiplies by `scale` when `scale_on` (the 1/n of the
// inverse).
//
// With `lanes_high` (the first pass of a gather, l0 = 0, when the
// transform needs several passes) the 2^c lanes of a workgroup are not
// consecutive positions but the positions whose bit-reversed indices are
// 2^c consecutive source words: the gather reads runs of 2^c words
// instead of one word every 2^(log_n - k), and each lane stores a run of
// 2^k positions. The twiddles depend on the level bits only (the lanes sit
// above them).
struct Pc {
    log_n: u32,
    l0: u32,
    k: u32,
    c: u32,
    mode: u32,
    log_src: u32,
    src_h: u32,
    dst_h: u32,
    src_base: u32,
    dst_base: u32,
    tw_log: u32,
    scale_on: u32,
    scale: vec2<u32>,
    load_scale: vec2<u32>,
    twist: u32,
    twist_lo_bits: u32,
    lanes_high: u32,
    by_level: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> tw: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> twist: array<vec2<u32>>;

var<workgroup> sh: array<vec2<u32>, TILE>;

// w_(2^(level+1))^m from the roots by level (level L's at words
// [2^L, 2^(L+1))), else from the table of w_(2^tw_log)^j, j <
// 2^(tw_log-1).
fn level_root(level: u32, m: u32) -> vec2<u32> {
    if (pc.by_level == 1u) {
        return tw[(1u << level) + m];
    }
    return tw[m << (pc.tw_log - level - 1u)];
}

// The position of workgroup element e (lane e & cmask, butterfly index
// e >> c) in workgroup g.
fn position(g: u32, e: u32) -> u32 {
    let cmask = (1u << pc.c) - 1u;
    if (pc.lanes_high == 1u) {
        let hbits = pc.log_n - pc.k - pc.c;
        return ((brev(g, hbits) | (brev(e & cmask, pc.c) << hbits)) << pc.k) | (e >> pc.c);
    }
    let low_tiles = pc.l0 - pc.c;
    let low = (g & ((1u << low_tiles) - 1u)) << pc.c;
    let high = g >> low_tiles;
    return (high << (pc.l0 + pc.k)) | ((e >> pc.c) << pc.l0) | low | (e & cmask);
}

fn load(gi: u32, col: u32) -> vec2<u32> {
    if (pc.mode == 0u) {
        return dst[pc.dst_base + col * pc.dst_h + gi];
    }
    if (pc.mode == 1u) {
        return src[pc.src_base + col * pc.src_h + brev(gi, pc.log_n)];
    }
    let kk = brev(gi >> (pc.log_n - pc.log_src), pc.log_src);
    var v = f_mul(src[pc.src_base + col * pc.src_h + kk], pc.load_scale);
    if (pc.twist == 1u) {
        let lo_n = 1u << pc.twist_lo_bits;
        v = f_mul(v, f_mul(twist[kk & (lo_n - 1u)], twist[lo_n + (kk >> pc.twist_lo_bits)]));
    }
    return v;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let col = wid.y + wid.z * 65535u;
    let g = wid.x;
    let t_log = pc.k + pc.c;
    let tsize = 1u << t_log;
    let cmask = (1u << pc.c) - 1u;
    // The position bits below l0 that the workgroup's tile fixes (none
    // with high lanes: l0 is 0).
    var low = 0u;
    if (pc.lanes_high == 0u) {
        low = (g & ((1u << (pc.l0 - pc.c)) - 1u)) << pc.c;
    }
    for (var e = tid; e < tsize; e += 256u) {
        sh[e] = load(position(g, e), col);
    }
    workgroupBarrier();
    let half = tsize >> 1u;
    for (var s = 0u; s < pc.k; s++) {
        let level = pc.l0 + s;
        let smask = (1u << s) - 1u;
        for (var b = tid; b < half; b += 256u) {
            let t = b & cmask;
            let jj = b >> pc.c;
            let jlow = jj & smask;
            let j0 = ((jj >> s) << (s + 1u)) | jlow;
            let e0 = (j0 << pc.c) | t;
            let e1 = e0 | (1u << (s + pc.c));
            var m = jlow << pc.l0;
            if (pc.lanes_high == 0u) {
                m = m | low | t;
            }
            let w = level_root(level, m);
            let x = sh[e0];
            let y = f_mul(sh[e1], w);
            sh[e0] = f_add(x, y);
            sh[e1] = f_sub(x, y);
        }
        workgroupBarrier();
    }
    for (var e = tid; e < tsize; e += 256u) {
        let gi = position(g, e);
        var v = sh[e];
        if (pc.scale_on == 1u) {
            v = f_mul(v, pc.scale);
        }
        dst[pc.dst_base + col * pc.dst_h + gi] = v;
    }
}
