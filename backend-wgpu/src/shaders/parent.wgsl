// A Merkle parent: the digest of two child digests (64 bytes), with
// BLAKE3 (`hash` 0) or Keccak-256 (1). Digests are 4 u64 (the 32 digest
// bytes, little-endian); `src` holds the children, `dst` the parents.
struct Pc {
    count: u32,
    hash: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;

fn parent(c: array<vec2<u32>, 8>) -> array<vec2<u32>, 4> {
    var out: array<vec2<u32>, 4>;
    if (pc.hash == 0u) {
        var m: array<u32, 16>;
        for (var t = 0u; t < 8u; t++) {
            m[2u * t] = c[t].x;
            m[2u * t + 1u] = c[t].y;
        }
        let h = b3_hash_block(m, 64u);
        for (var t = 0u; t < 4u; t++) {
            out[t] = vec2<u32>(h[2u * t], h[2u * t + 1u]);
        }
    } else {
        var st: array<vec2<u32>, 25>;
        for (var t = 0u; t < 8u; t++) {
            st[t] = c[t];
        }
        st[8] = vec2<u32>(1u, 0u);
        st[16] = vec2<u32>(0u, 0x80000000u);
        keccak_f(&st);
        for (var t = 0u; t < 4u; t++) {
            out[t] = st[t];
        }
    }
    return out;
}
