//! Merkle trees over matrix rows. Every layer above the leaves is kept
//! for openings; the leaf digests are not (they are as large as all the
//! layers above them together), as an opening rehashes the one sibling row
//! it needs from the committed matrix.

use crate::{try_zeroed, AllocFailed, CpuMatrix};
use backend_api::hash::{hash_leaf, hash_node};
use backend_api::{DeviceTree, Digest, HashKind, RowOpening, F};
use rayon::prelude::*;

/// Rows gathered (transposed) together before hashing: the column-major
/// reads stay sequential and the row buffer stays in L1/L2.
const LEAF_ROWS: usize = 32;
/// Rows (or nodes) per task on the 16-lane BLAKE3 and 8-lane Keccak
/// paths: a multiple of both lane counts.
#[cfg(target_arch = "x86_64")]
const SIMD_ROWS: usize = 256;

/// A Merkle tree: `layers[i]` are the digests of level i + 1 (level 0, the
/// leaves, is not kept), the last layer is the root alone. A tree of one
/// leaf keeps that leaf, its root.
#[derive(Clone, Debug)]
pub struct CpuTree {
    hash: HashKind,
    leaves: usize,
    layers: Vec<Vec<Digest>>,
}

impl CpuTree {
    /// The digests of one level (1 = the parents of the leaves; 0 only in a
    /// tree of one leaf).
    pub fn layer(&self, level: usize) -> Option<&[Digest]> {
        let index = if self.leaves == 1 { level } else { level.checked_sub(1)? };
        self.layers.get(index).map(Vec::as_slice)
    }

    /// Levels above the leaves.
    pub fn depth(&self) -> usize {
        self.leaves.trailing_zeros() as usize
    }
}

impl DeviceTree for CpuTree {
    fn root(&self) -> Digest {
        self.layers.last().and_then(|l| l.first()).copied().unwrap_or_default()
    }
    fn leaves(&self) -> usize {
        self.leaves
    }
    fn hash(&self) -> HashKind {
        self.hash
    }
}

/// A multi-lane implementation of one hash (AVX-512F), for leaves and
/// inner nodes; `None` where only the scalar `backend_api::hash` applies.
struct Lanes {
    lanes: usize,
    leaves_ok: fn(usize, usize) -> bool,
    leaves_into: fn(&[F], usize, usize, usize, &mut [Digest]),
    nodes_into: fn(&[Digest], usize, &mut [Digest]),
}

fn lanes(hash: HashKind) -> Option<Lanes> {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::available() {
        return Some(match hash {
            HashKind::Blake3 => Lanes {
                lanes: crate::blake3x16::LANES,
                leaves_ok: crate::blake3x16::leaves_ok,
                leaves_into: crate::blake3x16::leaves_into,
                nodes_into: crate::blake3x16::nodes_into,
            },
            HashKind::Keccak256 => Lanes {
                lanes: crate::keccakx8::LANES,
                leaves_ok: crate::keccakx8::leaves_ok,
                leaves_into: crate::keccakx8::leaves_into,
                nodes_into: crate::keccakx8::nodes_into,
            },
        });
    }
    let _ = hash;
    None
}

/// Commits `m` (validated: non-empty, power-of-two height).
pub(crate) fn commit(m: &CpuMatrix, hash: HashKind) -> Result<CpuTree, AllocFailed> {
    let (h, w) = (m.height, m.width);
    let data = m.data();
    let mut leaves: Vec<Digest> = try_zeroed(h)?;
    if let Some(l) = lanes(hash).filter(|l| (l.leaves_ok)(w, h)) {
        leaves
            .par_chunks_mut(SIMD_ROWS)
            .enumerate()
            .for_each(|(ci, out)| (l.leaves_into)(data, h, w, ci * SIMD_ROWS, out));
        return tree(leaves, hash);
    }
    leaves.par_chunks_mut(LEAF_ROWS).enumerate().for_each_init(Vec::new, |buf: &mut Vec<F>, (ci, out)| {
        let r0 = ci * LEAF_ROWS;
        let rows = out.len();
        buf.clear();
        buf.resize(rows * w, F::ZERO);
        for c in 0..w {
            let col = &data[c * h + r0..c * h + r0 + rows];
            for (r, &v) in col.iter().enumerate() {
                buf[r * w + c] = v;
            }
        }
        for (r, d) in out.iter_mut().enumerate() {
            *d = hash_leaf(hash, &buf[r * w..(r + 1) * w]);
        }
    });
    tree(leaves, hash)
}

/// The tree above `leaves`, which it drops once their parents exist.
fn tree(leaves: Vec<Digest>, hash: HashKind) -> Result<CpuTree, AllocFailed> {
    let count = leaves.len();
    let mut layers = build_layers(leaves, hash)?;
    if count > 1 {
        layers.remove(0);
    }
    Ok(CpuTree { hash, leaves: count, layers })
}

/// The leaf layer and every layer above it, up to the root.
fn build_layers(leaves: Vec<Digest>, hash: HashKind) -> Result<Vec<Vec<Digest>>, AllocFailed> {
    let lanes = lanes(hash);
    let mut layers = vec![leaves];
    while let Some(prev) = layers.last().filter(|l| l.len() > 1) {
        if let Some(l) = lanes.as_ref().filter(|l| prev.len() >= 2 * l.lanes) {
            // prev.len() is a power of two, so every chunk is whole lanes.
            let mut next: Vec<Digest> = try_zeroed(prev.len() / 2)?;
            next.par_chunks_mut(SIMD_ROWS).enumerate().for_each(|(ci, out)| (l.nodes_into)(prev, ci * SIMD_ROWS, out));
            layers.push(next);
            continue;
        }
        let mut next: Vec<Digest> = try_zeroed(prev.len() / 2)?;
        next.par_iter_mut().with_min_len(128).enumerate().for_each(|(i, d)| {
            *d = hash_node(hash, &prev[2 * i], &prev[2 * i + 1]);
        });
        layers.push(next);
    }
    Ok(layers)
}

/// Opens `rows` (validated: in range, tree built from `m`): the path's
/// first digest is the sibling row's leaf, hashed again from `m`.
pub(crate) fn open(m: &CpuMatrix, tree: &CpuTree, rows: &[usize]) -> Vec<RowOpening> {
    rows.iter()
        .map(|&r| {
            let mut path = Vec::with_capacity(tree.depth());
            if tree.depth() > 0 {
                path.push(hash_leaf(tree.hash, &m.row(r ^ 1)));
            }
            path.extend((1..tree.depth()).map(|l| tree.layers[l - 1][(r >> l) ^ 1]));
            RowOpening { values: m.row(r), path }
        })
        .collect()
}
