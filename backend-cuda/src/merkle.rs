//! `MerkleOps`: row-hash trees (BLAKE3, Keccak-256) and openings.

use crate::{digest_bytes, level_offsets, CudaBackend, CudaMatrix, CudaTree};
use backend_api::{validate, Ctx, HashKind, MerkleOps, Result, RowOpening, Stage, F};
use std::sync::{Mutex, OnceLock};

impl MerkleOps for CudaBackend {
    fn commit(&self, ctx: &Ctx, m: &CudaMatrix, hash: HashKind) -> Result<CudaTree> {
        let stage = Stage::MerkleCommit;
        validate::commit(m)?;
        let _permit = self.admit(stage, ctx, Self::dims(m.height.trailing_zeros(), 0, m.width))?;
        let mut s = self.scope(stage, ctx)?;
        let n = m.height;
        let dev = self.dev.clone();
        let digests = s.alloc((2 * n - 1) * 4)?;
        let (leaf_k, node_k) = match hash {
            HashKind::Blake3 => ("blake3_leaves", "blake3_nodes"),
            HashKind::Keccak256 => ("keccak_leaves", "keccak_nodes"),
        };
        let threads = 128;
        let args = [m.buf.ptr, n as u64, m.width as u64, digests.ptr];
        s.launch(dev.func(leaf_k), Self::grid(n as u64, threads), threads, 0, &args, &[&m.buf, &digests])?;
        let offs = level_offsets(n);
        let mut count = n / 2;
        for l in 1..offs.len() {
            let src = digests.at(4 * offs[l - 1]);
            let dst = digests.at(4 * offs[l]);
            let grid = Self::grid(count as u64, threads);
            s.launch(dev.func(node_k), grid, threads, 0, &[src, dst, count as u64], &[&digests])?;
            count /= 2;
        }
        // The root reaches the host when the transcript asks for it; with
        // every pinned slot in flight, now.
        let root_at = 4 * (2 * n - 2);
        let (root, pending) = match s.root_copy(&digests, root_at)? {
            Some(p) => (OnceLock::new(), Some(p)),
            None => (OnceLock::from(digest_bytes(&Self::download_u64(&mut s, &digests, root_at, 4)?)), None),
        };
        Ok(CudaTree { digests, root, pending: Mutex::new(pending), leaves: n, hash })
    }

    fn open(&self, ctx: &Ctx, m: &CudaMatrix, tree: &CudaTree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        let stage = Stage::MerkleOpen;
        validate::open(m, tree, rows)?;
        if rows.is_empty() {
            return Ok(vec![]);
        }
        let (h, w) = (m.height, m.width);
        let offs = level_offsets(tree.leaves);
        let depth = offs.len() - 1;
        let mut vidx = Vec::with_capacity(rows.len() * w);
        let mut pidx = Vec::with_capacity(rows.len() * depth * 4);
        for &r in rows {
            vidx.extend((0..w).map(|c| (c * h + r) as u64));
            for (l, off) in offs.iter().take(depth).enumerate() {
                let sib = (r >> l) ^ 1;
                pidx.extend((0..4).map(|k| (4 * (off + sib) + k) as u64));
            }
        }
        let mut s = self.scope(stage, ctx)?;
        let values = Self::gather(&mut s, &m.buf, &vidx)?;
        let path = Self::gather(&mut s, &tree.digests, &pidx)?;
        Ok(rows
            .iter()
            .enumerate()
            .map(|(k, _)| RowOpening {
                values: values[k * w..(k + 1) * w].iter().map(|&v| F::new(v)).collect(),
                path: (0..depth).map(|l| digest_bytes(&path[(k * depth + l) * 4..])).collect(),
            })
            .collect())
    }
}
