// Sets `flag` when any of rows [bound, n) of the 3 columns of `m` is
// non-zero (a quotient coefficient past its degree bound).
struct Pc {
    n: u32,
    bound: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> m: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> flag: atomic<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let k = (wid.y * 65535u + wid.x) * 256u + tid;
    let span = pc.n - pc.bound;
    if (k >= 3u * span) {
        return;
    }
    let v = m[(k / span) * pc.n + pc.bound + k % span];
    if (v.x != 0u || v.y != 0u) {
        atomicOr(&flag, 1u);
    }
}
