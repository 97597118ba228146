// Proof-of-work search over the batch [start, start + count): every
// invocation tests one nonce; the smallest valid offset wins through
// atomicMin. Batches run in increasing order, so the first batch with a
// hit holds the smallest nonce.
struct Pc {
    seed: array<vec4<u32>, 2>,
    start: vec2<u32>,
    count: u32,
    bits: u32,
    hash: u32,
}

var<push_constant> pc: Pc;
@group(0) @binding(0) var<storage, read_write> best: atomic<u32>;

fn bswap(x: u32) -> u32 {
    return (x >> 24u) | ((x >> 8u) & 0xff00u) | ((x << 8u) & 0xff0000u) | (x << 24u);
}

// Leading zeros of the digest's first 8 bytes read as a big-endian u64,
// given its first two little-endian words.
fn zeros(w0: u32, w1: u32) -> u32 {
    let hi = bswap(w0);
    if (hi != 0u) {
        return countLeadingZeros(hi);
    }
    return 32u + countLeadingZeros(bswap(w1));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let idx = (wid.y * 65535u + wid.x) * 256u + tid;
    if (idx >= pc.count) {
        return;
    }
    let lo = pc.start.x + idx;
    let nonce = vec2<u32>(lo, pc.start.y + select(0u, 1u, lo < idx));
    var z = 0u;
    if (pc.hash == 0u) {
        var m: array<u32, 16>;
        for (var t = 0u; t < 2u; t++) {
            let q = pc.seed[t];
            m[4u * t] = q.x;
            m[4u * t + 1u] = q.y;
            m[4u * t + 2u] = q.z;
            m[4u * t + 3u] = q.w;
        }
        m[8] = nonce.x;
        m[9] = nonce.y;
        let h = b3_hash_block(m, 40u);
        z = zeros(h[0], h[1]);
    } else {
        var st: array<vec2<u32>, 25>;
        for (var t = 0u; t < 2u; t++) {
            let q = pc.seed[t];
            st[2u * t] = q.xy;
            st[2u * t + 1u] = q.zw;
        }
        st[4] = nonce;
        st[5] = vec2<u32>(1u, 0u);
        st[16] = vec2<u32>(0u, 0x80000000u);
        keccak_f(&st);
        z = zeros(st[0].x, st[0].y);
    }
    if (z >= pc.bits) {
        atomicMin(&best, idx);
    }
}
