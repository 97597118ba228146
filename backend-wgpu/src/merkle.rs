//! Merkle commitments and openings: leaf digests read each row across all
//! the buffers of its matrix, then one dispatch per level of inner nodes
//! while a level has more than `TOP` nodes, each in its own buffer, and
//! one workgroup for the levels above; only the root comes back to the
//! host.
//! Openings gather the rows' values and the paths on the device and read
//! them back in one transfer.

use crate::device::{groups_for, Kernel};
use crate::shader;
use crate::{WgpuBackend, WgpuMatrix, WgpuTree};
use backend_api::{validate, Ctx, Digest, HashKind, Result, RowOpening, Stage, F};
use std::sync::Arc;

const PARENT: &str = include_str!("shaders/parent.wgsl");
const NODES: &str = include_str!("shaders/nodes.wgsl");
const TOP: &str = include_str!("shaders/top.wgsl");
/// Most nodes of a level computed by the top's single workgroup.
const TOP_NODES: usize = 256;
const GATHER: &str = include_str!("shaders/gather.wgsl");

fn hash_code(hash: HashKind) -> u32 {
    match hash {
        HashKind::Blake3 => 0,
        HashKind::Keccak256 => 1,
    }
}

fn digest_bytes(d: &[u64]) -> Digest {
    let mut out = [0u8; 32];
    for (k, w) in d.iter().take(4).enumerate() {
        out[8 * k..8 * k + 8].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// The kernel's source with the hash libraries in front.
fn with_hashes(body: &str) -> String {
    format!("{}\n{}\n{body}", shader::BLAKE3, shader::KECCAK)
}

// The kernels, made per buffer count and per adapter.
impl WgpuBackend {
    fn leaf_kernel(&self, stage: Stage, ctx: &Ctx, buffers: usize) -> Result<Arc<Kernel>> {
        let nb = buffers as u32;
        let body = with_hashes(shader::MERKLE)
            .replace("// READER\n", &shader::reader("m", 0, nb))
            .replace("@binding(OUT)", &format!("@binding({nb})"));
        let mut writable = vec![false; buffers];
        writable.push(true);
        self.dev.kernel(stage, ctx, "leaves", &shader::kernel(self.dev.int64, &body, 1), &writable)
    }

    /// Sources one gather dispatch binds (the adapter's storage bindings
    /// less the indices and the output, at most 30).
    fn gather_sources(&self) -> usize {
        (self.dev.storage_per_stage as usize).saturating_sub(2).clamp(1, 30)
    }

    fn gather_kernel(&self, stage: Stage, ctx: &Ctx) -> Result<Arc<Kernel>> {
        let n = self.gather_sources();
        let mut bindings = String::new();
        let mut cases = String::new();
        for b in 0..n {
            bindings += &format!("@group(0) @binding({b}) var<storage, read> src{b}: array<vec2<u32>>;\n");
            cases += &format!("        case {b}u: {{ return src{b}[i]; }}\n");
        }
        let body = GATHER
            .replace("// SOURCE BINDINGS\n", &bindings)
            .replace("        // SOURCE CASES\n", &cases)
            .replace("SOURCES", &n.to_string())
            .replace("OUT", &(n + 1).to_string());
        let mut writable = vec![false; n + 1];
        writable.push(true);
        self.dev.kernel(stage, ctx, "gather", &shader::kernel(self.dev.int64, &body, 1), &writable)
    }
}

// Commitments and leaf digests.
impl WgpuBackend {
    pub(crate) fn merkle_commit(&self, ctx: &Ctx, m: &WgpuMatrix, hash: HashKind) -> Result<WgpuTree> {
        let stage = Stage::MerkleCommit;
        let _permit = self.admit_leaves(ctx, m)?;
        let n = m.height;
        let leaf = self.leaf_kernel(stage, ctx, m.bufs.len())?;
        let parents = |label, main| {
            let src = shader::kernel(self.dev.int64, &with_hashes(&format!("{PARENT}\n{main}")), 1);
            self.dev.kernel(stage, ctx, label, &src, &[false, true])
        };
        let (nodes, top_kernel) = (parents("nodes", NODES)?, parents("top", TOP)?);
        let mut levels = vec![self.dev.alloc_uninit(stage, ctx, 32 * n as u64)?];
        while (n >> levels.len()) > TOP_NODES {
            levels.push(self.dev.alloc_uninit(stage, ctx, 32 * (n >> levels.len()) as u64)?);
        }
        // Levels from `levels.len()` to the root: 2 * their first's nodes - 1.
        let top_count = n >> levels.len();
        let top = match top_count {
            0 => None,
            c => Some(self.dev.alloc_uninit(stage, ctx, 32 * (2 * c - 1) as u64)?),
        };
        let h = hash_code(hash);
        let mut job = self.dev.job(stage, ctx);
        let mut bufs: Vec<&wgpu::Buffer> = m.buffers().collect();
        bufs.push(&levels[0]);
        job.dispatch(&leaf, &bufs, &[n as u32, m.cpb as u32, m.width as u32, h], groups_for(n as u64))?;
        for l in 1..levels.len() {
            let count = (n >> l) as u64;
            job.dispatch(&nodes, &[&levels[l - 1], &levels[l]], &[count as u32, h], groups_for(count))?;
        }
        if let Some(t) = &top {
            let below = levels.last().expect("the leaves");
            job.dispatch(&top_kernel, &[below, t], &[top_count as u32, h], (1, 1, 1))?;
        }
        job.submit()?;
        let tree = WgpuTree { levels, top, root: [0; 32], leaves: n, hash };
        let (buf, at) = tree.level(n.trailing_zeros() as usize);
        let root = self.dev.read(stage, ctx, &[(buf, at, 4)])?;
        Ok(WgpuTree { root: digest_bytes(&root), ..tree })
    }

    pub(crate) fn merkle_leaf_digests(&self, ctx: &Ctx, m: &WgpuMatrix, hash: HashKind) -> Result<Vec<Digest>> {
        let stage = Stage::MerkleCommit;
        let _permit = self.admit_leaves(ctx, m)?;
        let n = m.height;
        let leaf = self.leaf_kernel(stage, ctx, m.bufs.len())?;
        let out = self.dev.alloc_uninit(stage, ctx, 32 * n as u64)?;
        let mut job = self.dev.job(stage, ctx);
        let mut bufs: Vec<&wgpu::Buffer> = m.buffers().collect();
        bufs.push(&out);
        job.dispatch(&leaf, &bufs, &[n as u32, m.cpb as u32, m.width as u32, hash_code(hash)], groups_for(n as u64))?;
        job.submit()?;
        let words = self.dev.read(stage, ctx, &[(&out, 0, 4 * n as u64)])?;
        Ok(words.chunks_exact(4).map(digest_bytes).collect())
    }

    /// Checks a matrix whose rows are to be hashed and admits the work.
    fn admit_leaves(&self, ctx: &Ctx, m: &WgpuMatrix) -> Result<backend_api::gate::Permit> {
        let stage = Stage::MerkleCommit;
        let log_n = validate::commit(m)?;
        let permit = self.admit(stage, ctx, Self::dims(log_n, 0, m.width))?;
        if m.bufs.len() + 1 > self.dev.storage_per_stage as usize {
            return Err(self.dev.decline(
                stage,
                ctx,
                (8 * m.width * m.height) as u64,
                format!(
                    "{} buffers exceed the adapter's {} storage bindings",
                    m.bufs.len(),
                    self.dev.storage_per_stage
                ),
            ));
        }
        Ok(permit)
    }
}

// Openings and row reads: a gather per batch of rows.
impl WgpuBackend {
    pub(crate) fn merkle_open(
        &self,
        ctx: &Ctx,
        m: &WgpuMatrix,
        tree: &WgpuTree,
        rows: &[usize],
    ) -> Result<Vec<RowOpening>> {
        validate::open(m, tree, rows)?;
        let levels: Vec<(&wgpu::Buffer, u64)> =
            (0..tree.leaves.trailing_zeros() as usize).map(|l| tree.level(l)).collect();
        self.gather_rows(ctx, m, rows, &levels)
    }

    pub(crate) fn merkle_rows(&self, ctx: &Ctx, m: &WgpuMatrix, rows: &[usize]) -> Result<Vec<Vec<F>>> {
        validate::rows(m, rows)?;
        Ok(self.gather_rows(ctx, m, rows, &[])?.into_iter().map(|o| o.values).collect())
    }

    /// The values of `rows` of `m` and, for each tree level in `levels`
    /// (leaves first), the sibling of the row's node: a gather job per
    /// batch of rows whose output fits one binding.
    fn gather_rows(
        &self,
        ctx: &Ctx,
        m: &WgpuMatrix,
        rows: &[usize],
        levels: &[(&wgpu::Buffer, u64)],
    ) -> Result<Vec<RowOpening>> {
        let row_bytes = 8 * (m.width + 4 * levels.len()) as u64;
        let batch = (self.dev.max_binding / row_bytes.max(1)).max(1) as usize;
        let mut out = Vec::with_capacity(rows.len());
        for part in rows.chunks(batch) {
            out.extend(self.gather_batch(ctx, m, part, levels)?);
        }
        Ok(out)
    }

    fn gather_batch(
        &self,
        ctx: &Ctx,
        m: &WgpuMatrix,
        rows: &[usize],
        levels: &[(&wgpu::Buffer, u64)],
    ) -> Result<Vec<RowOpening>> {
        let stage = Stage::MerkleOpen;
        if rows.is_empty() {
            return Ok(vec![]);
        }
        let sources = gather_indices(m, rows, levels);
        let total: usize = sources.iter().map(|s| s.1.len()).sum();
        let out = self.dev.alloc_uninit(stage, ctx, 8 * total as u64)?;
        let k = self.gather_kernel(stage, ctx)?;
        let per = self.gather_sources();
        let (packed, calls) = pack_gathers(&sources, per, total);
        let ib = self.upload_u64(stage, ctx, &packed)?;
        let mut job = self.dev.job(stage, ctx);
        for (group, first, at, count) in calls {
            let mut bufs: Vec<&wgpu::Buffer> = group.iter().map(|s| s.0).collect();
            bufs.resize(per, &self.dev.dummy);
            bufs.extend([&*ib, &*out]);
            let pc = [count as u32, at as u32, group.len() as u32, first as u32];
            job.dispatch(&k, &bufs, &pc, groups_for(count as u64))?;
        }
        job.submit()?;
        let v = self.dev.read(stage, ctx, &[(&out, 0, total as u64)])?;
        Ok(unpack_openings(m, rows.len(), levels.len(), &v))
    }
}

/// A gather source: a buffer and the word indices read from it.
type Source<'a> = (&'a wgpu::Buffer, Vec<u32>);

/// Word indices per source buffer, in output order: values row by row,
/// then each row's path.
fn gather_indices<'a>(m: &'a WgpuMatrix, rows: &[usize], levels: &[(&'a wgpu::Buffer, u64)]) -> Vec<Source<'a>> {
    let h = m.height;
    let mut sources: Vec<Source<'a>> = Vec::new();
    for (buf, _, cols) in m.pieces() {
        let mut idx = Vec::with_capacity(rows.len() * cols);
        for &r in rows {
            idx.extend((0..cols).map(|c| (c * h + r) as u32));
        }
        sources.push((buf, idx));
    }
    for (l, &(level, at)) in levels.iter().enumerate() {
        let idx: Vec<u32> =
            rows.iter().flat_map(|&r| (0..4).map(move |k| (at as usize + 4 * ((r >> l) ^ 1) + k) as u32)).collect();
        sources.push((level, idx));
    }
    sources
}

/// One gather dispatch: its sources, its first word in the index upload,
/// its first output word, and its output words.
type Call<'s, 'a> = (&'s [Source<'a>], usize, usize, usize);

/// Per dispatch of up to `per` sources: their segment starts, then their
/// indices; all of it one upload (two words a u64), with the dispatches.
fn pack_gathers<'s, 'a>(sources: &'s [Source<'a>], per: usize, total: usize) -> (Vec<u64>, Vec<Call<'s, 'a>>) {
    let mut words: Vec<u32> = Vec::with_capacity(total + sources.len().div_ceil(per) * (per + 1));
    let mut calls = Vec::new();
    let mut at = 0usize;
    for group in sources.chunks(per) {
        let first = words.len();
        let mut start = 0u32;
        for (_, idx) in group {
            words.push(start);
            start += idx.len() as u32;
        }
        words.resize(first + per + 1, start);
        for (_, idx) in group {
            words.extend(idx);
        }
        calls.push((group, first, at, start as usize));
        at += start as usize;
    }
    let packed: Vec<u64> =
        words.chunks(2).map(|p| p[0] as u64 | (p.get(1).copied().unwrap_or(0) as u64) << 32).collect();
    (packed, calls)
}

/// The openings in a gather's output `v`: per buffer piece, rows x cols
/// values; then per level, rows x 4 words.
fn unpack_openings(m: &WgpuMatrix, rows: usize, depth: usize, v: &[u64]) -> Vec<RowOpening> {
    let mut values = vec![vec![F::ZERO; m.width]; rows];
    let mut pos = 0;
    for (_, first, cols) in m.pieces() {
        for row in values.iter_mut() {
            for c in 0..cols {
                row[first + c] = F::new(v[pos]);
                pos += 1;
            }
        }
    }
    let mut paths = vec![Vec::with_capacity(depth); rows];
    for _ in 0..depth {
        for p in paths.iter_mut() {
            p.push(digest_bytes(&v[pos..pos + 4]));
            pos += 4;
        }
    }
    values.into_iter().zip(paths).map(|(values, path)| RowOpening { values, path }).collect()
}
