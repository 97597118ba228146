// Merkle leaves (one invocation per row, reading its columns through the
// generated reader `ld_m`) and inner nodes, for BLAKE3 and Keccak-256.
// Digests are 4 u64 (the 32 digest bytes, little-endian).
struct Pc {
    m_h: u32,
    m_cpb: u32,
    width: u32,
    // BLAKE3 (0) or Keccak (1).
    hash: u32,
}

var<push_constant> pc: Pc;

// READER
@group(0) @binding(OUT) var<storage, read_write> out: array<vec2<u32>>;

// Elements first .. first + 8 of the row as a 64-byte block (zero
// padding past the width); returns the block's length in bytes.
fn b3_block(row: u32, first: u32, w: ptr<function, array<u32, 16>>) -> u32 {
    let n = min(pc.width - first, 8u);
    for (var t = 0u; t < 8u; t++) {
        var e = vec2<u32>(0u, 0u);
        if (t < n) {
            e = ld_m(first + t, row);
        }
        (*w)[2u * t] = e.x;
        (*w)[2u * t + 1u] = e.y;
    }
    return n * 8u;
}

// BLAKE3 of the row: 1024-byte chunks (128 elements), merged through the
// tree stack as the reference does.
fn leaf_blake3(row: u32) -> array<u32, 8> {
    let n_chunks = (pc.width + 127u) / 128u;
    var stack: array<array<u32, 8>, 24>;
    var depth = 0u;
    var result: array<u32, 8>;
    for (var ci = 0u; ci < n_chunks; ci++) {
        let first = ci * 128u;
        let elems = min(pc.width - first, 128u);
        let nblocks = (elems + 7u) / 8u;
        var cv = b3_iv();
        let last_chunk = ci + 1u == n_chunks;
        for (var b = 0u; b < nblocks; b++) {
            var w: array<u32, 16>;
            let len = b3_block(row, first + b * 8u, &w);
            var flags = select(0u, B3_CHUNK_START, b == 0u) | select(0u, B3_CHUNK_END, b + 1u == nblocks);
            if (n_chunks == 1u && b + 1u == nblocks) {
                flags |= B3_ROOT;
            }
            cv = b3_compress(cv, w, ci, len, flags);
        }
        if (!last_chunk) {
            var total = ci + 1u;
            while ((total & 1u) == 0u) {
                depth -= 1u;
                cv = b3_parent(stack[depth], cv, 0u);
                total >>= 1u;
            }
            stack[depth] = cv;
            depth += 1u;
        } else {
            result = cv;
            while (depth > 0u) {
                depth -= 1u;
                result = b3_parent(stack[depth], result, select(0u, B3_ROOT, depth == 0u));
            }
        }
    }
    return result;
}

fn leaf_keccak(row: u32) -> array<u32, 8> {
    var st: array<vec2<u32>, 25>;
    var col = 0u;
    while (col + 17u <= pc.width) {
        for (var t = 0u; t < 17u; t++) {
            st[t] = st[t] ^ ld_m(col + t, row);
        }
        keccak_f(&st);
        col += 17u;
    }
    let rem = pc.width - col;
    for (var t = 0u; t < 17u; t++) {
        if (t < rem) {
            st[t] = st[t] ^ ld_m(col + t, row);
        }
    }
    st[rem] = st[rem] ^ vec2<u32>(1u, 0u);
    st[16] = st[16] ^ vec2<u32>(0u, 0x80000000u);
    keccak_f(&st);
    var d: array<u32, 8>;
    for (var i = 0u; i < 4u; i++) {
        d[2u * i] = st[i].x;
        d[2u * i + 1u] = st[i].y;
    }
    return d;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row = (wid.y * 65535u + wid.x) * 256u + tid;
    if (row >= pc.m_h) {
        return;
    }
    var d: array<u32, 8>;
    if (pc.hash == 0u) {
        d = leaf_blake3(row);
    } else {
        d = leaf_keccak(row);
    }
    for (var i = 0u; i < 4u; i++) {
        out[4u * row + i] = vec2<u32>(d[2u * i], d[2u * i + 1u]);
    }
}
