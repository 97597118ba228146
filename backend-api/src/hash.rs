//! The hashes a proof may be committed with, and the exact byte strings
//! each one digests. Every backend's Merkle trees and grinding must give
//! the bytes these host functions give.
//!
//! - leaf: H(canonical little-endian u64 bytes of the row's elements);
//! - node: H(left || right), 64 bytes;
//! - proof-of-work: H(seed || nonce as 8 little-endian bytes), and the
//!   nonce is valid when the digest's first 8 bytes, read as a big-endian
//!   u64, have at least `bits` leading zeros.

use crate::field::F;
use serde::{Deserialize, Serialize};
use sha3::Digest as _;
use std::fmt;
use std::str::FromStr;

/// A 32-byte digest.
pub type Digest = [u8; 32];

/// The hash function a proof commits with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HashKind {
    Blake3,
    Keccak256,
}

impl HashKind {
    pub const ALL: [HashKind; 2] = [HashKind::Blake3, HashKind::Keccak256];

    /// The stable tag written into proofs and transcripts.
    pub fn tag(self) -> u8 {
        match self {
            HashKind::Blake3 => 1,
            HashKind::Keccak256 => 2,
        }
    }

    pub fn from_tag(tag: u8) -> Option<HashKind> {
        match tag {
            1 => Some(HashKind::Blake3),
            2 => Some(HashKind::Keccak256),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            HashKind::Blake3 => "blake3",
            HashKind::Keccak256 => "keccak",
        }
    }
}

impl fmt::Display for HashKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for HashKind {
    type Err = String;
    fn from_str(s: &str) -> Result<HashKind, String> {
        match s.to_ascii_lowercase().as_str() {
            "blake3" => Ok(HashKind::Blake3),
            "keccak" | "keccak256" | "keccak-256" => Ok(HashKind::Keccak256),
            other => Err(format!("unknown hash '{other}' (expected blake3 or keccak)")),
        }
    }
}

/// An incremental hasher over either function.
pub enum Hasher {
    Blake3(Box<blake3::Hasher>),
    Keccak(Box<sha3::Keccak256>),
}

impl Hasher {
    pub fn new(kind: HashKind) -> Hasher {
        match kind {
            HashKind::Blake3 => Hasher::Blake3(Box::new(blake3::Hasher::new())),
            HashKind::Keccak256 => Hasher::Keccak(Box::new(sha3::Keccak256::new())),
        }
    }

    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Blake3(h) => {
                h.update(bytes);
            }
            Hasher::Keccak(h) => h.update(bytes),
        }
    }

    pub fn finalize(self) -> Digest {
        match self {
            Hasher::Blake3(h) => *h.finalize().as_bytes(),
            Hasher::Keccak(h) => h.finalize().into(),
        }
    }
}

/// H(bytes).
pub fn hash_bytes(kind: HashKind, bytes: &[u8]) -> Digest {
    match kind {
        HashKind::Blake3 => *blake3::hash(bytes).as_bytes(),
        HashKind::Keccak256 => sha3::Keccak256::digest(bytes).into(),
    }
}

/// The digest of one Merkle leaf: a row of field elements.
pub fn hash_leaf(kind: HashKind, row: &[F]) -> Digest {
    let bytes: &[u8] = bytemuck::cast_slice(row);
    if cfg!(target_endian = "little") {
        hash_bytes(kind, bytes)
    } else {
        let le: Vec<u8> = row.iter().flat_map(|v| v.to_le_bytes()).collect();
        hash_bytes(kind, &le)
    }
}

/// The digest of an inner Merkle node.
#[inline]
pub fn hash_node(kind: HashKind, left: &Digest, right: &Digest) -> Digest {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(left);
    buf[32..].copy_from_slice(right);
    hash_bytes(kind, &buf)
}

/// The siblings of leaf `index` inside the subtree over `leaves` (a power
/// of two of them), leaves first: the lowest steps of a path whose levels
/// above the subtree's root are kept elsewhere.
pub fn subtree_path(kind: HashKind, mut leaves: Vec<Digest>, mut index: usize) -> Vec<Digest> {
    let mut path = Vec::with_capacity(leaves.len().trailing_zeros() as usize);
    while leaves.len() > 1 {
        path.push(leaves[index ^ 1]);
        leaves = leaves.chunks(2).map(|p| hash_node(kind, &p[0], &p[1])).collect();
        index >>= 1;
    }
    path
}

/// Recomputes a Merkle root from a leaf digest and its authentication path
/// (siblings from the leaf level upwards).
pub fn merkle_root_from_path(kind: HashKind, leaf: Digest, mut index: usize, path: &[Digest]) -> Digest {
    let mut node = leaf;
    for sibling in path {
        node = if index & 1 == 0 { hash_node(kind, &node, sibling) } else { hash_node(kind, sibling, &node) };
        index >>= 1;
    }
    node
}

/// The proof-of-work digest's leading zero count for `nonce`.
pub fn pow_zeros(kind: HashKind, seed: &Digest, nonce: u64) -> u32 {
    let mut buf = [0u8; 40];
    buf[..32].copy_from_slice(seed);
    buf[32..].copy_from_slice(&nonce.to_le_bytes());
    let d = hash_bytes(kind, &buf);
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes")).leading_zeros()
}

/// Whether `nonce` satisfies a `bits`-bit proof of work over `seed`.
pub fn pow_ok(kind: HashKind, seed: &Digest, nonce: u64, bits: u32) -> bool {
    bits == 0 || pow_zeros(kind, seed, nonce) >= bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // Empty-input digests of the two standard functions.
        assert_eq!(
            hex(&hash_bytes(HashKind::Blake3, b"")),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        assert_eq!(
            hex(&hash_bytes(HashKind::Keccak256, b"")),
            "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
        );
    }

    #[test]
    fn leaf_hash_is_little_endian_bytes() {
        let row = [F::new(1), F::new(0x0102_0304_0506_0708)];
        let mut bytes = vec![];
        for v in row {
            bytes.extend_from_slice(&v.value().to_le_bytes());
        }
        for k in HashKind::ALL {
            assert_eq!(hash_leaf(k, &row), hash_bytes(k, &bytes));
        }
    }

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }
}
