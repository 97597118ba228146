//! `MerkleOps`: row-hash trees (BLAKE3, Keccak-256) and openings.

use crate::stream::Scope;
use crate::{digest_bytes, level_offsets, CudaBackend, CudaMatrix, CudaTree, DevBuf};
use backend_api::{validate, Ctx, Digest, HashKind, MerkleOps, Result, RowOpening, Stage, F};
use rayon::prelude::*;
use std::sync::{Arc, Mutex, OnceLock};

impl MerkleOps for CudaBackend {
    fn commit(&self, ctx: &Ctx, m: &CudaMatrix, hash: HashKind) -> Result<CudaTree> {
        let stage = Stage::MerkleCommit;
        validate::commit(m)?;
        let _permit = self.admit(stage, ctx, Self::dims(m.height.trailing_zeros(), 0, m.width))?;
        let mut s = self.scope(stage, ctx)?;
        let n = m.height;
        let dev = self.dev.clone();
        let digests = s.alloc((2 * n - 1) * 4)?;
        let (node_k, top_k) = match hash {
            HashKind::Blake3 => ("blake3_nodes", "blake3_top"),
            HashKind::Keccak256 => ("keccak_nodes", "keccak_top"),
        };
        let threads = 128;
        Self::hash_leaves(&mut s, m, hash, &digests)?;
        let offs = level_offsets(n);
        let mut count = n / 2;
        for l in 1..offs.len() {
            if count <= threads as usize {
                // This level and every one above it in one block.
                let args = [digests.ptr, offs[l - 1] as u64, 2 * count as u64];
                s.launch(dev.func(top_k), (1, 1, 1), threads, 0, &args, &[&digests])?;
                break;
            }
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

    fn leaf_digests(&self, ctx: &Ctx, m: &CudaMatrix, hash: HashKind) -> Result<Vec<Digest>> {
        let stage = Stage::MerkleCommit;
        validate::leaf_digests(m)?;
        let _permit = self.admit(stage, ctx, Self::dims(m.height.trailing_zeros(), 0, m.width))?;
        let mut s = self.scope(stage, ctx)?;
        let digests = s.alloc(m.height * 4)?;
        Self::hash_leaves(&mut s, m, hash, &digests)?;
        // GiB-sized for tall matrices: huge pages, converted in parallel.
        let alloc = |e: backend_api::host::AllocFailed| e.at(stage, ctx);
        let mut words: Vec<u64> = backend_api::host::try_zeroed(m.height * 4).map_err(alloc)?;
        s.dtoh(&digests, 0, &mut words)?;
        let mut out: Vec<Digest> = backend_api::host::try_zeroed(m.height).map_err(alloc)?;
        out.par_iter_mut().zip(words.par_chunks_exact(4)).with_min_len(1 << 12).for_each(|(d, w)| *d = digest_bytes(w));
        Ok(out)
    }

    fn rows(&self, ctx: &Ctx, m: &CudaMatrix, rows: &[usize]) -> Result<Vec<Vec<F>>> {
        validate::rows(m, rows)?;
        let (h, w) = (m.height, m.width);
        let idx: Vec<u64> = rows.iter().flat_map(|&r| (0..w).map(move |c| (c * h + r) as u64)).collect();
        let mut s = self.scope(Stage::MerkleOpen, ctx)?;
        let values = Self::gather(&mut s, &m.buf, &idx)?;
        Ok(values.chunks(w.max(1)).map(|r| r.iter().map(|&v| F::new(v)).collect()).collect())
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

impl CudaBackend {
    /// The digest of every row of `m` into the first `4 * height` words of `out`.
    fn hash_leaves(s: &mut Scope, m: &CudaMatrix, hash: HashKind, out: &Arc<DevBuf>) -> Result<()> {
        let kernel = match hash {
            HashKind::Blake3 => "blake3_leaves",
            HashKind::Keccak256 => "keccak_leaves",
        };
        let (threads, dev) = (128, s.dev.clone());
        let args = [m.buf.ptr, m.height as u64, m.width as u64, out.ptr];
        s.launch(dev.func(kernel), Self::grid(m.height as u64, threads), threads, 0, &args, &[&m.buf, out])
    }
}
