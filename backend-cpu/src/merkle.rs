//! Merkle trees over matrix rows, every layer kept for openings.

use crate::CpuMatrix;
use backend_api::hash::{hash_leaf, hash_node};
use backend_api::{DeviceTree, Digest, HashKind, RowOpening, F};
use rayon::prelude::*;

/// Rows gathered (transposed) together before hashing: the column-major
/// reads stay sequential and the row buffer stays in L1/L2.
const LEAF_ROWS: usize = 32;

/// A Merkle tree with all its layers: `layers[0]` are the leaf digests,
/// the last layer is the root alone.
#[derive(Clone, Debug)]
pub struct CpuTree {
    hash: HashKind,
    layers: Vec<Vec<Digest>>,
}

impl CpuTree {
    /// The digests of one level (0 = leaves).
    pub fn layer(&self, level: usize) -> Option<&[Digest]> {
        self.layers.get(level).map(Vec::as_slice)
    }

    pub fn depth(&self) -> usize {
        self.layers.len() - 1
    }
}

impl DeviceTree for CpuTree {
    fn root(&self) -> Digest {
        self.layers.last().and_then(|l| l.first()).copied().unwrap_or_default()
    }
    fn leaves(&self) -> usize {
        self.layers[0].len()
    }
    fn hash(&self) -> HashKind {
        self.hash
    }
}

/// Commits `m` (validated: non-empty, power-of-two height).
pub(crate) fn commit(m: &CpuMatrix, hash: HashKind) -> CpuTree {
    let (h, w) = (m.height, m.width);
    let data = m.data();
    let mut leaves = vec![[0u8; 32]; h];
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
    let mut layers = vec![leaves];
    while let Some(prev) = layers.last().filter(|l| l.len() > 1) {
        let next: Vec<Digest> = prev.par_chunks(2).with_min_len(128).map(|p| hash_node(hash, &p[0], &p[1])).collect();
        layers.push(next);
    }
    CpuTree { hash, layers }
}

/// Opens `rows` (validated: in range, tree built from `m`).
pub(crate) fn open(m: &CpuMatrix, tree: &CpuTree, rows: &[usize]) -> Vec<RowOpening> {
    rows.iter()
        .map(|&r| RowOpening {
            values: m.row(r),
            path: (0..tree.depth()).map(|l| tree.layers[l][(r >> l) ^ 1]).collect(),
        })
        .collect()
}
