// out[base + k] = src[idx[base + k]] for k < count: opened rows and
// authentication paths, gathered on the device and read back at once.
// The indices of every source are one buffer, in output order.
struct Pc {
    count: u32,
    base: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let k = (wid.y * 65535u + wid.x) * 256u + tid;
    if (k < pc.count) {
        out[pc.base + k] = src[idx[pc.base + k]];
    }
}
