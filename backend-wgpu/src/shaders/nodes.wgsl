// One level of inner Merkle nodes: node i of `dst` hashes nodes 2i and
// 2i + 1 of `src` (64 bytes).
struct Pc {
    count: u32,
    hash: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let i = (wid.y * 65535u + wid.x) * 256u + tid;
    if (i >= pc.count) {
        return;
    }
    if (pc.hash == 0u) {
        var m: array<u32, 16>;
        for (var t = 0u; t < 8u; t++) {
            let e = src[8u * i + t];
            m[2u * t] = e.x;
            m[2u * t + 1u] = e.y;
        }
        let h = b3_hash_block(m, 64u);
        for (var t = 0u; t < 4u; t++) {
            dst[4u * i + t] = vec2<u32>(h[2u * t], h[2u * t + 1u]);
        }
    } else {
        var st: array<vec2<u32>, 25>;
        for (var t = 0u; t < 8u; t++) {
            st[t] = src[8u * i + t];
        }
        st[8] = vec2<u32>(1u, 0u);
        st[16] = vec2<u32>(0u, 0x80000000u);
        keccak_f(&st);
        for (var t = 0u; t < 4u; t++) {
            dst[4u * i + t] = st[t];
        }
    }
}
