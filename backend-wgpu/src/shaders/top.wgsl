// The top of a Merkle tree in one workgroup: the `count` (at most 256)
// parents of `src`'s nodes, then every level above them up to the root,
// each level after the one below it in `dst`. A level waits in workgroup
// memory for the next, so the top takes one dispatch, not one a level.
var<workgroup> sh: array<vec2<u32>, 1024>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid: u32) {
    var count = pc.count;
    var at = 0u;
    var first = true;
    while (count >= 1u) {
        var h: array<vec2<u32>, 4>;
        if (tid < count) {
            var c: array<vec2<u32>, 8>;
            for (var t = 0u; t < 8u; t++) {
                if (first) {
                    c[t] = src[8u * tid + t];
                } else {
                    c[t] = sh[8u * tid + t];
                }
            }
            h = parent(c);
        }
        workgroupBarrier();
        if (tid < count) {
            for (var t = 0u; t < 4u; t++) {
                sh[4u * tid + t] = h[t];
                dst[at + 4u * tid + t] = h[t];
            }
        }
        workgroupBarrier();
        at += 4u * count;
        count >>= 1u;
        first = false;
    }
}
