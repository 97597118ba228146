// BLAKE3 compression, bit-identical to the reference crate: 7 rounds,
// message permutation, chunk/parent/root flags. Messages are u32 words
// (little-endian bytes).
const B3_CHUNK_START: u32 = 1u;
const B3_CHUNK_END: u32 = 2u;
const B3_PARENT: u32 = 4u;
const B3_ROOT: u32 = 8u;

const B3_IV = array<u32, 8>(0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                            0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u);
const B3_PERM = array<u32, 16>(2u, 6u, 3u, 10u, 7u, 0u, 4u, 13u, 1u, 11u, 12u, 5u, 9u, 14u, 15u, 8u);

fn rotr(x: u32, n: u32) -> u32 {
    return (x >> n) | (x << (32u - n));
}

fn b3_g(v: ptr<function, array<u32, 16>>, a: u32, b: u32, c: u32, d: u32, mx: u32, my: u32) {
    (*v)[a] = (*v)[a] + (*v)[b] + mx;
    (*v)[d] = rotr((*v)[d] ^ (*v)[a], 16u);
    (*v)[c] = (*v)[c] + (*v)[d];
    (*v)[b] = rotr((*v)[b] ^ (*v)[c], 12u);
    (*v)[a] = (*v)[a] + (*v)[b] + my;
    (*v)[d] = rotr((*v)[d] ^ (*v)[a], 8u);
    (*v)[c] = (*v)[c] + (*v)[d];
    (*v)[b] = rotr((*v)[b] ^ (*v)[c], 7u);
}

// The chaining value (first 8 words of the output) of one compression.
fn b3_compress(cv: array<u32, 8>, m_in: array<u32, 16>, counter: u32, block_len: u32, flags: u32) -> array<u32, 8> {
    var v: array<u32, 16>;
    for (var i = 0u; i < 8u; i++) {
        v[i] = cv[i];
    }
    v[8] = B3_IV[0];
    v[9] = B3_IV[1];
    v[10] = B3_IV[2];
    v[11] = B3_IV[3];
    v[12] = counter;
    v[13] = 0u;
    v[14] = block_len;
    v[15] = flags;
    var m = m_in;
    for (var r = 0u; r < 7u; r++) {
        b3_g(&v, 0u, 4u, 8u, 12u, m[0], m[1]);
        b3_g(&v, 1u, 5u, 9u, 13u, m[2], m[3]);
        b3_g(&v, 2u, 6u, 10u, 14u, m[4], m[5]);
        b3_g(&v, 3u, 7u, 11u, 15u, m[6], m[7]);
        b3_g(&v, 0u, 5u, 10u, 15u, m[8], m[9]);
        b3_g(&v, 1u, 6u, 11u, 12u, m[10], m[11]);
        b3_g(&v, 2u, 7u, 8u, 13u, m[12], m[13]);
        b3_g(&v, 3u, 4u, 9u, 14u, m[14], m[15]);
        var t: array<u32, 16>;
        for (var i = 0u; i < 16u; i++) {
            t[i] = m[B3_PERM[i]];
        }
        m = t;
    }
    var out: array<u32, 8>;
    for (var i = 0u; i < 8u; i++) {
        out[i] = v[i] ^ v[i + 8u];
    }
    return out;
}

fn b3_iv() -> array<u32, 8> {
    return B3_IV;
}

fn b3_parent(left: array<u32, 8>, right: array<u32, 8>, flags: u32) -> array<u32, 8> {
    var m: array<u32, 16>;
    for (var i = 0u; i < 8u; i++) {
        m[i] = left[i];
        m[8u + i] = right[i];
    }
    return b3_compress(B3_IV, m, 0u, 64u, B3_PARENT | flags);
}

// BLAKE3 of one message of at most 64 bytes (zero-padded words).
fn b3_hash_block(m: array<u32, 16>, len: u32) -> array<u32, 8> {
    return b3_compress(B3_IV, m, 0u, len, B3_CHUNK_START | B3_CHUNK_END | B3_ROOT);
}
