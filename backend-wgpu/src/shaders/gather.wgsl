// out[k] = source s's word idx[k], for the outputs [start_s, start_(s+1))
// of each bound source s: opened rows and authentication paths from up
// to SOURCES buffers in one dispatch, read back at once. From word
// `first`, `idx` holds the SOURCES + 1 segment starts (relative to
// `base`) and then the indices.
struct Pc {
    count: u32,
    base: u32,
    sources: u32,
    first: u32,
}

var<push_constant> pc: Pc;
// SOURCE BINDINGS
@group(0) @binding(SOURCES) var<storage, read> idx: array<u32>;
@group(0) @binding(OUT) var<storage, read_write> out: array<vec2<u32>>;

fn word(s: u32, i: u32) -> vec2<u32> {
    switch s {
        // SOURCE CASES
        default: { return vec2<u32>(0u, 0u); }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let k = (wid.y * 65535u + wid.x) * 256u + tid;
    if (k >= pc.count) {
        return;
    }
    var s = 0u;
    while (s + 1u < pc.sources && idx[pc.first + s + 1u] <= k) {
        s++;
    }
    out[pc.base + k] = word(s, idx[pc.first + SOURCES + 1u + k]);
}
