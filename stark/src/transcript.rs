//! The Fiat-Shamir transcript: a hash chain over the proof's chosen hash.
//!
//! absorb:    state = H(state || 0x00 || len(label) || label || data)
//! challenge: state = H(state || 0x01 || len(label) || label); output = state
//!
//! Labels separate the uses, and every challenge depends on everything
//! absorbed before it.

use backend_api::hash::Hasher;
use backend_api::{Digest, Ext, HashKind, F};

#[derive(Clone)]
pub struct Transcript {
    hash: HashKind,
    state: Digest,
}

impl Transcript {
    pub fn new(hash: HashKind, protocol: &[u8]) -> Transcript {
        let mut h = Hasher::new(hash);
        h.update(b"kiln-transcript");
        h.update(&[hash.tag()]);
        h.update(protocol);
        Transcript { hash, state: h.finalize() }
    }

    fn step(&mut self, tag: u8, label: &[u8], data: &[u8]) {
        let mut h = Hasher::new(self.hash);
        h.update(&self.state);
        h.update(&[tag, label.len() as u8]);
        h.update(label);
        h.update(data);
        self.state = h.finalize();
    }

    pub fn absorb(&mut self, label: &[u8], data: &[u8]) {
        self.step(0, label, data);
    }

    pub fn absorb_u64(&mut self, label: &[u8], v: u64) {
        self.absorb(label, &v.to_le_bytes());
    }

    pub fn absorb_digest(&mut self, label: &[u8], d: &Digest) {
        self.absorb(label, d);
    }

    pub fn absorb_felts(&mut self, label: &[u8], vals: &[F]) {
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.absorb(label, &bytes);
    }

    pub fn absorb_exts(&mut self, label: &[u8], vals: &[Ext]) {
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.absorb(label, &bytes);
    }

    pub fn challenge_bytes(&mut self, label: &[u8]) -> Digest {
        self.step(1, label, &[]);
        self.state
    }

    /// An extension element; each coordinate is 8 digest bytes reduced mod
    /// p. As 2^64 < 2p, a coordinate takes any given value with probability
    /// at most 2/2^64 < 2/p, so the element equals any given element of E
    /// with probability at most 8/|E|: every Schwartz-Zippel bound over E
    /// holds with a factor of 8 (3 bits), accounted in docs/SOUNDNESS.md.
    pub fn challenge_ext(&mut self, label: &[u8]) -> Ext {
        let d = self.challenge_bytes(label);
        let c = |i: usize| F::new(u64::from_le_bytes(d[8 * i..8 * i + 8].try_into().expect("8 bytes")));
        Ext::new(c(0), c(1), c(2))
    }

    /// An index below `n`, a power of two (so the draw is uniform).
    pub fn challenge_index(&mut self, label: &[u8], n: usize) -> usize {
        debug_assert!(n.is_power_of_two());
        let d = self.challenge_bytes(label);
        (u64::from_le_bytes(d[..8].try_into().expect("8 bytes")) as usize) & (n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_depend_on_everything_absorbed() {
        for hash in HashKind::ALL {
            let mut a = Transcript::new(hash, b"t");
            let mut b = Transcript::new(hash, b"t");
            a.absorb(b"x", &[1, 2, 3]);
            b.absorb(b"x", &[1, 2, 4]);
            assert_ne!(a.clone().challenge_ext(b"c"), b.clone().challenge_ext(b"c"));
            let mut c = Transcript::new(hash, b"t");
            c.absorb(b"x", &[1, 2, 3]);
            assert_eq!(a.challenge_ext(b"c"), c.challenge_ext(b"c"));
        }
        let mut k = Transcript::new(HashKind::Keccak256, b"t");
        let mut l = Transcript::new(HashKind::Blake3, b"t");
        assert_ne!(k.challenge_bytes(b"c"), l.challenge_bytes(b"c"));
    }
}
