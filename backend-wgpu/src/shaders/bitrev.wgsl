// Swaps rows i and bitrev(i) of each of `cols` columns (2^log_n rows, from
// word base) in place: one invocation a row, the lower of a pair swaps.
struct Pc {
    base: u32,
    log_n: u32,
    cols: u32,
    pad: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read_write> m: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let idx = (wid.y * 65535u + wid.x) * 256u + tid;
    let n = 1u << pc.log_n;
    if (idx >= n * pc.cols) {
        return;
    }
    let i = idx & (n - 1u);
    let j = brev(i, pc.log_n);
    if (i < j) {
        let c = pc.base + (idx >> pc.log_n) * n;
        let t = m[c + i];
        m[c + i] = m[c + j];
        m[c + j] = t;
    }
}
