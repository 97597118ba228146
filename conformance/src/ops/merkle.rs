//! Commitments, openings, leaf digests and fused upload-commits, against the reference.

use super::{same_host, Checker, CTX};
use crate::inputs::{rand_f, rand_matrix, rows_label, CaseRng};
use backend_api::hash::hash_leaf;
use backend_api::{Backend, BackendBase, ColMatrix, DeviceMatrix, DeviceTree, HashKind, MerkleOps, NttOps};
use backend_cpu::CpuMatrix;
use rand::Rng;

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

impl<B: Backend> Checker<'_, B> {
    /// `upload_commit` of `m`: the matrix uploaded, its extension, and the
    /// extension's root and openings, each against the reference.
    fn same_upload_commit(&self, m: &ColMatrix, lb: u32, hash: HashKind, r: &mut CaseRng) -> Result<(), String> {
        let shift = rand_f(r);
        let (g, lde, tree) = self.b.upload_commit(&CTX, m, lb, shift, hash).map_err(|e| e.to_string())?;
        same_host(&self.b.download(&CTX, &g).map_err(|e| e.to_string())?, m)?;
        let cm = self.cpu.coset_lde(&CTX, &CpuMatrix::from_host(m), lb, shift).map_err(|e| e.to_string())?;
        let host = self.b.download(&CTX, &lde).map_err(|e| e.to_string())?;
        same_host(&host, &cm.to_host())?;
        self.same_tree(&lde, &tree, &cm, hash, r)
    }

    fn same_commit(&self, g: &B::Matrix, cm: &CpuMatrix, hash: HashKind, r: &mut CaseRng) -> Result<(), String> {
        let gt = self.b.commit(&CTX, g, hash).map_err(|e| format!("commit: {e}"))?;
        self.same_tree(g, &gt, cm, hash, r)
    }

    /// `gt`, the backend's tree of `g`, against the reference's tree of
    /// `cm` (the same values): root, leaf count, hash and openings.
    fn same_tree(
        &self,
        g: &B::Matrix,
        gt: &B::Tree,
        cm: &CpuMatrix,
        hash: HashKind,
        r: &mut CaseRng,
    ) -> Result<(), String> {
        let ct = self.cpu.commit(&CTX, cm, hash).map_err(|e| format!("reference commit: {e}"))?;
        if gt.root() != ct.root() {
            return Err(format!("root {}, reference {}", hex(&gt.root()), hex(&ct.root())));
        }
        if gt.leaves() != ct.leaves() || gt.hash() != hash {
            return Err(format!(
                "tree reports {} leaves of {}, expected {} of {hash}",
                gt.leaves(),
                gt.hash(),
                ct.leaves()
            ));
        }
        let n = cm.height();
        let mut rows = vec![0, n - 1, 0];
        rows.extend((0..4).map(|_| r.gen_range(0..n)));
        let go = self.b.open(&CTX, g, gt, &rows).map_err(|e| format!("open: {e}"))?;
        let co = self.cpu.open(&CTX, cm, &ct, &rows).map_err(|e| format!("reference open: {e}"))?;
        if go.len() != co.len() {
            return Err(format!("{} openings for {} rows", go.len(), rows.len()));
        }
        for ((a, b), row) in go.iter().zip(&co).zip(&rows) {
            if a.values != b.values {
                return Err(format!("opening of row {row}: values differ"));
            }
            if a.path != b.path {
                return Err(format!("opening of row {row}: authentication path differs"));
            }
        }
        Ok(())
    }

    /// Leaf digests and gathered rows: each the host functions' bytes for
    /// some rows, and the reference backend's for every row.
    fn same_leaves_and_rows(&self, host: &ColMatrix, hash: HashKind, r: &mut CaseRng) -> Result<(), String> {
        let (g, cm) = self.up(host)?;
        let got = self.b.leaf_digests(&CTX, &g, hash).map_err(|e| format!("leaf_digests: {e}"))?;
        let want = self.cpu.leaf_digests(&CTX, &cm, hash).map_err(|e| format!("reference leaf_digests: {e}"))?;
        if got.len() != host.height() {
            return Err(format!("{} digests for {} rows", got.len(), host.height()));
        }
        let n = host.height();
        let mut rows = vec![0, n - 1, n / 2];
        rows.extend((0..5).map(|_| r.gen_range(0..n)));
        for &row in &rows {
            if want[row] != hash_leaf(hash, &host.row(row)) {
                return Err(format!("reference digest of row {row} is not the host hash"));
            }
        }
        if let Some(row) = got.iter().zip(&want).position(|(a, b)| a != b) {
            return Err(format!("digest of row {row}: {}, reference {}", hex(&got[row]), hex(&want[row])));
        }
        let values = self.b.rows(&CTX, &g, &rows).map_err(|e| format!("rows: {e}"))?;
        if values.len() != rows.len() {
            return Err(format!("{} rows gathered for {} asked", values.len(), rows.len()));
        }
        for (v, &row) in values.iter().zip(&rows) {
            if *v != host.row(row) {
                return Err(format!("row {row}: values differ"));
            }
        }
        Ok(())
    }

    pub fn merkle(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            for hash in HashKind::ALL {
                self.case(format!("commit+open {hash}"), rows_label(rows), w.to_string(), |c, r| {
                    let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                    c.same_commit(&g, &cm, hash, r)
                });
                self.case(format!("leaf_digests+rows {hash}"), rows_label(rows), w.to_string(), |c, r| {
                    c.same_leaves_and_rows(&rand_matrix(r, w, rows), hash, r)
                });
                let mut lb = 1 + log % 3;
                while lb > 0 && (w << (log + lb)) > self.lde_cap() {
                    lb -= 1;
                }
                self.case(format!("upload_commit {hash} x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                    c.same_upload_commit(&rand_matrix(r, w, rows), lb, hash, r)
                });
                if rows >= 4 {
                    // FRI layers commit rows of a reshaped matrix.
                    self.case(format!("commit+open {hash} reshaped /4"), rows_label(rows), w.to_string(), |c, r| {
                        let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                        let g = c.b.reshape(&CTX, &g, rows / 4).map_err(|e| format!("reshape: {e}"))?;
                        let cm = c.cpu.reshape(&CTX, &cm, rows / 4).map_err(|e| e.to_string())?;
                        c.same_commit(&g, &cm, hash, r)
                    });
                }
            }
        }
    }

    /// `upload_commit` at widths that end a row's leaf inside, at and just
    /// past a hash block (8 elements for BLAKE3, 17 for Keccak-256's rate)
    /// and past BLAKE3's 128-element chunk.
    pub fn upload_commit_blocks(&mut self) {
        let log = self.cfg.max_log.min(10);
        for w in [8, 9, 16, 17, 18, 34, 35, 129] {
            if (w << (log + 2)) > self.lde_cap() {
                continue;
            }
            for hash in HashKind::ALL {
                self.case(format!("upload_commit {hash} x4"), rows_label(1 << log), w.to_string(), |c, r| {
                    c.same_upload_commit(&rand_matrix(r, w, 1 << log), 2, hash, r)
                });
            }
        }
    }
}
