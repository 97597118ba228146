// One level of inner Merkle nodes: node i of `dst` is the parent of nodes
// 2i and 2i + 1 of `src`.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let i = (wid.y * 65535u + wid.x) * 256u + tid;
    if (i >= pc.count) {
        return;
    }
    var c: array<vec2<u32>, 8>;
    for (var t = 0u; t < 8u; t++) {
        c[t] = src[8u * i + t];
    }
    let h = parent(c);
    for (var t = 0u; t < 4u; t++) {
        dst[4u * i + t] = h[t];
    }
}
