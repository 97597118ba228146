//! `MerkleOps`: row-hash trees (BLAKE3, Keccak-256) and openings.

use crate::stream::Scope;
use crate::{digest_bytes, level_offsets, CudaBackend, CudaMatrix, CudaTree, DevBuf};
use backend_api::memory::{stage_alloc, stage_bytes, tree_bytes};
use backend_api::{validate, ColMatrix, Ctx, Digest, HashKind, MerkleOps, NttOps, Result, RowOpening, Stage, F};
use rayon::prelude::*;
use std::sync::{Arc, Mutex, OnceLock};

impl MerkleOps for CudaBackend {
    fn commit(&self, ctx: &Ctx, m: &CudaMatrix, hash: HashKind) -> Result<CudaTree> {
        let stage = Stage::MerkleCommit;
        validate::commit(m)?;
        let _permit = self.admit(stage, ctx, Self::dims(m.height.trailing_zeros(), 0, m.width))?;
        let mut s = self.scope(stage, ctx)?;
        let digests = s.alloc((2 * m.height - 1) * 4)?;
        Self::hash_leaves(&mut s, m, hash, &digests)?;
        Self::tree_over_leaves(&mut s, digests, m.height, hash)
    }

    fn upload_commit(
        &self,
        ctx: &Ctx,
        evals: &ColMatrix,
        log_blowup: u32,
        shift: F,
        hash: HashKind,
    ) -> Result<(CudaMatrix, CudaMatrix, CudaTree)> {
        if !self.leaves_under_upload {
            let (m, lde) = self.upload_coset_lde(ctx, evals, log_blowup, shift)?;
            let tree = self.commit(ctx, &lde, hash)?;
            return Ok((m, lde, tree));
        }
        let stage = Stage::CosetLde;
        let log_n = validate::upload_commit(evals, log_blowup, shift)?;
        let (big, w) = (evals.height() << log_blowup, evals.width());
        let leaves = LeafBlocks::new(hash, w);
        // The extension, its tree and the rows' leaf states at once; in a
        // claim the tree is an output like the extension, the states
        // scratch like the inverse transform's.
        let (d, states) = (Self::dims(log_n, log_blowup, w), leaves.state_bytes(big));
        let (scratch, loose) =
            (stage_alloc(stage, &d).scratch + states, stage_bytes(stage, &d) + tree_bytes(big as u64) + states);
        let _permit = self.admit_with(stage, ctx, scratch, loose)?;
        let mut s = self.scope(stage, ctx)?;
        let digests = s.alloc((2 * big - 1) * 4)?;
        let state = match states {
            0 => digests.clone(),
            bytes => s.alloc(bytes as usize / 8)?,
        };
        let mut hashed = 0;
        let (m, lde) = self.upload_extend(&mut s, evals, log_blowup, shift, |s, lde, columns| {
            let ready = leaves.ready(columns);
            if ready > hashed {
                leaves.absorb(s, lde, big, (hashed, ready), &state, &digests)?;
                hashed = ready;
            }
            Ok(())
        })?;
        leaves.finish(&mut s, big, &state, &digests)?;
        let tree = Self::tree_over_leaves(&mut s, digests, big, hash)?;
        Ok((m, lde, tree))
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
        let mut got = Self::gather_all(&mut s, &[(&m.buf, &vidx), (&tree.digests, &pidx)])?.into_iter();
        let (values, path) = (got.next().unwrap_or_default(), got.next().unwrap_or_default());
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
    /// The levels above the `n` leaf digests at the start of `digests`
    /// (room for the whole tree), up to the root: a launch a level while
    /// levels are large, then subtrees of `SUBTREE_LEVELS` levels a block,
    /// then the top in one block.
    fn tree_over_leaves(s: &mut Scope, digests: Arc<DevBuf>, n: usize, hash: HashKind) -> Result<CudaTree> {
        let dev = s.dev.clone();
        let (node_k, levels_k) = match hash {
            HashKind::Blake3 => ("blake3_nodes", "blake3_levels"),
            HashKind::Keccak256 => ("keccak_nodes", "keccak_levels"),
        };
        let threads = 128;
        let offs = level_offsets(n);
        let (mut l, mut count) = (0, n);
        while count > 1 {
            if count > SUBTREES_FROM {
                let (src, dst, parents) = (digests.at(4 * offs[l]), digests.at(4 * offs[l + 1]), count / 2);
                let grid = Self::grid(parents as u64, threads);
                s.launch(dev.func(node_k), grid, threads, 0, &[src, dst, parents as u64], &[&digests])?;
                (l, count) = (l + 1, parents);
                continue;
            }
            let levels = match count <= 2 * threads as usize {
                true => count.trailing_zeros(),
                false => SUBTREE_LEVELS,
            };
            let blocks = (count >> levels) as u32;
            let args = [digests.ptr, offs[l] as u64, count as u64, levels as u64];
            s.launch(dev.func(levels_k), (blocks, 1, 1), threads, 0, &args, &[&digests])?;
            (l, count) = (l + levels as usize, count >> levels);
        }
        // The root reaches the host when the transcript asks for it; with
        // every pinned slot in flight, now.
        let root_at = 4 * (2 * n - 2);
        let (root, pending) = match s.root_copy(&digests, root_at)? {
            Some(p) => (OnceLock::new(), Some(p)),
            None => (OnceLock::from(digest_bytes(&Self::download_u64(s, &digests, root_at, 4)?)), None),
        };
        Ok(CudaTree { digests, root, pending: Mutex::new(pending), leaves: n, hash })
    }

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

/// Tree levels of at most this many digests are built a subtree a block
/// (`*_levels`), SUBTREE_LEVELS levels a launch: each level above them is
/// a few microseconds of hashing, less than a launch costs.
const SUBTREES_FROM: usize = 1 << 16;
const SUBTREE_LEVELS: u32 = 8;

/// Rows' leaves hashed a block of columns at a time, as the columns are
/// made (`blake3_leaf_blocks`, `keccak_leaf_blocks`): the digests equal
/// `hash_leaves`'s.
struct LeafBlocks {
    hash: HashKind,
    width: usize,
}

impl LeafBlocks {
    fn new(hash: HashKind, width: usize) -> LeafBlocks {
        LeafBlocks { hash, width }
    }

    /// Elements a block absorbs: BLAKE3's 64-byte block, Keccak-256's rate.
    fn block(&self) -> usize {
        match self.hash {
            HashKind::Blake3 => 8,
            HashKind::Keccak256 => 17,
        }
    }

    /// Blocks of a row; Keccak's last holds the padding, after 0 to 16
    /// elements.
    fn blocks(&self) -> usize {
        match self.hash {
            HashKind::Blake3 => self.width.div_ceil(8),
            HashKind::Keccak256 => self.width / 17 + 1,
        }
    }

    /// Blocks whose elements all lie in the first `columns` columns.
    fn ready(&self, columns: usize) -> usize {
        match columns >= self.width {
            true => self.blocks(),
            false => columns / self.block(),
        }
    }

    /// Device bytes the rows' states take between blocks, besides their
    /// digests (where a row of one BLAKE3 chunk keeps its chaining value).
    fn state_bytes(&self, rows: usize) -> u64 {
        let chunks = self.width.div_ceil(128) as u64;
        match self.hash {
            HashKind::Blake3 if chunks == 1 => 0,
            HashKind::Blake3 => 32 * chunks * rows as u64,
            HashKind::Keccak256 => 200 * rows as u64,
        }
    }

    /// Every row of `lde` (`rows` of them) absorbs blocks [b0, b1).
    fn absorb(
        &self,
        s: &mut Scope,
        lde: &Arc<DevBuf>,
        rows: usize,
        (b0, b1): (usize, usize),
        state: &Arc<DevBuf>,
        digests: &Arc<DevBuf>,
    ) -> Result<()> {
        let (threads, dev) = (128, s.dev.clone());
        let grid = CudaBackend::grid(rows as u64, threads);
        let args = [lde.ptr, rows as u64, self.width as u64, b0 as u64, b1 as u64, state.ptr, digests.ptr];
        match self.hash {
            HashKind::Blake3 => s.launch(dev.func("blake3_leaf_blocks"), grid, threads, 0, &args[..6], &[lde, state]),
            HashKind::Keccak256 => {
                s.launch(dev.func("keccak_leaf_blocks"), grid, threads, 0, &args, &[lde, state, digests])
            }
        }
    }

    /// Once every block is absorbed: rows of several BLAKE3 chunks join
    /// their chunks' chaining values into their digests.
    fn finish(&self, s: &mut Scope, rows: usize, state: &Arc<DevBuf>, digests: &Arc<DevBuf>) -> Result<()> {
        if self.hash != HashKind::Blake3 || self.width <= 128 {
            return Ok(());
        }
        let (threads, dev) = (128, s.dev.clone());
        let args = [state.ptr, rows as u64, self.width as u64, digests.ptr];
        s.launch(
            dev.func("blake3_leaf_merge"),
            CudaBackend::grid(rows as u64, threads),
            threads,
            0,
            &args,
            &[state, digests],
        )
    }
}
