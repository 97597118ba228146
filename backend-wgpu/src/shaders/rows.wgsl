// Row k < 2^log_k of each of `cols` columns: dst row dst_first + k *
// 2^log_dst_step is src row (src_first + k * 2^log_src_step) mod 2^log_src_h.
// Columns are 2^log_src_h words apart from src_base in src, 2^log_dst_h from
// dst_base in dst. With a source step it takes every 2^s-th row
// (`stride_rows`); with a destination step it puts one piece's rows in
// place among the others (`interleave`).
struct Pc {
    src_base: u32,
    dst_base: u32,
    log_src_h: u32,
    log_dst_h: u32,
    log_k: u32,
    cols: u32,
    src_first: u32,
    log_src_step: u32,
    dst_first: u32,
    log_dst_step: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let idx = (wid.y * 65535u + wid.x) * 256u + tid;
    if (idx >= (pc.cols << pc.log_k)) {
        return;
    }
    let col = idx >> pc.log_k;
    let k = idx & ((1u << pc.log_k) - 1u);
    let r = (pc.src_first + (k << pc.log_src_step)) & ((1u << pc.log_src_h) - 1u);
    dst[pc.dst_base + (col << pc.log_dst_h) + pc.dst_first + (k << pc.log_dst_step)] =
        src[pc.src_base + (col << pc.log_src_h) + r];
}
