//! `MerkleOps`: row-hash trees (BLAKE3, Keccak-256) and openings.

use crate::{digest_bytes, level_offsets, CudaBackend, CudaMatrix, CudaTree};
use backend_api::{validate, Ctx, HashKind, MerkleOps, Result, RowOpening, Stage, F};
use std::sync::Arc;

impl MerkleOps for CudaBackend {
    fn commit(&self, ctx: &Ctx, m: &CudaMatrix, hash: HashKind) -> Result<CudaTree> {
        let stage = Stage::MerkleCommit;
        validate::commit(m)?;
        let _permit = self.admit(stage, ctx, Self::dims(m.height.trailing_zeros(), 0, m.width))?;
        let n = m.height;
        let dev = &self.dev;
        let digests = dev.alloc(stage, ctx, (2 * n - 1) * 4)?;
        let (leaf_k, node_k) = match hash {
            HashKind::Blake3 => ("blake3_leaves", "blake3_nodes"),
            HashKind::Keccak256 => ("keccak_leaves", "keccak_nodes"),
        };
        let threads = 128;
        dev.launch(
            stage,
            ctx,
            dev.func(leaf_k),
            Self::grid(n as u64, threads),
            threads,
            0,
            &[m.ptr(), n as u64, m.width as u64, digests.ptr],
        )?;
        let offs = level_offsets(n);
        let mut count = n / 2;
        for l in 1..offs.len() {
            let src = digests.at(4 * offs[l - 1]);
            let dst = digests.at(4 * offs[l]);
            dev.launch(
                stage,
                ctx,
                dev.func(node_k),
                Self::grid(count as u64, threads),
                threads,
                0,
                &[src, dst, count as u64],
            )?;
            count /= 2;
        }
        let root = self.download_u64(stage, ctx, digests.at(4 * (2 * n - 2)), 4)?;
        Ok(CudaTree { digests: Arc::new(digests), root: digest_bytes(&root), leaves: n, hash })
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
        let values = self.gather(stage, ctx, m.ptr(), &vidx)?;
        let path = self.gather(stage, ctx, tree.digests.ptr, &pidx)?;
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
