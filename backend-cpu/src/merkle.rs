//! Merkle trees over matrix rows. The layers from level `FIRST_KEPT` (4) up
//! are kept for openings; the ones below are not (the leaves and the three
//! levels above hold 15/16 of a tree's digests), as an opening rehashes
//! the 16 rows around it from the committed matrix and rebuilds their
//! subtree.

use crate::{try_zeroed, AllocFailed, CpuMatrix};
use backend_api::hash::{hash_leaf, hash_node, subtree_path};
use backend_api::{DeviceTree, Digest, HashKind, RowOpening, F};
use rayon::prelude::*;

/// Rows gathered (transposed) together before hashing: the column-major
/// reads stay sequential and the row buffer stays in L1/L2.
const LEAF_ROWS: usize = 32;
/// Rows (or nodes) per task: a multiple of both lane counts (16-lane
/// BLAKE3, 8-lane Keccak) and of 2^FIRST_KEPT.
const SUBTREE_ROWS: usize = 256;

/// The lowest level a tree keeps (0, the leaves): the 2^FIRST_KEPT rows
/// below a kept digest are rehashed for an opening.
const FIRST_KEPT: usize = 4;

/// A Merkle tree: `layers[i]` are the digests of level `first + i`, where
/// `first` is [`FIRST_KEPT`] or, in a shallower tree, its root's level; the
/// last layer is the root alone.
#[derive(Clone, Debug)]
pub struct CpuTree {
    hash: HashKind,
    leaves: usize,
    first: usize,
    layers: Vec<Vec<Digest>>,
}

impl CpuTree {
    /// The digests of one level (0 = the leaves), if it is kept.
    pub fn layer(&self, level: usize) -> Option<&[Digest]> {
        self.layers.get(level.checked_sub(self.first)?).map(Vec::as_slice)
    }

    /// The lowest level kept.
    pub fn first_kept(&self) -> usize {
        self.first
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

/// Commits `m` (validated: non-empty, power-of-two height). The levels
/// below the first kept one are made a chunk of rows at a time and never
/// held whole: they are 15/16 of the tree, a transient of 32 bytes a row.
pub(crate) fn commit(m: &CpuMatrix, hash: HashKind) -> Result<CpuTree, AllocFailed> {
    let h = m.height;
    let first = FIRST_KEPT.min(h.trailing_zeros() as usize);
    let rows = SUBTREE_ROWS.min(h);
    let lanes = lanes(hash);
    let mut kept: Vec<Digest> = try_zeroed(h >> first)?;
    kept.par_chunks_mut(rows >> first).enumerate().for_each_init(
        || (Vec::new(), vec![Digest::default(); rows + rows / 2]),
        |(buf, level), (ci, out)| {
            let (level, next) = level.split_at_mut(rows);
            leaves_of(m, hash, lanes.as_ref(), ci * rows, level, buf);
            let mut len = rows;
            while len > out.len() {
                halve(&level[..len], &mut next[..len / 2], hash, lanes.as_ref());
                len /= 2;
                level[..len].copy_from_slice(&next[..len]);
            }
            out.copy_from_slice(&level[..len]);
        },
    );
    let layers = build_layers(kept, hash)?;
    Ok(CpuTree { hash, leaves: h, first, layers })
}

/// The digest of every row of `m`.
pub(crate) fn leaves(m: &CpuMatrix, hash: HashKind) -> Result<Vec<Digest>, AllocFailed> {
    let mut leaves: Vec<Digest> = try_zeroed(m.height)?;
    let lanes = lanes(hash);
    leaves
        .par_chunks_mut(SUBTREE_ROWS)
        .enumerate()
        .for_each_init(Vec::new, |buf, (ci, out)| leaves_of(m, hash, lanes.as_ref(), ci * SUBTREE_ROWS, out, buf));
    Ok(leaves)
}

/// The digests of rows r0..r0 + out.len() of `m` (`buf`: the scalar
/// path's rows, transposed `LEAF_ROWS` at a time).
fn leaves_of(m: &CpuMatrix, hash: HashKind, lanes: Option<&Lanes>, r0: usize, out: &mut [Digest], buf: &mut Vec<F>) {
    let (h, w) = (m.height, m.width);
    let data = m.data();
    if let Some(l) = lanes.filter(|l| (l.leaves_ok)(w, h) && out.len().is_multiple_of(l.lanes)) {
        return (l.leaves_into)(data, h, w, r0, out);
    }
    for (ci, out) in out.chunks_mut(LEAF_ROWS).enumerate() {
        let r0 = r0 + ci * LEAF_ROWS;
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
    }
}

/// `next[i]` = the node over `prev[2i]` and `prev[2i + 1]`.
fn halve(prev: &[Digest], next: &mut [Digest], hash: HashKind, lanes: Option<&Lanes>) {
    match lanes.filter(|l| next.len().is_multiple_of(l.lanes)) {
        Some(l) => (l.nodes_into)(prev, 0, next),
        None => next.iter_mut().zip(prev.chunks(2)).for_each(|(d, p)| *d = hash_node(hash, &p[0], &p[1])),
    }
}

/// The leaf layer and every layer above it, up to the root.
fn build_layers(leaves: Vec<Digest>, hash: HashKind) -> Result<Vec<Vec<Digest>>, AllocFailed> {
    let lanes = lanes(hash);
    let mut layers = vec![leaves];
    while let Some(prev) = layers.last().filter(|l| l.len() > 1) {
        if let Some(l) = lanes.as_ref().filter(|l| prev.len() >= 2 * l.lanes) {
            // prev.len() is a power of two, so every chunk is whole lanes.
            let mut next: Vec<Digest> = try_zeroed(prev.len() / 2)?;
            next.par_chunks_mut(SUBTREE_ROWS)
                .enumerate()
                .for_each(|(ci, out)| (l.nodes_into)(prev, ci * SUBTREE_ROWS, out));
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
/// digests below the tree's first kept level come from the subtree of the
/// 2^first rows around the row, rehashed from `m`.
pub(crate) fn open(m: &CpuMatrix, tree: &CpuTree, rows: &[usize]) -> Vec<RowOpening> {
    rows.par_iter()
        .map(|&r| {
            let base = (r >> tree.first) << tree.first;
            let leaves = (base..base + (1 << tree.first)).map(|i| hash_leaf(tree.hash, &m.row(i))).collect();
            let mut path = subtree_path(tree.hash, leaves, r - base);
            path.extend((tree.first..tree.depth()).map(|l| tree.layers[l - tree.first][(r >> l) ^ 1]));
            RowOpening { values: m.row(r), path }
        })
        .collect()
}
